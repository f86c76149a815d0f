// ampc's mixed-precision flags: --precision, --policy, --target, --emit=autocast-ir |
// precision-report | dot, --explain, --precision-override.
//
// The transformer in bf16: linear layers and matmuls in bf16 (a linear's bias is cast too, so
// its output stays bf16: gelu runs in bf16); softmax, layer_norm, the residual adds and the loss
// in f32; the function signature unchanged; each weight cast once.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --precision=bf16 --emit=autocast-ir | FileCheck %s --check-prefix=TLM-CHECK
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --precision=bf16 --emit=precision-report | FileCheck %s --check-prefix=REPORT-CHECK
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --precision=bf16 --emit=precision-report --report-json | FileCheck %s --check-prefix=JSON-CHECK
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --precision=bf16 --explain=transformer_lm.mlir:55 | FileCheck %s --check-prefix=EXPLAIN-CHECK
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --precision=bf16 --policy=tensorflow --emit=dot | FileCheck %s --check-prefix=DOT-CHECK
// RUN: not ampc %amp_src_root/examples/mlp.mlir --explain=nothing.here 2>&1 | FileCheck %s --check-prefix=NOMATCH-CHECK
//
// auto: the target decides (and is recorded on the module); f32 turns autocast off.
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=auto --target=cuda:sm_75 --emit=autocast-ir | FileCheck %s --check-prefix=SM75-CHECK
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=auto --target=cuda:sm_90 --emit=autocast-ir | FileCheck %s --check-prefix=SM90-CHECK
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=f32 --emit=autocast-ir | FileCheck %s --check-prefix=F32-CHECK
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=bf16 --precision-override=op:amp.linear=f32 --emit=precision-report | FileCheck %s --check-prefix=OVERRIDE-CHECK
// RUN: not ampc %amp_src_root/examples/mlp.mlir --precision=bf16 --policy=%t.missing.json --emit=autocast-ir 2>&1 | FileCheck %s --check-prefix=NOPOLICY-CHECK
// --emit=ir is unchanged: no autocast.
// RUN: ampc %amp_src_root/examples/mlp.mlir --emit=ir | FileCheck %s --check-prefix=IR-CHECK

// TLM-CHECK: module attributes {amp.precision = "bf16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=bf16">, amp.target = "cpu"}
// TLM-CHECK: func.func @transformer_lm({{.*}}) -> (tensor<f32> {amp.name = "loss"}, tensor<256x64xf32> {amp.name = "logits"})
// TLM-CHECK: amp.layer_norm {{.*}} {amp.precision = "f32"
// TLM-CHECK: %[[WQ:.*]] = amp.cast %arg6 {amp.autocast_inserted} : tensor<64x64xf32> to tensor<64x64xbf16>
// TLM-CHECK-NEXT: amp.linear %{{.*}}, %[[WQ]] transpose_w = false {amp.precision = "bf16"
// TLM-CHECK: amp.softmax {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32_set_opt_dtype{{.*}}">} : tensor<8x4x32x32xf32>
// TLM-CHECK: amp.layer_norm {{.*}} {amp.precision = "f32"
// TLM-CHECK: %[[W1:.*]] = amp.cast %arg13 {amp.autocast_inserted} : tensor<64x256xf32> to tensor<64x256xbf16>
// TLM-CHECK-NEXT: %[[B1:.*]] = amp.cast %arg14 {amp.autocast_inserted} : tensor<256xf32> to tensor<256xbf16>
// TLM-CHECK-NEXT: %[[F1:.*]] = amp.linear %{{.*}}, %[[W1]], %[[B1]] transpose_w = false {amp.precision = "bf16"
// TLM-CHECK-NEXT: amp.gelu %[[F1]] approximate = tanh {amp.precision = "bf16"
// TLM-CHECK: amp.layer_norm {{.*}} {amp.precision = "f32"
// TLM-CHECK: amp.linear {{.*}} {amp.precision = "bf16"
// TLM-CHECK: %[[LOGITS:.*]] = amp.cast %{{.*}} {amp.autocast_inserted} : tensor<256x64xbf16> to tensor<256x64xf32>
// TLM-CHECK-NEXT: %[[LOSS:.*]] = amp.cross_entropy %[[LOGITS]], %arg1 {amp.precision = "f32"
// TLM-CHECK-NEXT: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<256x64xf32>

// REPORT-CHECK: Precision report (autocast: policy pytorch, dtype=bf16; target cpu)
// REPORT-CHECK: @transformer_lm
// REPORT-CHECK: #  op location precision  casts  reason
// REPORT-CHECK: amp.linear transformer_lm.mlir:35:8  bf16 2 pytorch lower_precision_fp
// REPORT-CHECK: amp.softmax transformer_lm.mlir:55:12  f32 1 pytorch fp32_set_opt_dtype
// REPORT-CHECK: amp.linear transformer_lm.mlir:65:9  bf16 3 pytorch lower_precision_fp
// REPORT-CHECK: amp.gelu transformer_lm.mlir:66:8  bf16 0 pytorch fallthrough
// REPORT-CHECK: amp.cross_entropy transformer_lm.mlir:74:11  f32 1 pytorch fp32
// REPORT-CHECK: ops per precision: bf16 21; f32 10;
// REPORT-CHECK: casts inserted: 18 (bf16->f32 4, f32->bf16 14), of which 10 cast function arguments (each once); explicit casts in the model: 0
// REPORT-CHECK: FLOPs: {{[0-9]+}} (forward estimate); bf16 97.7%; f32 2.3%;

// JSON-CHECK: "dtype": "bf16"
// JSON-CHECK: "op": "amp.linear"
// JSON-CHECK: "casts_added": 18
// JSON-CHECK: "casts_of_arguments": 10

// EXPLAIN-CHECK: #21 amp.softmax at transformer_lm.mlir:55:12 in @transformer_lm
// EXPLAIN-CHECK-NEXT: precision: f32
// EXPLAIN-CHECK-NEXT: reason: pytorch fp32_set_opt_dtype: computes in f32 and returns f32 (PyTorch passes dtype=float32)
// EXPLAIN-CHECK: inputs:
// EXPLAIN-CHECK-NEXT: 8x4x32x32 f32 from a cast inserted by autocast, of 'amp.select' at transformer_lm.mlir:54:13: 8x4x32x32 bf16 -> f32
// EXPLAIN-CHECK: outputs:
// EXPLAIN-CHECK-NEXT: 8x4x32x32 f32 to [cast to bf16 for 'amp.matmul']
// EXPLAIN-CHECK: casts added for this op: 1

// DOT-CHECK: digraph "transformer_lm" {
// DOT-CHECK: fillcolor="#f4a261", label="#{{[0-9]+}} amp.linear
// DOT-CHECK: label="cast -> bf16"
// DOT-CHECK: }

// NOMATCH-CHECK: no op matches 'nothing.here'

// SM75-CHECK: module attributes {amp.precision = "f16", {{.*}}amp.target = "cuda:sm_75"}
// SM75-CHECK: amp.linear {{.*}} : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16>
// SM90-CHECK: module attributes {amp.precision = "bf16", {{.*}}amp.target = "cuda:sm_90"}
// F32-CHECK-NOT: amp.cast
// F32-CHECK: amp.linear {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<off, detail = "runs as declared">}
// F32-CHECK-NOT: amp.cast
// OVERRIDE-CHECK: amp.linear {{.*}} f32 0 override: op 'amp.linear' -> f32 (option override=op:amp.linear=f32); runs in f32
// OVERRIDE-CHECK: casts inserted: 0
// NOPOLICY-CHECK: error: amp-autocast: cannot read policy file
// IR-CHECK-NOT: amp.precision
// IR-CHECK: amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<128x784xf32>, tensor<784x256xf32>, tensor<256xf32>
