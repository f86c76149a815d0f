// dtype=auto reads the target from the module attribute amp.target.
module attributes {amp.target = "cuda:sm_90"} {
  func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
