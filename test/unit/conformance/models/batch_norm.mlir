// The batch norms no example model uses, in one trainable model, so the conformance suite runs
// amp.batch_norm (training, its running statistics as buffers: docs/model-convention.md) and
// amp.batch_norm_grad on every device, over both layouts: a batch_norm over a small conv2d's
// [N, C, H, W] output (BatchNorm2d) and one over a linear's [N, C] output (BatchNorm1d), feeding
// the cross-entropy. The train step updates both running statistics; eval normalises with them.
// Neither layer before a batch norm has a bias (PyTorch's bias=False): a training-mode batch norm
// subtracts the batch mean, so such a bias's gradient is 0 up to rounding, which no relative bound
// can compare.
func.func @batch_norm(
    %x: tensor<8x2x5x5xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<8xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<3x2x3x3xf32> {amp.role = "param", amp.name = "conv1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %g1: tensor<3xf32> {amp.role = "param", amp.name = "bn1.weight", amp.init = #amp.init<ones>},
    %b1: tensor<3xf32> {amp.role = "param", amp.name = "bn1.bias", amp.init = #amp.init<zeros>},
    %rm1: tensor<3xf32> {amp.role = "buffer", amp.name = "bn1.running_mean", amp.init = #amp.init<zeros>},
    %rv1: tensor<3xf32> {amp.role = "buffer", amp.name = "bn1.running_var", amp.init = #amp.init<ones>},
    %w2: tensor<75x8xf32> {amp.role = "param", amp.name = "fc1.weight", amp.init = #amp.init<kaiming_uniform, seed = 2>},
    %g2: tensor<8xf32> {amp.role = "param", amp.name = "bn2.weight", amp.init = #amp.init<normal, scale = 0.1, seed = 3>},
    %b2: tensor<8xf32> {amp.role = "param", amp.name = "bn2.bias", amp.init = #amp.init<normal, scale = 0.1, seed = 4>},
    %rm2: tensor<8xf32> {amp.role = "buffer", amp.name = "bn2.running_mean", amp.init = #amp.init<zeros>},
    %rv2: tensor<8xf32> {amp.role = "buffer", amp.name = "bn2.running_var", amp.init = #amp.init<ones>},
    %w3: tensor<8x10xf32> {amp.role = "param", amp.name = "fc2.weight", amp.init = #amp.init<kaiming_uniform, seed = 5>},
    %c3: tensor<10xf32> {amp.role = "param", amp.name = "fc2.bias", amp.init = #amp.init<zeros>})
    -> (tensor<f32> {amp.name = "loss"}, tensor<8x10xf32> {amp.name = "logits"}) {
  %conv = amp.conv2d %x, %w1 {padding = array<i64: 1, 1>} : tensor<8x2x5x5xf32>, tensor<3x2x3x3xf32>
  %n1, %nm1, %nv1 = amp.batch_norm %conv, %g1, %b1 running(%rm1, %rv1) training {momentum = 0.1 : f64}
      : tensor<8x3x5x5xf32>, tensor<3xf32>
  %r1 = amp.relu %n1 : tensor<8x3x5x5xf32>
  %f = amp.reshape %r1 : tensor<8x3x5x5xf32> -> tensor<8x75xf32>
  %h = amp.linear %f, %w2 transpose_w = false : tensor<8x75xf32>, tensor<75x8xf32>
  %n2, %nm2, %nv2 = amp.batch_norm %h, %g2, %b2 running(%rm2, %rv2) training {momentum = 0.3 : f64}
      : tensor<8x8xf32>, tensor<8xf32>
  %r2 = amp.relu %n2 : tensor<8x8xf32>
  %logits = amp.linear %r2, %w3, %c3 transpose_w = false : tensor<8x8xf32>, tensor<8x10xf32>, tensor<10xf32>
  %loss = amp.cross_entropy %logits, %y : tensor<8x10xf32>, tensor<8xi64>
  return %loss, %logits : tensor<f32>, tensor<8x10xf32>
}
