// A tiny model for policy-file and target tests.
func.func @tiny(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.exp %0 : tensor<4x8xf32>
  %2 = amp.concat %1, %0 axis = 1 : tensor<4x8xf32>, tensor<4x8xf32>
  %3 = amp.slice %2 starts = [0, 0] limits = [4, 8] : tensor<4x16xf32>
  return %3 : tensor<4x8xf32>
}
