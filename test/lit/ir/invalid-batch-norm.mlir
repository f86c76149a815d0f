// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @rank1(%x: tensor<16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'amp.batch_norm' op input must be [N, C, ...] (rank >= 2), got 'tensor<16xf32>'}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%g, %g) training : tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @wrong_channels(%x: tensor<8x16x4x4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'amp.batch_norm' op scale, bias and running statistics must be 'tensor<16xf32>' (f32, one per channel of 'tensor<8x16x4x4xf32>'), got 'tensor<8xf32>'}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%g, %g) training : tensor<8x16x4x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @low_precision_scale(%x: tensor<8x16x4x4xbf16>, %g: tensor<16xbf16>) {
  // expected-error @+1 {{'amp.batch_norm' op scale, bias and running statistics must be 'tensor<16xf32>'}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%g, %g) training : tensor<8x16x4x4xbf16>, tensor<16xbf16>
  return
}

// -----

func.func @epsilon_zero(%x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'amp.batch_norm' op epsilon must be positive, got 0}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%g, %g) {epsilon = 0.0 : f64} : tensor<8x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @momentum_out_of_range(%x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'amp.batch_norm' op momentum must be in [0, 1], got 1.5}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%g, %g) training {momentum = 1.5 : f64} : tensor<8x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @one_value_per_channel(%x: tensor<1x16x1x1xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'amp.batch_norm' op training needs more than one value per channel (the running variance is unbiased), got 'tensor<1x16x1x1xf32>'}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%g, %g) training : tensor<1x16x1x1xf32>, tensor<16xf32>
  return
}

// -----

func.func @mismatched_per_channel(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{all of {scale, bias, running_mean, running_var} have same type}}
  %y, %m, %v = "amp.batch_norm"(%x, %g, %b, %g, %g) : (tensor<8x16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @grad_wrong_type(%x: tensor<8x16xf32>, %dy: tensor<8x16xbf16>, %g: tensor<16xf32>) {
  // expected-error @+1 {{all of {input, grad} have same type}}
  %dx, %ds, %db = "amp.batch_norm_grad"(%x, %dy, %g, %g, %g) : (tensor<8x16xf32>, tensor<8x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}
