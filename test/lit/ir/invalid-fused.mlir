// amp.fused verifier: body ops are elementwise, and a row reduction may only end the region.
// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @matmul_in_region(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = amp.fused "k"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'amp.matmul' op cannot be part of an amp.fused region}}
    %1 = amp.matmul %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
    amp.yield %1 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

func.func @reduction_read_in_region(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.fused "k"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @+1 {{'amp.reduce_sum' op in an amp.fused region may only be yielded}}
    %1 = amp.reduce_sum %a dims = [0] : tensor<4x8xf32>
    %2 = amp.add %a, %1 : tensor<4x8xf32>, tensor<8xf32>
    amp.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @row_sum_in_region(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = amp.fused "k"(%x) : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @+1 {{'amp.reduce_sum' op cannot be part of an amp.fused region}}
    %1 = amp.reduce_sum %a dims = [1] : tensor<4x8xf32>
    amp.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// The reduction ending a region: valid.
func.func @bias_gradient_region(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %0:2 = amp.fused "k"(%x) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = amp.relu %a : tensor<4x8xf32>
    %2 = amp.reduce_sum %1 dims = [0] : tensor<4x8xf32>
    amp.yield %1, %2 : tensor<4x8xf32>, tensor<8xf32>
  }
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Found by fuzz/pipeline.cpp (ASan: heap-buffer-overflow in FusedOp::verify, which took the
// terminator of an empty body): an empty body block is an error, as is no block at all.
func.func @empty_body(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'amp.fused' op body must end with amp.yield}}
  %0 = amp.fused "k"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @no_block(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'amp.fused' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  %0 = amp.fused "k"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  }
  return %0 : tensor<4x8xf32>
}

// -----

// amp.gemm_epilogue: each kind's operands and results (ir/AmpFusedOps.td).
func.func @epilogue_mixed_types(%x: tensor<8x16xbf16>, %w: tensor<16x32xf32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{'amp.gemm_epilogue' op operands must have one element type, got 'bf16' and 'f32'}}
  %0 = amp.gemm_epilogue gelu_aux %x, %w : tensor<8x16xbf16>, tensor<16x32xf32> -> tensor<8x32xbf16>
  return %0 : tensor<8x32xbf16>
}

// -----

func.func @epilogue_contraction(%x: tensor<8x16xf32>, %w: tensor<12x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'amp.gemm_epilogue' op contraction dimensions differ: lhs [8, 16] gives K = 16, rhs [12, 32] gives K = 12}}
  %0 = amp.gemm_epilogue gelu_bias %x, %w, %b : tensor<8x16xf32>, tensor<12x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_mask_type(%dy: tensor<8x16xf32>, %w: tensor<16x32xf32>, %m: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'amp.gemm_epilogue' op drelu's third operand (the ReLU mask) must be 'tensor<8x32xi1>', got 'tensor<8x32xf32>'}}
  %0 = amp.gemm_epilogue drelu %dy, %w, %m : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_missing_mask_result(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'amp.gemm_epilogue' op relu_aux_bias must give (tensor<8x32xf32>, tensor<8x32xi1>)}}
  %0 = amp.gemm_epilogue relu_aux_bias %x, %w, %b : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_bgrad_untransposed(%x: tensor<8x16xf32>, %dy: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>) {
  // expected-error @+1 {{'amp.gemm_epilogue' op bgrad_a sums lhs over K: lhs must be a transposed [K, M] matrix}}
  %0:2 = amp.gemm_epilogue bgrad_a %x, %dy : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>, tensor<32xf32>
  return %0#0, %0#1 : tensor<8x32xf32>, tensor<32xf32>
}

// -----

func.func @epilogue_forward_transposed(%x: tensor<16x8xf32>, %w: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xi1>) {
  // expected-error @+1 {{'amp.gemm_epilogue' op relu_aux is a linear layer: lhs not transposed, rhs a rank-2 weight}}
  %0:2 = amp.gemm_epilogue relu_aux %x, %w transpose_a : tensor<16x8xf32>, tensor<16x32xf32> -> tensor<8x32xf32>, tensor<8x32xi1>
  return %0#0, %0#1 : tensor<8x32xf32>, tensor<8x32xi1>
}
