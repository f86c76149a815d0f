// amp-fuse: elementwise chains over one iteration space become amp.fused regions; values read
// outside become region results; non-elementwise ops and trailing-dim broadcasts end a chain.
//
// RUN: amp-opt --split-input-file --amp-fuse %s | FileCheck %s
// That a region computes the unfused chain's bits is checked by the unit tests of the devices
// (FusedKernelTest).

// A cast, a broadcast bias add and a relu share one iteration space: one region, the cast folded.
// CHECK-LABEL: func.func @bias_relu
// CHECK-NEXT: %[[R:.*]] = amp.fused "bias_relu.k0"(%arg0, %arg1) : (tensor<8x16xbf16>, tensor<16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<8x16xbf16>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT: %[[C:.*]] = amp.cast %[[X]] : tensor<8x16xbf16> to tensor<8x16xf32>
// CHECK-NEXT: %[[A:.*]] = amp.add %[[C]], %[[B]] : tensor<8x16xf32>, tensor<16xf32>
// CHECK-NEXT: %[[Y:.*]] = amp.relu %[[A]] : tensor<8x16xf32>
// CHECK-NEXT: amp.yield %[[Y]] : tensor<8x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
func.func @bias_relu(%x: tensor<8x16xbf16>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %0 = amp.cast %x : tensor<8x16xbf16> to tensor<8x16xf32>
  %1 = amp.add %0, %b : tensor<8x16xf32>, tensor<16xf32>
  %2 = amp.relu %1 : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// -----

// A value read after the chain (by the return) becomes a second result of the region.
// CHECK-LABEL: func.func @two_results
// CHECK-NEXT: %[[R:.*]]:2 = amp.fused "two_results.k0"(%arg0, %arg1)
// CHECK: %[[M:.*]] = amp.mul
// CHECK-NEXT: %[[T:.*]] = amp.tanh %[[M]]
// CHECK-NEXT: %[[N:.*]] = amp.neg %[[T]]
// CHECK-NEXT: amp.yield %[[M]], %[[N]]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @two_results(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = amp.mul %x, %y : tensor<4x4xf32>, tensor<4x4xf32>
  %1 = amp.tanh %0 : tensor<4x4xf32>
  %2 = amp.neg %1 : tensor<4x4xf32>
  return %0, %2 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A lone elementwise op stays as it is; a matmul is not elementwise: the chain after it is a
// region of its own.
// CHECK-LABEL: func.func @single_and_matmul
// CHECK-NEXT: %[[A:.*]] = amp.relu %arg0
// CHECK-NEXT: %[[M:.*]] = amp.matmul %[[A]], %arg1
// CHECK-NEXT: %[[R:.*]] = amp.fused "single_and_matmul.k0"(%[[M]]) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: amp.tanh
// CHECK-NEXT: amp.neg
// CHECK-NEXT: amp.yield
// CHECK: return %[[R]]
func.func @single_and_matmul(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = amp.relu %x : tensor<4x4xf32>
  %1 = amp.matmul %0, %w : tensor<4x4xf32>, tensor<4x4xf32>
  %2 = amp.tanh %1 : tensor<4x4xf32>
  %3 = amp.neg %2 : tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// A broadcast along a trailing dim ([4, 1] against [4, 8]) is not a leading-dim broadcast: the add
// does not join the tanh's region.
// CHECK-LABEL: func.func @trailing_broadcast
// CHECK-NOT: amp.fused
// CHECK: return
func.func @trailing_broadcast(%x: tensor<4x8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = amp.tanh %x : tensor<4x8xf32>
  %1 = amp.add %0, %c : tensor<4x8xf32>, tensor<4x1xf32>
  %2 = amp.exp %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// GEMM epilogue: a relu that is the only reader of a linear layer's result becomes its activation.
// CHECK-LABEL: func.func @linear_relu_epilogue
// CHECK-NEXT: %[[Y:.*]] = amp.linear %arg0, %arg1, %arg2 transpose_w = false activation = relu
// CHECK-NEXT: return %[[Y]]
func.func @linear_relu_epilogue(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %0 = amp.linear %x, %w, %b transpose_w = false : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>
  %1 = amp.relu %0 : tensor<4x16xbf16>
  return %1 : tensor<4x16xbf16>
}

// -----

// The pre-activation is read elsewhere too: no fold (the layer would have to write both).
// CHECK-LABEL: func.func @linear_relu_preactivation_read
// CHECK: amp.linear %arg0, %arg1 transpose_w = false :
// CHECK: amp.relu
func.func @linear_relu_preactivation_read(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = amp.linear %x, %w transpose_w = false : tensor<4x8xf32>, tensor<8x16xf32>
  %1 = amp.relu %0 : tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A row reduction (a bias gradient: column sums over all but the last dim) closes the region. The
// region is placed at its last elementwise op, before the GEMM that reads the mask's output.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: %[[R:.*]]:2 = amp.fused "bias_gradient.k0"(%arg0, %{{.*}}, %arg1) : (tensor<8x16xf32>, tensor<f32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK: amp.compare gt
// CHECK-NEXT: %[[DZ:.*]] = amp.select
// CHECK-NEXT: %[[DB:.*]] = amp.reduce_sum %[[DZ]] dims = [0]
// CHECK-NEXT: amp.yield %[[DZ]], %[[DB]] : tensor<8x16xf32>, tensor<16xf32>
// CHECK: amp.matmul %[[R]]#0, %arg2
// CHECK: return %{{.*}}, %[[R]]#1
func.func @bias_gradient(%y: tensor<8x16xf32>, %dy: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<16xf32>) {
  %zero = amp.constant dense<0.000000e+00> : tensor<f32>
  %m = amp.compare gt, %y, %zero : tensor<8x16xf32>, tensor<f32>
  %dz = amp.select %m, %dy, %zero : tensor<8x16xi1>, tensor<8x16xf32>, tensor<f32>
  %dx = amp.matmul %dz, %w : tensor<8x16xf32>, tensor<16x4xf32>
  %db = amp.reduce_sum %dz dims = [0] : tensor<8x16xf32>
  return %dx, %db : tensor<8x4xf32>, tensor<16xf32>
}

// -----

// Only a sum over all leading dims closes a region: a sum over the last dim does not join.
// CHECK-LABEL: func.func @row_sums_stay_apart
// CHECK: amp.fused
// CHECK: amp.yield
// CHECK-NEXT: }
// CHECK-NEXT: amp.reduce_sum %{{.*}} dims = [1]
func.func @row_sums_stay_apart(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8xf32> {
  %0 = amp.mul %x, %y : tensor<8x16xf32>, tensor<8x16xf32>
  %1 = amp.tanh %0 : tensor<8x16xf32>
  %2 = amp.reduce_sum %1 dims = [1] : tensor<8x16xf32>
  return %2 : tensor<8xf32>
}
