// The regression MLP of PyTorch's AMP recipe (Linear + ReLU layers, MSE loss) at a test size: written by
// `python3 bench/gen_mlp.py --batch 64 --widths 256,512,512,256 --loss mse`.
func.func @mlp(
    %x: tensor<64x256xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<64x256xf32> {amp.role = "label", amp.name = "target"},
    %w1: tensor<256x512xf32> {amp.role = "param", amp.name = "fc1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b1: tensor<512xf32> {amp.role = "param", amp.name = "fc1.bias", amp.init = #amp.init<zeros>},
    %w2: tensor<512x512xf32> {amp.role = "param", amp.name = "fc2.weight", amp.init = #amp.init<kaiming_uniform, seed = 2>},
    %b2: tensor<512xf32> {amp.role = "param", amp.name = "fc2.bias", amp.init = #amp.init<zeros>},
    %w3: tensor<512x256xf32> {amp.role = "param", amp.name = "fc3.weight", amp.init = #amp.init<kaiming_uniform, seed = 3>},
    %b3: tensor<256xf32> {amp.role = "param", amp.name = "fc3.bias", amp.init = #amp.init<zeros>})
    -> (tensor<f32>, tensor<64x256xf32>) {
  %h1 = amp.linear %x, %w1, %b1 transpose_w = false : tensor<64x256xf32>, tensor<256x512xf32>, tensor<512xf32>
  %a1 = amp.relu %h1 : tensor<64x512xf32>
  %h2 = amp.linear %a1, %w2, %b2 transpose_w = false : tensor<64x512xf32>, tensor<512x512xf32>, tensor<512xf32>
  %a2 = amp.relu %h2 : tensor<64x512xf32>
  %logits = amp.linear %a2, %w3, %b3 transpose_w = false : tensor<64x512xf32>, tensor<512x256xf32>, tensor<256xf32>
  %loss = amp.mse_loss %logits, %y : tensor<64x256xf32>, tensor<64x256xf32>
  return %loss, %logits : tensor<f32>, tensor<64x256xf32>
}
