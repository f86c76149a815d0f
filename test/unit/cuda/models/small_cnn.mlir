// A small CNN for the cuda device's convolution and pooling kernels (test/unit/cuda): conv 3x3
// (padding 1) + relu + 2x2 max pool, a strided conv + relu + 2x2 average pool, then a linear
// classifier with softmax cross-entropy. Batch 4 of 1x12x12 images, 10 classes.
func.func @small_cnn(
    %x: tensor<4x1x12x12xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<4xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<6x1x3x3xf32> {amp.role = "param", amp.name = "conv1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b1: tensor<6xf32> {amp.role = "param", amp.name = "conv1.bias", amp.init = #amp.init<zeros>},
    %w2: tensor<8x6x3x3xf32> {amp.role = "param", amp.name = "conv2.weight", amp.init = #amp.init<kaiming_uniform, seed = 2>},
    %w3: tensor<8x10xf32> {amp.role = "param", amp.name = "fc.weight", amp.init = #amp.init<kaiming_uniform, seed = 3>},
    %b3: tensor<10xf32> {amp.role = "param", amp.name = "fc.bias", amp.init = #amp.init<zeros>})
    -> (tensor<f32>, tensor<4x10xf32>) {
  %c1 = amp.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1>} : tensor<4x1x12x12xf32>, tensor<6x1x3x3xf32>, tensor<6xf32>
  %r1 = amp.relu %c1 : tensor<4x6x12x12xf32>
  %p1 = amp.max_pool2d %r1 kernel = [2, 2] : tensor<4x6x12x12xf32>
  %c2 = amp.conv2d %p1, %w2 {stride = array<i64: 2, 2>} : tensor<4x6x6x6xf32>, tensor<8x6x3x3xf32>
  %r2 = amp.relu %c2 : tensor<4x8x2x2xf32>
  %p2 = amp.avg_pool2d %r2 kernel = [2, 2] : tensor<4x8x2x2xf32>
  %f = amp.reshape %p2 : tensor<4x8x1x1xf32> -> tensor<4x8xf32>
  %logits = amp.linear %f, %w3, %b3 transpose_w = false : tensor<4x8xf32>, tensor<8x10xf32>, tensor<10xf32>
  %loss = amp.cross_entropy %logits, %y : tensor<4x10xf32>, tensor<4xi64>
  return %loss, %logits : tensor<f32>, tensor<4x10xf32>
}
