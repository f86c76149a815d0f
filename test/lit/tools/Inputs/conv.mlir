// A convolution (test/lit/tools/amp-run-cuda.mlir: the cuda device runs it as an implicit GEMM, or
// as the direct kernel with --conv=direct).
func.func @conv(%x: tensor<2x1x8x8xf32> {amp.role = "input", amp.name = "image"},
                %w: tensor<4x1x3x3xf32> {amp.role = "param", amp.name = "conv.weight",
                                         amp.init = #amp.init<kaiming_uniform, seed = 1>}) -> tensor<f32> {
  %y = amp.conv2d %x, %w : tensor<2x1x8x8xf32>, tensor<4x1x3x3xf32>
  %loss = amp.reduce_mean %y dims = [0, 1, 2, 3] : tensor<2x4x6x6xf32>
  return %loss : tensor<f32>
}
