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
