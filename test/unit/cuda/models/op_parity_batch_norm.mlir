// The cuda device's batch norm kernels (test/unit/cuda): a conv2d, a batch_norm over its
// [N, C, H, W] output (training, its running statistics as buffers: docs/model-convention.md),
// relu and max pooling, then a second conv2d whose output, as [N, C], goes through a second
// batch_norm (BatchNorm1d: one element per image and channel) into the cross-entropy. The train
// step updates both running statistics; eval normalises with them; grads runs amp.batch_norm_grad
// in training mode. No GEMM, so with --conv=direct every result of eval and grads is the
// reference's bits.
func.func @op_parity_batch_norm(
    %x: tensor<4x2x6x6xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<4xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<3x2x3x3xf32> {amp.role = "param", amp.name = "conv1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %g1: tensor<3xf32> {amp.role = "param", amp.name = "bn1.weight", amp.init = #amp.init<normal, scale = 0.1, seed = 2>},
    %b1: tensor<3xf32> {amp.role = "param", amp.name = "bn1.bias", amp.init = #amp.init<normal, scale = 0.1, seed = 3>},
    %rm1: tensor<3xf32> {amp.role = "buffer", amp.name = "bn1.running_mean", amp.init = #amp.init<zeros>},
    %rv1: tensor<3xf32> {amp.role = "buffer", amp.name = "bn1.running_var", amp.init = #amp.init<ones>},
    %w2: tensor<5x3x3x3xf32> {amp.role = "param", amp.name = "conv2.weight", amp.init = #amp.init<kaiming_uniform, seed = 4>},
    %g2: tensor<5xf32> {amp.role = "param", amp.name = "bn2.weight", amp.init = #amp.init<ones>},
    %b2: tensor<5xf32> {amp.role = "param", amp.name = "bn2.bias", amp.init = #amp.init<zeros>},
    %rm2: tensor<5xf32> {amp.role = "buffer", amp.name = "bn2.running_mean", amp.init = #amp.init<zeros>},
    %rv2: tensor<5xf32> {amp.role = "buffer", amp.name = "bn2.running_var", amp.init = #amp.init<ones>})
    -> (tensor<f32>, tensor<4x5xf32>) {
  %c1 = amp.conv2d %x, %w1 {padding = array<i64: 1, 1>} : tensor<4x2x6x6xf32>, tensor<3x2x3x3xf32>
  %n1, %nm1, %nv1 = amp.batch_norm %c1, %g1, %b1 running(%rm1, %rv1) training {momentum = 0.1 : f64}
      : tensor<4x3x6x6xf32>, tensor<3xf32>
  %r1 = amp.relu %n1 : tensor<4x3x6x6xf32>
  %p1 = amp.max_pool2d %r1 kernel = [2, 2] : tensor<4x3x6x6xf32>
  %c2 = amp.conv2d %p1, %w2 : tensor<4x3x3x3xf32>, tensor<5x3x3x3xf32>
  %f = amp.reshape %c2 : tensor<4x5x1x1xf32> -> tensor<4x5xf32>
  %n2, %nm2, %nv2 = amp.batch_norm %f, %g2, %b2 running(%rm2, %rv2) training {momentum = 0.3 : f64}
      : tensor<4x5xf32>, tensor<5xf32>
  %loss = amp.cross_entropy %n2, %y : tensor<4x5xf32>, tensor<4xi64>
  return %loss, %n2 : tensor<f32>, tensor<4x5xf32>
}
