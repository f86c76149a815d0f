// A batch_norm over the input (so the test knows its batch statistics) feeding a linear
// classifier; its running statistics are buffers (docs/model-convention.md).
func.func @bn(%x: tensor<4x2x3x3xf32> {amp.role = "input", amp.name = "x"},
              %y: tensor<4xi64> {amp.role = "label", amp.name = "y"},
              %g: tensor<2xf32> {amp.role = "param", amp.name = "bn.weight", amp.init = #amp.init<ones>},
              %b: tensor<2xf32> {amp.role = "param", amp.name = "bn.bias", amp.init = #amp.init<zeros>},
              %rm: tensor<2xf32> {amp.role = "buffer", amp.name = "bn.running_mean", amp.init = #amp.init<zeros>},
              %rv: tensor<2xf32> {amp.role = "buffer", amp.name = "bn.running_var", amp.init = #amp.init<ones>},
              %w: tensor<18x3xf32> {amp.role = "param", amp.name = "fc.weight", amp.init = #amp.init<xavier_uniform, seed = 3>})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.name = "logits"}) {
  %n, %nm, %nv = amp.batch_norm %x, %g, %b running(%rm, %rv) training {momentum = 0.1 : f64}
      : tensor<4x2x3x3xf32>, tensor<2xf32>
  %f = amp.reshape %n : tensor<4x2x3x3xf32> -> tensor<4x18xf32>
  %logits = amp.matmul %f, %w : tensor<4x18xf32>, tensor<18x3xf32>
  %loss = amp.cross_entropy %logits, %y : tensor<4x3xf32>, tensor<4xi64>
  return %loss, %logits : tensor<f32>, tensor<4x3xf32>
}
