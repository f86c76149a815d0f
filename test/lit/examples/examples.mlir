// The shipped example models parse, pass the model convention and print back as valid input.
//
// RUN: ampc %amp_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=MLP-CHECK
// RUN: ampc %amp_src_root/examples/mlp.mlir | ampc - | FileCheck %s --check-prefix=MLP-CHECK
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir | FileCheck %s --check-prefix=LM-CHECK
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir | ampc - | FileCheck %s --check-prefix=LM-CHECK
// RUN: amp-opt %amp_src_root/examples/transformer_lm.mlir --mlir-print-op-generic | FileCheck %s --check-prefix=LM-TYPES-CHECK

// MLP-CHECK-LABEL: func.func @mlp(
// MLP-CHECK-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<128x10xf32> {amp.name = "logits"})
// MLP-CHECK-COUNT-2: amp.linear
// MLP-CHECK: %[[LOGITS:.*]] = amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<128x256xf32>, tensor<256x10xf32>, tensor<10xf32>
// MLP-CHECK: %[[LOSS:.*]] = amp.cross_entropy %[[LOGITS]], %{{.*}} : tensor<128x10xf32>, tensor<128xi64>
// MLP-CHECK: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<128x10xf32>

// LM-CHECK-LABEL: func.func @transformer_lm(
// LM-CHECK-SAME: %[[IDS:[a-z0-9]+]]: tensor<8x32xi64> {amp.name = "tokens", amp.role = "input"}
// LM-CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<256xi64> {amp.name = "next_tokens", amp.role = "label"}
// LM-CHECK-SAME: %[[TOK:[a-z0-9]+]]: tensor<64x64xf32> {amp.init = #amp.init<normal, scale = 2.000000e-02, seed = 1>, amp.name = "tok_emb.weight", amp.role = "param"}
// LM-CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<32x64xf32> {amp.init = #amp.init<normal, scale = 2.000000e-02, seed = 2>, amp.name = "pos_emb.weight", amp.role = "param"}
// LM-CHECK-SAME: amp.init = #amp.init<ones>, amp.name = "block.ln1.weight"
// LM-CHECK-SAME: amp.init = #amp.init<xavier_uniform, seed = 3>, amp.name = "block.attn.q.weight"
// LM-CHECK-SAME: amp.name = "lm_head.weight"
// LM-CHECK-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<256x64xf32> {amp.name = "logits"})
// LM-CHECK: %[[E:.*]] = amp.embedding %[[TOK]][%[[IDS]]] : tensor<64x64xf32>, tensor<8x32xi64>
// LM-CHECK: %[[X0:.*]] = amp.add %[[E]], %[[POS]] : tensor<8x32x64xf32>, tensor<32x64xf32>
// LM-CHECK: %[[H1:.*]] = amp.layer_norm %[[X0]] weight(
// LM-CHECK: amp.linear %[[H1]], %{{.*}} transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
// LM-CHECK: amp.reshape %{{.*}} : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
// LM-CHECK: amp.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<8x32x4x16xf32>
// LM-CHECK: %[[S:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_b : tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>
// LM-CHECK: %[[SCALE:.*]] = amp.constant dense<2.500000e-01> : tensor<f32>
// LM-CHECK: %[[SC:.*]] = amp.mul %[[S]], %[[SCALE]] : tensor<8x4x32x32xf32>, tensor<f32>
// LM-CHECK: %[[MASK:.*]] = amp.compare le, %{{.*}}, %{{.*}} : tensor<32xf32>, tensor<32x1xf32>
// LM-CHECK: %[[M:.*]] = amp.select %[[MASK]], %[[SC]], %{{.*}} : tensor<32x32xi1>, tensor<8x4x32x32xf32>, tensor<f32>
// LM-CHECK: %[[P:.*]] = amp.softmax %[[M]] axis = 3 : tensor<8x4x32x32xf32>
// LM-CHECK: amp.matmul %[[P]], %{{.*}} : tensor<8x4x32x32xf32>, tensor<8x4x32x16xf32>
// LM-CHECK: %[[CTX:.*]] = amp.reshape %{{.*}} : tensor<8x32x4x16xf32> -> tensor<8x32x64xf32>
// LM-CHECK: amp.linear %[[CTX]], %{{.*}}, %{{.*}} transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// LM-CHECK: %[[F1:.*]] = amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
// LM-CHECK: amp.gelu %[[F1]] approximate = tanh : tensor<8x32x256xf32>
// LM-CHECK: amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<8x32x256xf32>, tensor<256x64xf32>, tensor<64xf32>
// LM-CHECK: amp.linear %{{.*}}, %{{.*}} transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
// LM-CHECK: %[[LOGITS:.*]] = amp.reshape %{{.*}} : tensor<8x32x64xf32> -> tensor<256x64xf32>
// LM-CHECK: %[[LOSS:.*]] = amp.cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<256x64xf32>, tensor<256xi64>
// LM-CHECK: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<256x64xf32>

// The inferred result types along the attention path.
// LM-TYPES-CHECK: "amp.embedding"{{.*}} -> tensor<8x32x64xf32>
// LM-TYPES-CHECK: "amp.linear"{{.*}} <{activation = #amp<linear_activation none>, transpose_w = false}> : (tensor<8x32x64xf32>, tensor<64x64xf32>) -> tensor<8x32x64xf32>
// LM-TYPES-CHECK: "amp.matmul"{{.*}}<{transpose_b}> : (tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>) -> tensor<8x4x32x32xf32>
// LM-TYPES-CHECK: "amp.compare"{{.*}} -> tensor<32x32xi1>
// LM-TYPES-CHECK: "amp.select"{{.*}} -> tensor<8x4x32x32xf32>
// LM-TYPES-CHECK: "amp.matmul"{{.*}} : (tensor<8x4x32x32xf32>, tensor<8x4x32x16xf32>) -> tensor<8x4x32x16xf32>
// LM-TYPES-CHECK: "amp.linear"{{.*}} <{activation = #amp<linear_activation none>, transpose_w = false}> : (tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<8x32x256xf32>
// LM-TYPES-CHECK: "amp.cross_entropy"{{.*}} -> tensor<f32>
