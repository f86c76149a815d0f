// autocast then cleanup: an absorbed explicit cast and a constant operand cast to bf16.
func.func @pipeline(%x: tensor<4x8xf16>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.cast %x : tensor<4x8xf16> to tensor<4x8xf32>
  %1 = amp.matmul %0, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %s = amp.constant dense<0.25> : tensor<f32>
  %2 = amp.mul %1, %s : tensor<4x8xf32>, tensor<f32>
  %3 = amp.matmul %2, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %3 : tensor<4x8xf32>
}
