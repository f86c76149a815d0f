func.func @init(%x: tensor<1xf32> {amp.role = "input", amp.name = "x"},
               %w: tensor<67108928xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<normal, scale = 0.02, seed = 1>}) -> tensor<f32> {
  %s = amp.reduce_sum %w dims = [0] : tensor<67108928xf32>
  return %s : tensor<f32>
}
