// Every image op of the cuda device's library once (test/unit/cuda: the GPU's results against the
// reference executor's, bit for bit, with --conv=direct): conv2d with bias, padding, stride and
// groups, a pointwise conv2d with bias, max and average pooling, reductions and cross-entropy, and
// in training their gradients. No GEMM, so with the direct convolutions every result is exact; the
// implicit-GEMM convolutions are checked on it within summation-order bounds.
func.func @op_parity_conv(
    %x: tensor<2x2x9x9xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<2xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<4x1x3x3xf32> {amp.role = "param", amp.name = "conv1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b1: tensor<4xf32> {amp.role = "param", amp.name = "conv1.bias", amp.init = #amp.init<normal, scale = 0.1, seed = 2>},
    %w2: tensor<10x4x2x2xf32> {amp.role = "param", amp.name = "conv2.weight", amp.init = #amp.init<kaiming_uniform, seed = 3>},
    %w3: tensor<10x10x1x1xf32> {amp.role = "param", amp.name = "conv3.weight", amp.init = #amp.init<kaiming_uniform, seed = 4>},
    %b3: tensor<10xf32> {amp.role = "param", amp.name = "conv3.bias", amp.init = #amp.init<normal, scale = 0.1, seed = 5>})
    -> (tensor<f32>, tensor<2x10xf32>) {
  %c1 = amp.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<2x2x9x9xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>
  %p1 = amp.max_pool2d %c1 kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<2x4x9x9xf32>
  %c2 = amp.conv2d %p1, %w2 {stride = array<i64: 2, 2>} : tensor<2x4x5x5xf32>, tensor<10x4x2x2xf32>
  %c3 = amp.conv2d %c2, %w3, %b3 : tensor<2x10x2x2xf32>, tensor<10x10x1x1xf32>, tensor<10xf32>
  %p2 = amp.avg_pool2d %c3 kernel = [2, 2] : tensor<2x10x2x2xf32>
  %f = amp.reduce_mean %p2 dims = [2, 3] : tensor<2x10x1x1xf32>
  %loss = amp.cross_entropy %f, %y : tensor<2x10xf32>, tensor<2xi64>
  return %loss, %f : tensor<f32>, tensor<2x10xf32>
}
