func.func @big(%x: tensor<1xf32> {amp.role = "input", amp.name = "x"},
               %w: tensor<2147483648xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<ones>}) -> tensor<f32> {
  %s = amp.reduce_sum %w dims = [0] : tensor<2147483648xf32>
  return %s : tensor<f32>
}
