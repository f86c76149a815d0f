// Every sequence op of the cuda device's library once (test/unit/cuda: the GPU's results against the
// reference executor's, bit for bit): embedding, transpose, softmax, log_softmax, layer_norm,
// rms_norm, gelu (tanh), slice, concat, reductions and mse_loss, and in training their gradients.
// No GEMM, so every result is exact.
func.func @op_parity_sequence(
    %ids: tensor<4x8xi64> {amp.role = "input", amp.name = "tokens"},
    %target: tensor<4x8x16xf32> {amp.role = "label", amp.name = "target"},
    %emb: tensor<10x16xf32> {amp.role = "param", amp.name = "emb.weight", amp.init = #amp.init<normal, scale = 1.0, seed = 1>},
    %lnw: tensor<16xf32> {amp.role = "param", amp.name = "ln.weight", amp.init = #amp.init<normal, scale = 1.0, seed = 2>},
    %lnb: tensor<16xf32> {amp.role = "param", amp.name = "ln.bias", amp.init = #amp.init<normal, scale = 1.0, seed = 3>},
    %rmsw: tensor<16xf32> {amp.role = "param", amp.name = "rms.weight", amp.init = #amp.init<normal, scale = 1.0, seed = 4>})
    -> (tensor<f32>, tensor<4x8x16xf32>, tensor<4x8xf32>) {
  %e = amp.embedding %emb[%ids] : tensor<10x16xf32>, tensor<4x8xi64>
  %t = amp.transpose %e permutation = [0, 2, 1] : tensor<4x8x16xf32>
  %s = amp.softmax %t axis = 2 : tensor<4x16x8xf32>
  %l = amp.log_softmax %t axis = 1 : tensor<4x16x8xf32>
  %a = amp.add %s, %l : tensor<4x16x8xf32>, tensor<4x16x8xf32>
  %back = amp.transpose %a permutation = [0, 2, 1] : tensor<4x16x8xf32>
  %n = amp.layer_norm %back weight(%lnw : tensor<16xf32>) bias(%lnb : tensor<16xf32>) : tensor<4x8x16xf32>
  %r = amp.rms_norm %n weight(%rmsw : tensor<16xf32>) : tensor<4x8x16xf32>
  %g = amp.gelu %r approximate = tanh : tensor<4x8x16xf32>
  %left = amp.slice %g starts = [0, 0, 0] limits = [4, 8, 12] : tensor<4x8x16xf32>
  %right = amp.slice %g starts = [0, 0, 12] limits = [4, 8, 16] : tensor<4x8x16xf32>
  %c = amp.concat %right, %left axis = 2 : tensor<4x8x4xf32>, tensor<4x8x12xf32>
  %m = amp.reduce_max %c dims = [2] : tensor<4x8x16xf32>
  %loss = amp.mse_loss %c, %target : tensor<4x8x16xf32>, tensor<4x8x16xf32>
  return %loss, %c, %m : tensor<f32>, tensor<4x8x16xf32>, tensor<4x8xf32>
}
