// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @ce_logits_rank(%l: tensor<8x32x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'amp.cross_entropy' op logits must be [N, C] (rank 2), got 'tensor<8x32x10xf32>'}}
  %0 = amp.cross_entropy %l, %y : tensor<8x32x10xf32>, tensor<8xi64>
  return
}

// -----

func.func @ce_labels_size(%l: tensor<32x10xf32>, %y: tensor<16xi64>) {
  // expected-error @+1 {{'amp.cross_entropy' op labels must be [32] to match logits [N, C], got 'tensor<16xi64>'}}
  %0 = amp.cross_entropy %l, %y : tensor<32x10xf32>, tensor<16xi64>
  return
}

// -----

func.func @ce_labels_rank(%l: tensor<32x10xf32>, %y: tensor<32x1xi32>) {
  // expected-error @+1 {{'amp.cross_entropy' op labels must be [32] to match logits [N, C], got 'tensor<32x1xi32>'}}
  %0 = amp.cross_entropy %l, %y : tensor<32x10xf32>, tensor<32x1xi32>
  return
}

// -----

func.func @ce_labels_float(%l: tensor<32x10xf32>, %y: tensor<32xf32>) {
  // expected-error @+1 {{'amp.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<32xf32>'}}
  %0 = amp.cross_entropy %l, %y : tensor<32x10xf32>, tensor<32xf32>
  return
}

// -----

func.func @ce_label_smoothing_big(%l: tensor<32x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+1 {{'amp.cross_entropy' op label_smoothing must be in [0, 1], got 1.500000e+00}}
  %0 = amp.cross_entropy %l, %y {label_smoothing = 1.5 : f64} : tensor<32x10xf32>, tensor<32xi64>
  return
}

// -----

func.func @ce_label_smoothing_negative(%l: tensor<32x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+1 {{'amp.cross_entropy' op label_smoothing must be in [0, 1], got -1.000000e-01}}
  %0 = amp.cross_entropy %l, %y {label_smoothing = -0.1 : f64} : tensor<32x10xf32>, tensor<32xi64>
  return
}

// -----

// The generic form reaches the same rule through the verifier.
func.func @ce_label_smoothing_generic(%l: tensor<32x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+2 {{'amp.cross_entropy' op label_smoothing must be in [0, 1], got 2.000000e+00}}
  // expected-error @+1 {{'amp.cross_entropy' op failed to infer returned types}}
  %0 = "amp.cross_entropy"(%l, %y) <{label_smoothing = 2.0 : f64}> : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @ce_result_type(%l: tensor<32x10xbf16>, %y: tensor<32xi64>) {
  // expected-error @+2 {{'amp.cross_entropy' op inferred type(s) 'tensor<bf16>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'amp.cross_entropy' op failed to infer returned types}}
  %0 = "amp.cross_entropy"(%l, %y) : (tensor<32x10xbf16>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @mse_shape_mismatch(%p: tensor<32x4xf32>, %t: tensor<32x1xf32>) {
  // expected-error @+1 {{'amp.mse_loss' op input and target must have the same type, got 'tensor<32x4xf32>' and 'tensor<32x1xf32>'}}
  %0 = amp.mse_loss %p, %t : tensor<32x4xf32>, tensor<32x1xf32>
  return
}

// -----

func.func @mse_element_mismatch(%p: tensor<32x4xf32>, %t: tensor<32x4xbf16>) {
  // expected-error @+1 {{'amp.mse_loss' op input and target must have the same type, got 'tensor<32x4xf32>' and 'tensor<32x4xbf16>'}}
  %0 = amp.mse_loss %p, %t : tensor<32x4xf32>, tensor<32x4xbf16>
  return
}

// -----

func.func @mse_integer(%p: tensor<4xi32>) {
  // expected-error @+1 {{'amp.mse_loss' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi32>'}}
  %0 = amp.mse_loss %p, %p : tensor<4xi32>, tensor<4xi32>
  return
}
