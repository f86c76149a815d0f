// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reshape' op element count must not change: [4, 8] has 32, [30] has 30}}
  %0 = amp.reshape %x : tensor<4x8xf32> -> tensor<30xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reshape' op element type must not change ('f32' -> 'f16'); use amp.cast}}
  %0 = amp.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.reshape' op result #0 must be statically shaped tensor}}
  %0 = amp.reshape %x : tensor<4x8xf32> -> tensor<?xf32>
  return
}

// -----

func.func @transpose_count(%x: tensor<4x8x2xf32>) {
  // expected-error @+1 {{'amp.transpose' op permutation has 2 entries but the input has rank 3}}
  %0 = amp.transpose %x permutation = [1, 0] : tensor<4x8x2xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.transpose' op permutation entry 2 is out of range for rank 2}}
  %0 = amp.transpose %x permutation = [2, 0] : tensor<4x8xf32>
  return
}

// -----

func.func @transpose_repeated(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.transpose' op permutation entry 0 is repeated}}
  %0 = amp.transpose %x permutation = [0, 0] : tensor<4x8xf32>
  return
}

// -----

func.func @transpose_missing_permutation(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.transpose' op requires attribute 'permutation'}}
  %0 = "amp.transpose"(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @broadcast_to_shape(%x: tensor<3xf32>) {
  // expected-error @+1 {{'amp.broadcast_to' op shape [3] does not broadcast to [8, 4]}}
  %0 = amp.broadcast_to %x : tensor<3xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @broadcast_to_lower_rank(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'amp.broadcast_to' op shape [2, 4] does not broadcast to [4]}}
  %0 = amp.broadcast_to %x : tensor<2x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'amp.broadcast_to' op element type must not change ('f32' -> 'bf16')}}
  %0 = amp.broadcast_to %x : tensor<4xf32> -> tensor<2x4xbf16>
  return
}

// -----

func.func @slice_start_after_limit(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.slice' op dimension 1: need 0 <= start (5) <= limit (3) <= size (8)}}
  %0 = amp.slice %x starts = [0, 5] limits = [4, 3] : tensor<4x8xf32>
  return
}

// -----

func.func @slice_limit_past_end(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.slice' op dimension 0: need 0 <= start (0) <= limit (5) <= size (4)}}
  %0 = amp.slice %x starts = [0, 0] limits = [5, 8] : tensor<4x8xf32>
  return
}

// -----

func.func @slice_negative_start(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.slice' op dimension 0: need 0 <= start (-1) <= limit (4) <= size (4)}}
  %0 = amp.slice %x starts = [-1, 0] limits = [4, 8] : tensor<4x8xf32>
  return
}

// -----

func.func @slice_stride_zero(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.slice' op dimension 1: stride must be >= 1, got 0}}
  %0 = amp.slice %x starts = [0, 0] limits = [4, 8] strides = [1, 0] : tensor<4x8xf32>
  return
}

// -----

func.func @slice_starts_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.slice' op starts, limits and strides need one entry per dimension (rank 2)}}
  %0 = amp.slice %x starts = [0] limits = [4, 8] : tensor<4x8xf32>
  return
}

// -----

func.func @slice_strides_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.slice' op starts, limits and strides need one entry per dimension (rank 2)}}
  %0 = amp.slice %x starts = [0, 0] limits = [4, 8] strides = [2] : tensor<4x8xf32>
  return
}

// -----

func.func @concat_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.concat' op axis 2 is out of range for rank 2}}
  %0 = amp.concat %x, %x axis = 2 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @concat_axis_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.concat' op axis -1 is out of range for rank 2}}
  %0 = amp.concat %x, %x axis = -1 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @concat_shape(%x: tensor<4x8xf32>, %y: tensor<3x2xf32>) {
  // expected-error @+1 {{'amp.concat' op input #1 differs from input #0 in dimension 0 (3 vs 4), which is not the concat axis}}
  %0 = amp.concat %x, %y axis = 1 : tensor<4x8xf32>, tensor<3x2xf32>
  return
}

// -----

func.func @concat_element_type(%x: tensor<4x8xf32>, %y: tensor<4x8xf16>) {
  // expected-error @+1 {{'amp.concat' op input #1 ('tensor<4x8xf16>') must have the element type and rank of input #0 ('tensor<4x8xf32>')}}
  %0 = amp.concat %x, %y axis = 0 : tensor<4x8xf32>, tensor<4x8xf16>
  return
}

// -----

func.func @concat_rank(%x: tensor<4x8xf32>, %y: tensor<4x8x1xf32>, %z: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.concat' op input #2 ('tensor<4x8x1xf32>') must have the element type and rank of input #0 ('tensor<4x8xf32>')}}
  %0 = amp.concat %x, %z, %y axis = 0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8x1xf32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+2 {{'amp.concat' op needs at least one input}}
  // expected-error @+1 {{'amp.concat' op failed to infer returned types}}
  %0 = "amp.concat"() <{axis = 0 : i64}> : () -> tensor<4xf32>
  return
}

// -----

func.func @embedding_table_rank(%t: tensor<256xf32>, %ids: tensor<8xi64>) {
  // expected-error @+1 {{'amp.embedding' op table must be [V, D] (rank 2), got rank 1}}
  %0 = amp.embedding %t[%ids] : tensor<256xf32>, tensor<8xi64>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<256x64xf32>, %ids: tensor<8xf32>) {
  // expected-error @+1 {{'amp.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = amp.embedding %t[%ids] : tensor<256x64xf32>, tensor<8xf32>
  return
}

// -----

func.func @embedding_i16_ids(%t: tensor<256x64xf32>, %ids: tensor<8xi16>) {
  // expected-error @+1 {{'amp.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xi16>'}}
  %0 = amp.embedding %t[%ids] : tensor<256x64xf32>, tensor<8xi16>
  return
}

// -----

func.func @embedding_integer_table(%t: tensor<256x64xi32>, %ids: tensor<8xi32>) {
  // expected-error @+1 {{'amp.embedding' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<256x64xi32>'}}
  %0 = amp.embedding %t[%ids] : tensor<256x64xi32>, tensor<8xi32>
  return
}

// -----

func.func @dropout_rate_one(%x: tensor<8xf32>) {
  // expected-error @+1 {{'amp.dropout' op rate must be in [0, 1), got 1.000000e+00}}
  %0 = amp.dropout %x rate = 1.0 seed = 0 : tensor<8xf32>
  return
}

// -----

func.func @dropout_rate_negative(%x: tensor<8xf32>) {
  // expected-error @+1 {{'amp.dropout' op rate must be in [0, 1), got -1.000000e-01}}
  %0 = amp.dropout %x rate = -0.1 seed = 0 : tensor<8xf32>
  return
}

// -----

func.func @dropout_seed_negative(%x: tensor<8xf32>) {
  // expected-error @+1 {{'amp.dropout' op seed must be non-negative, got -3}}
  %0 = amp.dropout %x rate = 0.5 seed = -3 : tensor<8xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'amp.cast' op shape must not change: [4, 8] -> [32]}}
  %0 = amp.cast %x : tensor<4x8xf32> to tensor<32xbf16>
  return
}

// -----

func.func @cast_to_integer(%x: tensor<4xf32>) {
  // expected-error @+1 {{'amp.cast' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = amp.cast %x : tensor<4xf32> to tensor<4xi32>
  return
}

// -----

func.func @cast_f64(%x: tensor<4xf64>) {
  // expected-error @+1 {{'amp.cast' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xf64>'}}
  %0 = amp.cast %x : tensor<4xf64> to tensor<4xf32>
  return
}
