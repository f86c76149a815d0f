// Slices and a concatenation (test/lit/tools/amp-run-cuda.mlir: the cuda device runs them as bit copies).
func.func @slice(%x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  %a = amp.slice %x starts = [0, 2] limits = [4, 8] : tensor<4x8xf32>
  %b = amp.slice %x starts = [0, 0] limits = [4, 2] : tensor<4x8xf32>
  %c = amp.concat %a, %b axis = 1 : tensor<4x6xf32>, tensor<4x2xf32>
  %s = amp.reduce_sum %c dims = [0, 1] : tensor<4x8xf32>
  return %s : tensor<f32>
}
