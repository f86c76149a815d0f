// amp-autocast with the PyTorch policy: every cast policy, cast insertion rules, overrides,
// auto dtype and policy files. TensorFlow painting: amp-autocast-tensorflow.mlir; conflicting
// overrides: amp-autocast-invalid.mlir.
//
// RUN: amp-opt --split-input-file --amp-autocast="dtype=bf16 policy=pytorch" %s | FileCheck %s --check-prefix=PT-CHECK
// RUN: amp-opt --split-input-file --amp-autocast="dtype=f16 policy=pytorch" %s | FileCheck %s --check-prefix=F16-CHECK
// RUN: amp-opt --split-input-file --amp-autocast="dtype=f32" %s | FileCheck %s --check-prefix=OFF-CHECK
// RUN: amp-opt --split-input-file --amp-autocast="dtype=bf16 override=head.*=f32 override=op:amp.relu=low" %s | FileCheck %s --check-prefix=PAT-CHECK
//
// Auto dtype from a target option or the module attribute amp.target.
// RUN: amp-opt --amp-autocast="dtype=auto target=cuda:sm_80" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=SM80-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto target=cuda:sm_75" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=SM75-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto target=cpu:avx512_bf16,amd" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=CPUBF16-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto target=cpu:avx512_bf16" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=CPUINTEL-CHECK
// RUN: not amp-opt --amp-autocast="dtype=auto target=cpu:avx512_bf16,sse9" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADFEATURE-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto target=cpu:amx_bf16" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=CPUBF16-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto target=cpu:generic" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=CPUF16-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto target=reference" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=REF-CHECK
// RUN: amp-opt --amp-autocast="dtype=auto" %S/Inputs/autocast-target.mlir | FileCheck %s --check-prefix=MODTARGET-CHECK
// No target: the compiling machine's cpu, as ampc; AMP_CPU_FEATURES makes it an AVX2 machine here.
// RUN: env AMP_CPU_FEATURES=x86-64-v3 amp-opt --amp-autocast="dtype=auto" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=NOTARGET-CHECK
// RUN: not amp-opt --amp-autocast="dtype=auto target=cuda:volta" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADTARGET-CHECK
// RUN: not amp-opt --amp-autocast="dtype=fp8" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADDTYPE-CHECK
//
// Policy files: a valid one (promote and banned categories), then invalid ones.
// RUN: amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-promote.json" %S/Inputs/tiny.mlir | FileCheck %s --check-prefix=PROMOTE-CHECK
// RUN: not amp-opt --split-input-file --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-promote.json" %s 2>&1 | FileCheck %s --check-prefix=PROMOTE-ERR-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-bad-json.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADJSON-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-conflict.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=CONFLICT-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-unknown-op.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWNOP-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-wrong-list.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=WRONGLIST-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-bad-remove.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADREMOVE-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-no-base.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=NOBASE-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/policy-bad-override.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADOVERRIDE-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=%S/Inputs/does-not-exist.json" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=NOFILE-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 policy=jax" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=NOPOLICY-CHECK
// RUN: not amp-opt --amp-autocast="dtype=bf16 override=head.*" %S/Inputs/tiny.mlir 2>&1 | FileCheck %s --check-prefix=BADSPEC-CHECK

// lower_precision_fp: inputs cast to the low dtype; one cast per (value, type) shared by every
// user (the weight-cast cache); the result returns to f32 at the function boundary.
// PT-CHECK-LABEL: func.func @lower_precision
// PT-CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// PT-CHECK-DAG: %[[XB:.*]] = amp.cast %[[X]] {amp.autocast_inserted} : tensor<4x8xf32> to tensor<4x8xbf16>
// PT-CHECK-DAG: %[[WB:.*]] = amp.cast %[[W]] {amp.autocast_inserted} : tensor<8x8xf32> to tensor<8x8xbf16>
// PT-CHECK: %[[A:.*]] = amp.matmul %[[XB]], %[[WB]] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "{{.*}}">} : tensor<4x8xbf16>, tensor<8x8xbf16>
// PT-CHECK-NOT: amp.cast %[[W]]
// PT-CHECK: %[[B:.*]] = amp.matmul %[[A]], %[[WB]] {amp.precision = "bf16"
// PT-CHECK: %[[R:.*]] = amp.cast %[[B]] {amp.autocast_inserted} : tensor<4x8xbf16> to tensor<4x8xf32>
// PT-CHECK: return %[[R]] : tensor<4x8xf32>
// F16-CHECK-LABEL: func.func @lower_precision
// F16-CHECK: amp.matmul {{.*}} {amp.precision = "f16", {{.*}}} : tensor<4x8xf16>, tensor<8x8xf16>
// OFF-CHECK-LABEL: func.func @lower_precision
// OFF-CHECK-NOT: amp.cast
// OFF-CHECK: amp.matmul %{{.*}}, %{{.*}} {amp.precision = "f32", amp.reason = #amp.reason<off, detail = "runs as declared">} : tensor<4x8xf32>, tensor<8x8xf32>
func.func @lower_precision(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.matmul %0, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// amp.linear is lower_precision_fp like PyTorch's linear/addmm: every float input is cast, the
// bias too, so two nn.Linear layers with a ReLU between them stay in bf16 end to end (matmul +
// add would promote the add to f32 and cast back before the next layer).
// PT-CHECK-LABEL: func.func @linear_layers
// PT-CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W1:.*]]: tensor<16x8xf32>, %[[B1:.*]]: tensor<16xf32>, %[[W2:.*]]: tensor<16x3xf32>, %[[B2:.*]]: tensor<3xf32>)
// PT-CHECK-DAG: %[[XB:.*]] = amp.cast %[[X]] {amp.autocast_inserted} : tensor<4x8xf32> to tensor<4x8xbf16>
// PT-CHECK-DAG: %[[W1B:.*]] = amp.cast %[[W1]] {amp.autocast_inserted} : tensor<16x8xf32> to tensor<16x8xbf16>
// PT-CHECK-DAG: %[[B1B:.*]] = amp.cast %[[B1]] {amp.autocast_inserted} : tensor<16xf32> to tensor<16xbf16>
// PT-CHECK: %[[H:.*]] = amp.linear %[[XB]], %[[W1B]], %[[B1B]] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "{{.*}}">} : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>
// PT-CHECK: %[[A:.*]] = amp.relu %[[H]] {amp.precision = "bf16", {{.*}}} : tensor<4x16xbf16>
// PT-CHECK-DAG: %[[W2B:.*]] = amp.cast %[[W2]] {amp.autocast_inserted} : tensor<16x3xf32> to tensor<16x3xbf16>
// PT-CHECK-DAG: %[[B2B:.*]] = amp.cast %[[B2]] {amp.autocast_inserted} : tensor<3xf32> to tensor<3xbf16>
// PT-CHECK-NOT: amp.cast %[[A]]
// PT-CHECK: %[[O:.*]] = amp.linear %[[A]], %[[W2B]], %[[B2B]] transpose_w = false {amp.precision = "bf16"{{.*}}} : tensor<4x16xbf16>, tensor<16x3xbf16>, tensor<3xbf16>
// PT-CHECK: %[[R:.*]] = amp.cast %[[O]] {amp.autocast_inserted} : tensor<4x3xbf16> to tensor<4x3xf32>
// PT-CHECK: return %[[R]] : tensor<4x3xf32>
// F16-CHECK-LABEL: func.func @linear_layers
// F16-CHECK: amp.linear {{.*}} {amp.precision = "f16", {{.*}}} : tensor<4x8xf16>, tensor<16x8xf16>, tensor<16xf16>
// OFF-CHECK-LABEL: func.func @linear_layers
// OFF-CHECK-NOT: amp.cast
// OFF-CHECK: amp.linear %{{.*}}, %{{.*}}, %{{.*}} {amp.precision = "f32", {{.*}}} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>
func.func @linear_layers(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>,
                         %w2: tensor<16x3xf32>, %b2: tensor<3xf32>) -> tensor<4x3xf32> {
  %h = amp.linear %x, %w1, %b1 : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>
  %a = amp.relu %h : tensor<4x16xf32>
  %o = amp.linear %a, %w2, %b2 transpose_w = false : tensor<4x16xf32>, tensor<16x3xf32>, tensor<3xf32>
  return %o : tensor<4x3xf32>
}

// -----

// fp32: a low-precision input is cast up; the op runs in f32. fp32_set_opt_dtype (softmax,
// log_softmax, reduce_sum): computes in f32 and returns f32. No cast on an edge whose two ends
// agree (exp -> softmax), one cast of %0 to f32 shared by three users.
// PT-CHECK-LABEL: func.func @fp32_ops
// PT-CHECK: %[[MM:.*]] = amp.matmul {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16>
// PT-CHECK: %[[UP:.*]] = amp.cast %[[MM]] {amp.autocast_inserted} : tensor<4x8xbf16> to tensor<4x8xf32>
// PT-CHECK: %[[E:.*]] = amp.exp %[[UP]] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "{{.*}}">} : tensor<4x8xf32>
// PT-CHECK-NEXT: %[[S:.*]] = amp.softmax %[[E]] axis = 1 {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32_set_opt_dtype", detail = "computes in f32 and returns f32{{.*}}">} : tensor<4x8xf32>
// PT-CHECK-NEXT: amp.log_softmax %[[UP]] axis = 1 {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32_set_opt_dtype
// PT-CHECK-NEXT: amp.reduce_sum %[[UP]] dims = [1] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32_set_opt_dtype
// PT-CHECK-NEXT: amp.layer_norm %[[UP]] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "
// PT-CHECK-NEXT: amp.rms_norm %[[UP]] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "
// PT-CHECK-NOT: amp.cast
// PT-CHECK: return
func.func @fp32_ops(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.exp %0 : tensor<4x8xf32>
  %2 = amp.softmax %1 axis = 1 : tensor<4x8xf32>
  %3 = amp.log_softmax %0 axis = 1 : tensor<4x8xf32>
  %4 = amp.reduce_sum %0 dims = [1] : tensor<4x8xf32>
  %5 = amp.layer_norm %0 : tensor<4x8xf32>
  %6 = amp.rms_norm %0 : tensor<4x8xf32>
  return %2, %3, %4, %5, %6 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Fall-through: not autocast, runs in its input dtype. Several inputs use PyTorch's native type
// promotion (bf16 with f32 gives f32) in which rank-0 inputs follow the dimensioned ones.
// PT-CHECK-LABEL: func.func @fallthrough
// PT-CHECK: %[[MM:.*]] = amp.matmul
// PT-CHECK: %[[R:.*]] = amp.relu %[[MM]] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fallthrough", detail = "not autocast, runs in its input dtype bf16">} : tensor<4x8xbf16>
// PT-CHECK: %[[SB:.*]] = amp.cast %{{.*}} {amp.autocast_inserted} : tensor<f32> to tensor<bf16>
// PT-CHECK: %[[M:.*]] = amp.mul %[[R]], %[[SB]] {amp.precision = "bf16", amp.reason = #amp.reason<{{.*}}rank-0 inputs follow the dimensioned ones{{.*}}>} : tensor<4x8xbf16>, tensor<bf16>
// PT-CHECK: %[[MUP:.*]] = amp.cast %[[M]] {amp.autocast_inserted} : tensor<4x8xbf16> to tensor<4x8xf32>
// PT-CHECK: amp.add %[[MUP]], %{{.*}} {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fallthrough", detail = "not autocast, inputs bf16 and f32 promote to f32">} : tensor<4x8xf32>, tensor<8xf32>
func.func @fallthrough(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.relu %0 : tensor<4x8xf32>
  %2 = amp.mul %1, %s : tensor<4x8xf32>, tensor<f32>
  %3 = amp.add %2, %b : tensor<4x8xf32>, tensor<8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// Integer and i1 values are never cast: embedding ids, labels, compare masks. The loss stays f32.
// PT-CHECK-LABEL: func.func @integers
// PT-CHECK-SAME: (%[[T:.*]]: tensor<16x8xf32>, %[[IDS:.*]]: tensor<4xi64>, %[[W:.*]]: tensor<8x16xf32>, %[[Y:.*]]: tensor<4xi32>)
// PT-CHECK: %[[E:.*]] = amp.embedding %[[T]][%[[IDS]]] {amp.precision = "f32", {{.*}}} : tensor<16x8xf32>, tensor<4xi64>
// PT-CHECK: %[[MM:.*]] = amp.matmul {{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16>
// PT-CHECK: %[[Z:.*]] = amp.constant dense<0.000000e+00> : tensor<f32>
// PT-CHECK: %[[ZB:.*]] = amp.cast %[[Z]] {amp.autocast_inserted} : tensor<f32> to tensor<bf16>
// PT-CHECK: %[[MASK:.*]] = amp.compare gt, %[[MM]], %[[ZB]] {amp.precision = "bf16", {{.*}}} : tensor<4x16xbf16>, tensor<bf16>
// PT-CHECK: %[[SEL:.*]] = amp.select %[[MASK]], %[[MM]], %[[ZB]] {amp.precision = "bf16", {{.*}}} : tensor<4x16xi1>, tensor<4x16xbf16>, tensor<bf16>
// PT-CHECK: %[[UP:.*]] = amp.cast %[[SEL]] {amp.autocast_inserted} : tensor<4x16xbf16> to tensor<4x16xf32>
// PT-CHECK: %[[L:.*]] = amp.cross_entropy %[[UP]], %[[Y]] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "{{.*}}">} : tensor<4x16xf32>, tensor<4xi32>
// PT-CHECK: return %[[L]] : tensor<f32>
func.func @integers(%table: tensor<16x8xf32>, %ids: tensor<4xi64>, %w: tensor<8x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %0 = amp.embedding %table[%ids] : tensor<16x8xf32>, tensor<4xi64>
  %1 = amp.matmul %0, %w : tensor<4x8xf32>, tensor<8x16xf32>
  %z = amp.constant dense<0.0> : tensor<f32>
  %m = amp.compare gt, %1, %z : tensor<4x16xf32>, tensor<f32>
  %2 = amp.select %m, %1, %z : tensor<4x16xi1>, tensor<4x16xf32>, tensor<f32>
  %3 = amp.cross_entropy %2, %y : tensor<4x16xf32>, tensor<4xi32>
  return %3 : tensor<f32>
}

// -----

// Explicit casts are user intent: kept, and shared by later users that need the same type. A
// loss computed in low precision by an override returns as f32.
// PT-CHECK-LABEL: func.func @explicit_casts
// PT-CHECK: %[[C:.*]] = amp.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// PT-CHECK-NOT: amp.cast {{.*}} to tensor<4x8xbf16>
// PT-CHECK: amp.matmul %[[C]], %{{.*}}
// PT-CHECK: %[[L:.*]] = amp.mse_loss {{.*}} {amp.precision = "bf16", amp.reason = #amp.reason<override, detail = "amp.precision = \22bf16\22 on the op; runs in bf16">} : tensor<4x8xbf16>, tensor<4x8xbf16>
// PT-CHECK: %[[LUP:.*]] = amp.cast %[[L]] {amp.autocast_inserted} : tensor<bf16> to tensor<f32>
// PT-CHECK: return %[[LUP]] : tensor<f32>
func.func @explicit_casts(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<f32> {
  %c = amp.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.mse_loss %0, %x {amp.precision = "bf16"} : tensor<4x8xf32>, tensor<4x8xf32>
  return %1 : tensor<f32>
}

// -----

// Overrides: amp.precision on an op; amp.autocast = false on a function disables autocast there
// (ops run as declared) and amp.autocast = true on one op re-enables it.
// PT-CHECK-LABEL: func.func @per_op_override
// PT-CHECK: amp.matmul %{{.*}}, %{{.*}} {amp.precision = "f32", amp.reason = #amp.reason<override, detail = "amp.precision = \22f32\22 on the op; runs in f32">} : tensor<4x8xf32>, tensor<8x8xf32>
// PT-CHECK: amp.softmax %{{.*}} axis = 1 {amp.precision = "f16", amp.reason = #amp.reason<override, detail = "{{.*}}">} : tensor<4x8xf16>
func.func @per_op_override(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w {amp.precision = "f32"} : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.softmax %0 axis = 1 {amp.precision = "f16"} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// PT-CHECK-LABEL: func.func @disabled_scope
// PT-CHECK-SAME: attributes {amp.autocast = false}
// PT-CHECK: %[[A:.*]] = amp.matmul %{{.*}}, %{{.*}} {amp.precision = "f32", amp.reason = #amp.reason<override, detail = "amp.autocast = false on func @disabled_scope (autocast disabled); runs as declared">} : tensor<4x8xf32>, tensor<8x8xf32>
// PT-CHECK: amp.matmul {{.*}} {amp.autocast = true, amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp{{.*}}">} : tensor<4x8xbf16>, tensor<8x8xbf16>
func.func @disabled_scope(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> attributes {amp.autocast = false} {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.matmul %0, %w {amp.autocast = true} : tensor<4x8xf32>, tensor<8x8xf32>
  return %1 : tensor<4x8xf32>
}

// Pattern overrides from the pass option: by location name (head.*) and by op name (op:amp.relu).
// PAT-CHECK-LABEL: func.func @patterns
// PAT-CHECK: amp.matmul {{.*}} {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp
// PAT-CHECK: amp.relu {{.*}} {amp.precision = "bf16", amp.reason = #amp.reason<override, detail = "op 'amp.relu' -> low (option override=op:amp.relu=low); runs in bf16">}
// PAT-CHECK: amp.matmul {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<override, detail = "loc 'head.*' -> f32 (option override=head.*=f32); runs in f32">} : tensor<4x8xf32>, tensor<8x8xf32>
func.func @patterns(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("body.fc")
  %1 = amp.relu %0 : tensor<4x8xf32> loc("body.act")
  %2 = amp.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("head.fc")
  return %2 : tensor<4x8xf32>
}

// -----

// promote (policy file): mixing f16 and bf16 is an error, as in PyTorch.
// PROMOTE-ERR-CHECK: error: 'amp.concat' (promote) mixes f16 and bf16 inputs under bf16 autocast; PyTorch rejects this too (insert an explicit amp.cast)
// PROMOTE-ERR-CHECK: error: 'amp.gelu' is banned under autocast by policy 'policy-promote.json (based on pytorch)'
func.func @promote_mix(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x16xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.relu %x {amp.precision = "f16"} : tensor<4x8xf32>
  %2 = amp.concat %0, %1 axis = 1 : tensor<4x8xf32>, tensor<4x8xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// banned (policy file): refuses to compile.
func.func @banned(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.gelu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// SM80-CHECK: module attributes {amp.precision = "bf16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> bf16 (cuda:sm_80 has bf16 tensor cores (sm_80 and newer))">, amp.target = "cuda:sm_80"}
// SM75-CHECK: module attributes {amp.precision = "f16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> f16 (cuda:sm_75 has no bf16 tensor cores (needs sm_80); using f16)">, amp.target = "cuda:sm_75"}
// SM75-CHECK: amp.matmul {{.*}} : tensor<4x8xf16>, tensor<8x8xf16>
// CPUBF16-CHECK: amp.precision = "bf16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> bf16 (cpu: the target has {{amx_bf16, so bf16 GEMMs run on AMX tiles|avx512_bf16 on an AMD core, whose bf16 dot products do twice the multiply-adds of f32 FMA}})">
// The host rule applies to a named CPU too: AVX512-BF16 on an Intel core without AMX computes bf16
// no faster than f32.
// CPUINTEL-CHECK: amp.precision = "f32", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> f32: autocast off (cpu: the target has avx512_bf16 but no amx_bf16 and is not an AMD core (name amd for one); on Intel cores
// BADFEATURE-CHECK: error: amp-autocast: unknown cpu feature 'sse9' (expected avx512_bf16, amx_bf16, amd or generic)
// CPUF16-CHECK: amp.precision = "f32", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> f32: autocast off (cpu: the target has neither avx512_bf16 nor amx_bf16, so no low-precision compute units; f16 would only add conversions and loss scaling, so f32 is faster and safer)">
// REF-CHECK: amp.precision = "bf16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> bf16 (target 'reference' emulates bf16 exactly)">
// MODTARGET-CHECK: module attributes {amp.precision = "bf16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> bf16 (cuda:sm_90 {{.*}})">, amp.target = "cuda:sm_90"}
// MODTARGET-CHECK: amp.matmul {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16>
// NOTARGET-CHECK: module attributes {amp.precision = "f32", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy pytorch, dtype=auto -> f32: autocast off (cpu: the compiling machine has neither avx512_bf16 nor amx_bf16{{.*}})">, amp.target = "cpu"}
// BADTARGET-CHECK: error: amp-autocast: bad CUDA target 'cuda:volta' (expected cuda:sm_NN, e.g. cuda:sm_80)
// BADDTYPE-CHECK: for the --dtype option: 'fp8' is not one of: f32, f16, bf16, auto, fp16, fp32

// PROMOTE-CHECK-LABEL: func.func @tiny
// PROMOTE-CHECK: %[[MM:.*]] = amp.matmul {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16>
// PROMOTE-CHECK: %[[E:.*]] = amp.exp %[[MM]] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fallthrough", detail = "{{.*}}">} : tensor<4x8xbf16>
// PROMOTE-CHECK: amp.concat %[[E]], %[[MM]] axis = 1 {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "promote", detail = "widest input type is bf16">}
// BADJSON-CHECK: error: amp-autocast: policy file '{{.*}}policy-bad-json.json': invalid JSON: [1:49, byte=49]: Invalid JSON value
// CONFLICT-CHECK: error: amp-autocast: policy file '{{.*}}policy-conflict.json': op 'amp.exp' is in both 'fp32' and 'lower_precision_fp' (lists.lower_precision_fp.add[0]; remove it from 'fp32' first)
// UNKNOWNOP-CHECK: error: amp-autocast: policy file '{{.*}}': lists.deny.add[0]: unknown op 'amp.frobnicate'
// WRONGLIST-CHECK: error: amp-autocast: policy file '{{.*}}': unknown list 'fp32' for a tensorflow policy (expected allow, infer, deny, clear)
// BADREMOVE-CHECK: error: amp-autocast: policy file '{{.*}}': lists.fp32.remove[0]: cannot remove 'amp.matmul' from 'fp32': it is in 'lower_precision_fp'
// NOBASE-CHECK: error: amp-autocast: policy file '{{.*}}': 'base' is required
// BADOVERRIDE-CHECK: error: amp-autocast: policy file '{{.*}}': overrides[0]: override 'attn.*=f8': unknown precision 'f8' (expected f32, f16, bf16, low or off)
// NOFILE-CHECK: error: amp-autocast: cannot read policy file '{{.*}}does-not-exist.json'
// NOPOLICY-CHECK: error: amp-autocast: unknown built-in policy 'jax'
// BADSPEC-CHECK: error: amp-autocast: override 'head.*' must be PATTERN=PRECISION
