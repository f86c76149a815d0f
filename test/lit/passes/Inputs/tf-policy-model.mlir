// A model for the tensorflow-based policy file test (policy-overrides.json).
func.func @tf_file(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("body.fc1")
  %1 = amp.rsqrt %0 : tensor<4x8xf32> loc("body.rsqrt")
  %2 = amp.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("body.fc2")
  %3 = amp.reduce_sum %2 dims = [1] : tensor<4x8xf32> loc("body.sum")
  %4 = amp.exp %2 : tensor<4x8xf32> loc("body.exp")
  %5 = amp.matmul %4, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("head.fc")
  return %3, %5 : tensor<4xf32>, tensor<4x8xf32>
}
