// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @reduce_dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reduce_sum' op dims entry 2 is out of range for rank 2}}
  %0 = amp.reduce_sum %x dims = [2] : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_dim_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reduce_mean' op dims entry -1 is out of range for rank 2}}
  %0 = amp.reduce_mean %x dims = [-1] : tensor<4x8xf32>
  return
}

// -----

// The runtime reads reduce dims in ascending order: the compiler refuses any other order.
func.func @reduce_dims_unsorted(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reduce_sum' op dims must be in ascending order}}
  %0 = amp.reduce_sum %x dims = [1, 0] : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_dim_repeated(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reduce_max' op dims entry 1 is repeated}}
  %0 = amp.reduce_max %x dims = [1, 0, 1] : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_dims_empty(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reduce_sum' op dims must name at least one dimension}}
  %0 = amp.reduce_sum %x dims = [] : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_rank0(%x: tensor<f32>) {
  // expected-error @+1 {{'amp.reduce_sum' op dims entry 0 is out of range for rank 0}}
  %0 = amp.reduce_sum %x dims = [0] : tensor<f32>
  return
}

// -----

func.func @reduce_missing_dims(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reduce_mean' op requires attribute 'dims'}}
  %0 = "amp.reduce_mean"(%x) : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_keepdim_result(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'amp.reduce_sum' op inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'amp.reduce_sum' op failed to infer returned types}}
  %0 = "amp.reduce_sum"(%x) <{dims = array<i64: 1>, keepdim}> : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_integer(%x: tensor<4xi64>) {
  // expected-error @+1 {{'amp.reduce_sum' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi64>'}}
  %0 = amp.reduce_sum %x dims = [0] : tensor<4xi64>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.softmax' op axis 2 is out of range for rank 2}}
  %0 = amp.softmax %x axis = 2 : tensor<4x10xf32>
  return
}

// -----

func.func @softmax_axis_negative(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.softmax' op axis -1 is out of range for rank 2}}
  %0 = amp.softmax %x axis = -1 : tensor<4x10xf32>
  return
}

// -----

func.func @softmax_rank0(%x: tensor<f32>) {
  // expected-error @+1 {{'amp.softmax' op axis 0 is out of range for rank 0}}
  %0 = amp.softmax %x axis = 0 : tensor<f32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.log_softmax' op axis 5 is out of range for rank 2}}
  %0 = amp.log_softmax %x axis = 5 : tensor<4x10xf32>
  return
}

// -----

func.func @softmax_result_type(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.softmax' op failed to verify that all of {input, result} have same type}}
  %0 = "amp.softmax"(%x) <{axis = 1 : i64}> : (tensor<4x10xf32>) -> tensor<4x10xbf16>
  return
}

// -----

func.func @layer_norm_ndim_zero(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op normalized_ndim must be in [1, 2], got 0}}
  %0 = amp.layer_norm %x {normalized_ndim = 0 : i64} : tensor<8x64xf32>
  return
}

// -----

func.func @layer_norm_ndim_too_big(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op normalized_ndim must be in [1, 2], got 3}}
  %0 = amp.layer_norm %x {normalized_ndim = 3 : i64} : tensor<8x64xf32>
  return
}

// -----

func.func @layer_norm_rank0(%x: tensor<f32>) {
  // expected-error @+1 {{'amp.layer_norm' op normalized_ndim must be in [1, 0], got 1}}
  %0 = amp.layer_norm %x : tensor<f32>
  return
}

// -----

func.func @layer_norm_eps_zero(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op eps must be positive, got 0}}
  %0 = amp.layer_norm %x {eps = 0.0 : f64} : tensor<8x64xf32>
  return
}

// -----

func.func @layer_norm_eps_negative(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op eps must be positive, got -1.000000e-05}}
  %0 = amp.layer_norm %x {eps = -1.0e-5 : f64} : tensor<8x64xf32>
  return
}

// -----

func.func @layer_norm_weight_shape(%x: tensor<8x16x64xf32>, %g: tensor<16x64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op weight must have the normalised shape [64] and element type 'f32', got 'tensor<16x64xf32>'}}
  %0 = amp.layer_norm %x weight(%g : tensor<16x64xf32>) : tensor<8x16x64xf32>
  return
}

// -----

func.func @layer_norm_weight_shape_ndim2(%x: tensor<8x16x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op weight must have the normalised shape [16, 64] and element type 'f32', got 'tensor<64xf32>'}}
  %0 = amp.layer_norm %x weight(%g : tensor<64xf32>) {normalized_ndim = 2 : i64} : tensor<8x16x64xf32>
  return
}

// -----

func.func @layer_norm_weight_element_type(%x: tensor<8x64xbf16>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op weight must have the normalised shape [64] and element type 'bf16', got 'tensor<64xf32>'}}
  %0 = amp.layer_norm %x weight(%g : tensor<64xf32>) : tensor<8x64xbf16>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'amp.layer_norm' op bias must have the normalised shape [64] and element type 'f32', got 'tensor<8xf32>'}}
  %0 = amp.layer_norm %x weight(%g : tensor<64xf32>) bias(%b : tensor<8xf32>) : tensor<8x64xf32>
  return
}

// -----

func.func @rms_norm_ndim(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'amp.rms_norm' op normalized_ndim must be in [1, 2], got 4}}
  %0 = amp.rms_norm %x {normalized_ndim = 4 : i64} : tensor<8x64xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'amp.rms_norm' op eps must be positive, got 0}}
  %0 = amp.rms_norm %x {eps = 0.0 : f64} : tensor<8x64xf32>
  return
}

// -----

func.func @rms_norm_weight_shape(%x: tensor<8x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'amp.rms_norm' op weight must have the normalised shape [64] and element type 'f32', got 'tensor<32xf32>'}}
  %0 = amp.rms_norm %x weight(%g : tensor<32xf32>) : tensor<8x64xf32>
  return
}

// -----

func.func @rms_norm_weight_element_type(%x: tensor<8x64xf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{'amp.rms_norm' op weight must have the normalised shape [64] and element type 'f16', got 'tensor<64xbf16>'}}
  %0 = amp.rms_norm %x weight(%g : tensor<64xbf16>) : tensor<8x64xf16>
  return
}

// -----

func.func @softmax_grad_axis(%y: tensor<4x10xf32>, %dy: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.softmax_grad' op axis 2 is out of range for rank 2}}
  %0 = amp.softmax_grad %y, %dy axis = 2 : tensor<4x10xf32>, tensor<4x10xf32>
  return
}

// -----

func.func @softmax_grad_axis_negative(%y: tensor<4x10xf32>, %dy: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.softmax_grad' op axis -1 is out of range for rank 2}}
  %0 = amp.softmax_grad %y, %dy axis = -1 : tensor<4x10xf32>, tensor<4x10xf32>
  return
}

// -----

func.func @softmax_grad_shapes(%y: tensor<4x10xf32>, %dy: tensor<4x9xf32>) {
  // expected-error @+1 {{'amp.softmax_grad' op output and grad must have the same shape, got 'tensor<4x10xf32>' and 'tensor<4x9xf32>'}}
  %0 = amp.softmax_grad %y, %dy axis = 1 : tensor<4x10xf32>, tensor<4x9xf32>
  return
}

// -----

// The cotangent is widened exactly: a type wider than the output's, or bf16 under f16, is refused.
func.func @softmax_grad_wider_grad(%y: tensor<4x10xbf16>, %dy: tensor<4x10xf32>) {
  // expected-error @+1 {{'amp.softmax_grad' op grad's element type must be the output's, or bf16/f16 under an f32 output}}
  %0 = amp.softmax_grad %y, %dy axis = 1 : tensor<4x10xbf16>, tensor<4x10xf32>
  return
}

// -----

func.func @softmax_grad_bf16_under_f16(%y: tensor<4x10xf16>, %dy: tensor<4x10xbf16>) {
  // expected-error @+1 {{'amp.softmax_grad' op grad's element type must be the output's, or bf16/f16 under an f32 output}}
  %0 = amp.softmax_grad %y, %dy axis = 1 : tensor<4x10xf16>, tensor<4x10xbf16>
  return
}
