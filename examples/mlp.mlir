// Fashion-MNIST MLP: 784 -> 256 -> 256 -> 10 with ReLU and softmax cross-entropy.
// Batch size is part of the static shapes (change 128 to train with another batch).
func.func @mlp(
    %x: tensor<128x784xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<128xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<784x256xf32> {amp.role = "param", amp.name = "fc1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b1: tensor<256xf32> {amp.role = "param", amp.name = "fc1.bias", amp.init = #amp.init<zeros>},
    %w2: tensor<256x256xf32> {amp.role = "param", amp.name = "fc2.weight", amp.init = #amp.init<kaiming_uniform, seed = 2>},
    %b2: tensor<256xf32> {amp.role = "param", amp.name = "fc2.bias", amp.init = #amp.init<zeros>},
    %w3: tensor<256x10xf32> {amp.role = "param", amp.name = "fc3.weight", amp.init = #amp.init<kaiming_uniform, seed = 3>},
    %b3: tensor<10xf32> {amp.role = "param", amp.name = "fc3.bias", amp.init = #amp.init<zeros>})
    -> (tensor<f32> {amp.name = "loss"}, tensor<128x10xf32> {amp.name = "logits"}) {
  // Each nn.Linear is one amp.linear: x·W + b with the bias added in f32 before the one rounding
  // (so a bf16 layer stays bf16). The weights are stored [in, out]: transpose_w = false.
  %h1 = amp.linear %x, %w1, %b1 transpose_w = false : tensor<128x784xf32>, tensor<784x256xf32>, tensor<256xf32>
  %a1 = amp.relu %h1 : tensor<128x256xf32>
  %h2 = amp.linear %a1, %w2, %b2 transpose_w = false : tensor<128x256xf32>, tensor<256x256xf32>, tensor<256xf32>
  %a2 = amp.relu %h2 : tensor<128x256xf32>
  %logits = amp.linear %a2, %w3, %b3 transpose_w = false : tensor<128x256xf32>, tensor<256x10xf32>, tensor<10xf32>
  %loss = amp.cross_entropy %logits, %y : tensor<128x10xf32>, tensor<128xi64>
  return %loss, %logits : tensor<f32>, tensor<128x10xf32>
}
