// The convolution benchmark of bench/cuda_step.py (scripts/gpu-check.sh): a CIFAR-sized CNN, batch
// 128 of 3x32x32 images, 10 classes. conv 3->64 3x3 (padding 1) + relu + 2x2 max pool, conv
// 64->128 3x3 (padding 1) + relu + 2x2 average pool, then a linear classifier over 128·8·8
// features. amp-run trains it on the GPU with --conv=gemm (implicit GEMMs) and --conv=direct, on
// synthetic images: the step time is the measurement, not the loss.
func.func @cnn_bench(
    %x: tensor<128x3x32x32xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<128xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<64x3x3x3xf32> {amp.role = "param", amp.name = "conv1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b1: tensor<64xf32> {amp.role = "param", amp.name = "conv1.bias", amp.init = #amp.init<zeros>},
    %w2: tensor<128x64x3x3xf32> {amp.role = "param", amp.name = "conv2.weight", amp.init = #amp.init<kaiming_uniform, seed = 2>},
    %b2: tensor<128xf32> {amp.role = "param", amp.name = "conv2.bias", amp.init = #amp.init<zeros>},
    %w3: tensor<10x8192xf32> {amp.role = "param", amp.name = "fc.weight", amp.init = #amp.init<kaiming_uniform, seed = 3>},
    %b3: tensor<10xf32> {amp.role = "param", amp.name = "fc.bias", amp.init = #amp.init<zeros>})
    -> (tensor<f32>, tensor<128x10xf32>) {
  %c1 = amp.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1>} : tensor<128x3x32x32xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>
  %r1 = amp.relu %c1 : tensor<128x64x32x32xf32>
  %p1 = amp.max_pool2d %r1 kernel = [2, 2] : tensor<128x64x32x32xf32>
  %c2 = amp.conv2d %p1, %w2, %b2 {padding = array<i64: 1, 1>} : tensor<128x64x16x16xf32>, tensor<128x64x3x3xf32>, tensor<128xf32>
  %r2 = amp.relu %c2 : tensor<128x128x16x16xf32>
  %p2 = amp.avg_pool2d %r2 kernel = [2, 2] : tensor<128x128x16x16xf32>
  %f = amp.reshape %p2 : tensor<128x128x8x8xf32> -> tensor<128x8192xf32>
  %logits = amp.linear %f, %w3, %b3 : tensor<128x8192xf32>, tensor<10x8192xf32>, tensor<10xf32>
  %loss = amp.cross_entropy %logits, %y : tensor<128x10xf32>, tensor<128xi64>
  return %loss, %logits : tensor<f32>, tensor<128x10xf32>
}
