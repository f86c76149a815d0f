// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @matmul_rank1(%x: tensor<8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'amp.matmul' op operands must have rank >= 2, got ranks 1 and 2}}
  %0 = amp.matmul %x, %w : tensor<8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @matmul_k_mismatch(%x: tensor<4x8xf32>, %w: tensor<7x4xf32>) {
  // expected-error @+1 {{'amp.matmul' op contraction dimensions differ: lhs [4, 8] gives K = 8, rhs [7, 4] gives K = 7}}
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<7x4xf32>
  return
}

// -----

// transpose_b reads K from the last dimension of rhs.
func.func @matmul_k_mismatch_transposed(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'amp.matmul' op contraction dimensions differ: lhs [4, 8] gives K = 8, rhs [8, 4] gives K = 4}}
  %0 = amp.matmul %x, %w transpose_b : tensor<4x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @matmul_k_mismatch_transpose_a(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'amp.matmul' op contraction dimensions differ: lhs [4, 8] gives K = 4, rhs [8, 4] gives K = 8}}
  %0 = amp.matmul %x, %w {transpose_a} : tensor<4x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @matmul_batch_mismatch(%x: tensor<2x4x8xf32>, %w: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'amp.matmul' op batch dimensions [2] and [3] are not broadcast-compatible}}
  %0 = amp.matmul %x, %w : tensor<2x4x8xf32>, tensor<3x8x4xf32>
  return
}

// -----

func.func @matmul_element_types(%x: tensor<4x8xf32>, %w: tensor<8x4xbf16>) {
  // expected-error @+1 {{'amp.matmul' op operands must have the same element type, got 'f32' and 'bf16'}}
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x4xbf16>
  return
}

// -----

func.func @matmul_f8(%x: tensor<4x8xf8E5M2>, %w: tensor<8x4xf8E5M2>) {
  // expected-error @+1 {{'amp.matmul' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = amp.matmul %x, %w : tensor<4x8xf8E5M2>, tensor<8x4xf8E5M2>
  return
}

// -----

func.func @matmul_dynamic(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'amp.matmul' op operand #0 must be statically shaped tensor}}
  %0 = amp.matmul %x, %w : tensor<?x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @linear_input_rank(%x: tensor<8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.linear' op input must be [..., in] with rank >= 2, got 'tensor<8xf32>'}}
  %0 = amp.linear %x, %w : tensor<8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'amp.linear' op weight must be [out, in] (transpose_w = true) (rank 2), got 'tensor<1x4x8xf32>'}}
  %0 = amp.linear %x, %w : tensor<2x8xf32>, tensor<1x4x8xf32>
  return
}

// -----

// The default layout is PyTorch's [out, in]: a [in, out] weight needs transpose_w = false.
func.func @linear_in_features(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'amp.linear' op input [2, 8] has 8 features but weight [8, 4] read as [out, in] (transpose_w = true) takes in = 4}}
  %0 = amp.linear %x, %w : tensor<2x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @linear_in_features_in_out(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.linear' op input [2, 8] has 8 features but weight [4, 8] read as [in, out] (transpose_w = false) takes in = 4}}
  %0 = amp.linear %x, %w transpose_w = false : tensor<2x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @linear_element_types(%x: tensor<2x8xbf16>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.linear' op input, weight and bias must have one element type, got 'bf16' and 'f32' (insert an amp.cast)}}
  %0 = amp.linear %x, %w : tensor<2x8xbf16>, tensor<4x8xf32>
  return
}

// -----

// PyTorch's addmm under autocast casts the bias too: a bf16 linear has a bf16 bias.
func.func @linear_bias_element_type(%x: tensor<2x8xbf16>, %w: tensor<4x8xbf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'amp.linear' op input, weight and bias must have one element type, got 'bf16' and bias 'f32' (insert an amp.cast)}}
  %0 = amp.linear %x, %w, %b : tensor<2x8xbf16>, tensor<4x8xbf16>, tensor<4xf32>
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'amp.linear' op bias must be [out] = [4], got 'tensor<8xf32>'}}
  %0 = amp.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_bias_rank(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{'amp.linear' op bias must be [out] = [4], got 'tensor<1x4xf32>'}}
  %0 = amp.linear %x, %w, %b transpose_w = false : tensor<2x8xf32>, tensor<8x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @linear_integer(%x: tensor<2x8xi32>, %w: tensor<4x8xi32>) {
  // expected-error @+1 {{'amp.linear' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = amp.linear %x, %w : tensor<2x8xi32>, tensor<4x8xi32>
  return
}

// -----

func.func @linear_wrong_result(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{'amp.linear' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error @+1 {{'amp.linear' op failed to infer returned types}}
  %0 = "amp.linear"(%x, %w) : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_bad_transpose_attr(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{invalid properties {transpose_w = 1 : i64} for op amp.linear: Invalid attribute `transpose_w` in property conversion}}
  %0 = "amp.linear"(%x, %w) <{transpose_w = 1 : i64}> : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @conv2d_rank(%x: tensor<3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op input [N,C,H,W] and weight [O,C/groups,KH,KW] must have rank 4, got ranks 3 and 4}}
  %0 = amp.conv2d %x, %w : tensor<3x32x32xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv2d_element_types(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+1 {{'amp.conv2d' op input and weight must have the same element type, got 'f32' and 'f16'}}
  %0 = amp.conv2d %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>
  return
}

// -----

func.func @conv2d_stride_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op stride entries must be >= 1, got [0, 1]}}
  %0 = amp.conv2d %x, %w {stride = array<i64: 0, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv2d_stride_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op stride must have 2 entries (h, w), got 1}}
  %0 = amp.conv2d %x, %w {stride = array<i64: 2>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv2d_padding_negative(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op padding entries must be >= 0, got [1, -1]}}
  %0 = amp.conv2d %x, %w {padding = array<i64: 1, -1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv2d_dilation_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op dilation entries must be >= 1, got [0, 0]}}
  %0 = amp.conv2d %x, %w {dilation = array<i64: 0, 0>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv2d_groups_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op groups = 0 must be >= 1 and divide input channels 4 and output channels 4}}
  %0 = amp.conv2d %x, %w {groups = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>
  return
}

// -----

func.func @conv2d_groups_input_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<8x1x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op groups = 4 must be >= 1 and divide input channels 6 and output channels 8}}
  %0 = amp.conv2d %x, %w {groups = 4 : i64} : tensor<1x6x8x8xf32>, tensor<8x1x3x3xf32>
  return
}

// -----

func.func @conv2d_groups_output_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op groups = 4 must be >= 1 and divide input channels 4 and output channels 6}}
  %0 = amp.conv2d %x, %w {groups = 4 : i64} : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>
  return
}

// -----

func.func @conv2d_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op weight has 2 input channels per group but input has 3 channels in 1 group(s)}}
  %0 = amp.conv2d %x, %w : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>
  return
}

// -----

func.func @conv2d_channels_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op weight has 4 input channels per group but input has 4 channels in 2 group(s)}}
  %0 = amp.conv2d %x, %w {groups = 2 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>
  return
}

// -----

func.func @conv2d_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op bias must be [4] of 'f32', got 'tensor<3xf32>'}}
  %0 = amp.conv2d %x, %w, %b : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @conv2d_bias_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{'amp.conv2d' op bias must be [4] of 'f32', got 'tensor<1x4xf32>'}}
  %0 = amp.conv2d %x, %w, %b : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @conv2d_bias_element_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'amp.conv2d' op bias must be [4] of 'f32', got 'tensor<4xbf16>'}}
  %0 = amp.conv2d %x, %w, %b : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xbf16>
  return
}

// -----

func.func @conv2d_window_too_big(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x5x5xf32>) {
  // expected-error @+1 {{'amp.conv2d' op kernel [5, 5] does not fit the padded input [4, 4]}}
  %0 = amp.conv2d %x, %w : tensor<1x3x4x4xf32>, tensor<4x3x5x5xf32>
  return
}

// -----

// Dilation widens the window: 2*(3-1)+1 = 5 > 4.
func.func @conv2d_dilated_window_too_big(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'amp.conv2d' op kernel [3, 3] does not fit the padded input [4, 4]}}
  %0 = amp.conv2d %x, %w {dilation = array<i64: 2, 2>} : tensor<1x3x4x4xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv2d_wrong_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'amp.conv2d' op inferred type(s) 'tensor<1x4x8x8xf32>' are incompatible with return type(s) of operation 'tensor<1x4x6x6xf32>'}}
  // expected-error @+1 {{'amp.conv2d' op failed to infer returned types}}
  %0 = "amp.conv2d"(%x, %w) <{padding = array<i64: 1, 1>}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<16x32x32xf32>) {
  // expected-error @+1 {{'amp.max_pool2d' op input must be NCHW (rank 4), got rank 3}}
  %0 = amp.max_pool2d %x kernel = [2, 2] : tensor<16x32x32xf32>
  return
}

// -----

func.func @pool_kernel_count(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'amp.avg_pool2d' op kernel must have 2 entries (h, w), got 3}}
  %0 = amp.avg_pool2d %x kernel = [2, 2, 2] : tensor<1x1x8x8xf32>
  return
}

// -----

func.func @pool_kernel_zero(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'amp.max_pool2d' op kernel entries must be >= 1, got [0, 2]}}
  %0 = amp.max_pool2d %x kernel = [0, 2] : tensor<1x1x8x8xf32>
  return
}

// -----

func.func @pool_stride_zero(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'amp.avg_pool2d' op stride entries must be >= 1, got [2, 0]}}
  %0 = amp.avg_pool2d %x kernel = [2, 2] stride = [2, 0] : tensor<1x1x8x8xf32>
  return
}

// -----

func.func @pool_padding_negative(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'amp.max_pool2d' op padding entries must be >= 0, got [-1, 0]}}
  %0 = amp.max_pool2d %x kernel = [2, 2] {padding = array<i64: -1, 0>} : tensor<1x1x8x8xf32>
  return
}

// -----

func.func @pool_padding_over_half(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'amp.avg_pool2d' op padding [2, 0] must be at most half the kernel [3, 3]}}
  %0 = amp.avg_pool2d %x kernel = [3, 3] {padding = array<i64: 2, 0>} : tensor<1x1x8x8xf32>
  return
}

// -----

func.func @pool_window_too_big(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'amp.max_pool2d' op kernel [5, 2] does not fit the padded input [4, 4]}}
  %0 = amp.max_pool2d %x kernel = [5, 2] : tensor<1x1x4x4xf32>
  return
}

// -----

func.func @pool_missing_kernel(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'amp.max_pool2d' op requires attribute 'kernel'}}
  %0 = "amp.max_pool2d"(%x) : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @pool_integer(%x: tensor<1x1x4x4xi32>) {
  // expected-error @+1 {{'amp.avg_pool2d' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1x1x4x4xi32>'}}
  %0 = amp.avg_pool2d %x kernel = [2, 2] : tensor<1x1x4x4xi32>
  return
}
