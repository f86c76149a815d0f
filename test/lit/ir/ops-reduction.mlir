// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4x8x16xf32>)
func.func @reduce(%x: tensor<4x8x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x1x16xf32>, tensor<8xf32>, tensor<1x8x1xf32>, tensor<f32>, tensor<1x1x1xf32>) {
  // CHECK: %[[S:.*]] = amp.reduce_sum %[[X]] dims = [1] : tensor<4x8x16xf32>
  %0 = amp.reduce_sum %x dims = [1] : tensor<4x8x16xf32>
  // CHECK: %[[SK:.*]] = amp.reduce_sum %[[X]] dims = [1] keepdim : tensor<4x8x16xf32>
  %1 = amp.reduce_sum %x dims = [1] keepdim : tensor<4x8x16xf32>
  // Several dimensions, in any order.
  // CHECK: %[[M:.*]] = amp.reduce_mean %[[X]] dims = [0, 2] : tensor<4x8x16xf32>
  %2 = amp.reduce_mean %x dims = [0, 2] : tensor<4x8x16xf32>
  // CHECK: %[[MK:.*]] = amp.reduce_mean %[[X]] dims = [0, 2] keepdim : tensor<4x8x16xf32>
  %3 = amp.reduce_mean %x dims = [0, 2] keepdim : tensor<4x8x16xf32>
  // All dimensions: a rank-0 result.
  // CHECK: %[[MX:.*]] = amp.reduce_max %[[X]] dims = [0, 1, 2] : tensor<4x8x16xf32>
  %4 = amp.reduce_max %x dims = [0, 1, 2] : tensor<4x8x16xf32>
  // keepdim spelled in the attr-dict is honoured by inference too.
  // CHECK: %[[MXK:.*]] = amp.reduce_max %[[X]] dims = [0, 1, 2] keepdim : tensor<4x8x16xf32>
  %5 = amp.reduce_max %x dims = [0, 1, 2] {keepdim} : tensor<4x8x16xf32>
  // CHECK: return %[[S]], %[[SK]], %[[M]], %[[MK]], %[[MX]], %[[MXK]] : tensor<4x16xf32>, tensor<4x1x16xf32>, tensor<8xf32>, tensor<1x8x1xf32>, tensor<f32>, tensor<1x1x1xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x16xf32>, tensor<4x1x16xf32>, tensor<8xf32>, tensor<1x8x1xf32>, tensor<f32>, tensor<1x1x1xf32>
}
// GENERIC-LABEL: sym_name = "reduce"
// GENERIC: "amp.reduce_sum"(%{{.*}}) <{dims = array<i64: 1>}> : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
// GENERIC: "amp.reduce_sum"(%{{.*}}) <{dims = array<i64: 1>, keepdim}> : (tensor<4x8x16xf32>) -> tensor<4x1x16xf32>
// GENERIC: "amp.reduce_mean"(%{{.*}}) <{dims = array<i64: 0, 2>}> : (tensor<4x8x16xf32>) -> tensor<8xf32>
// GENERIC: "amp.reduce_mean"(%{{.*}}) <{dims = array<i64: 0, 2>, keepdim}> : (tensor<4x8x16xf32>) -> tensor<1x8x1xf32>
// GENERIC: "amp.reduce_max"(%{{.*}}) <{dims = array<i64: 0, 1, 2>}> : (tensor<4x8x16xf32>) -> tensor<f32>
// GENERIC: "amp.reduce_max"(%{{.*}}) <{dims = array<i64: 0, 1, 2>, keepdim}> : (tensor<4x8x16xf32>) -> tensor<1x1x1xf32>

// -----

// CHECK-LABEL: func.func @reduce_low_precision
func.func @reduce_low_precision(%h: tensor<2x3xf16>, %b: tensor<2x3xbf16>) -> (tensor<2xf16>, tensor<1x3xbf16>) {
  // CHECK: %[[H:.*]] = amp.reduce_sum %{{.*}} dims = [1] : tensor<2x3xf16>
  %0 = amp.reduce_sum %h dims = [1] : tensor<2x3xf16>
  // CHECK: %[[B:.*]] = amp.reduce_mean %{{.*}} dims = [0] keepdim : tensor<2x3xbf16>
  %1 = amp.reduce_mean %b dims = [0] keepdim : tensor<2x3xbf16>
  // CHECK: return %[[H]], %[[B]] : tensor<2xf16>, tensor<1x3xbf16>
  return %0, %1 : tensor<2xf16>, tensor<1x3xbf16>
}

// -----

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[A:.*]]: tensor<8x4x32x32xbf16>)
func.func @softmax(%x: tensor<4x10xf32>, %a: tensor<8x4x32x32xbf16>) -> (tensor<4x10xf32>, tensor<8x4x32x32xbf16>, tensor<4x10xf32>, tensor<4x10xf32>) {
  // CHECK: %[[S1:.*]] = amp.softmax %[[X]] axis = 1 : tensor<4x10xf32>
  %0 = amp.softmax %x axis = 1 : tensor<4x10xf32>
  // CHECK: %[[S3:.*]] = amp.softmax %[[A]] axis = 3 : tensor<8x4x32x32xbf16>
  %1 = amp.softmax %a axis = 3 : tensor<8x4x32x32xbf16>
  // CHECK: %[[S0:.*]] = amp.softmax %[[X]] axis = 0 : tensor<4x10xf32>
  %2 = amp.softmax %x axis = 0 : tensor<4x10xf32>
  // CHECK: %[[L:.*]] = amp.log_softmax %[[X]] axis = 1 : tensor<4x10xf32>
  %3 = amp.log_softmax %x axis = 1 : tensor<4x10xf32>
  // CHECK: return %[[S1]], %[[S3]], %[[S0]], %[[L]]
  return %0, %1, %2, %3 : tensor<4x10xf32>, tensor<8x4x32x32xbf16>, tensor<4x10xf32>, tensor<4x10xf32>
}
// GENERIC-LABEL: sym_name = "softmax"
// GENERIC: "amp.softmax"(%{{.*}}) <{axis = 1 : i64}> : (tensor<4x10xf32>) -> tensor<4x10xf32>
// GENERIC: "amp.log_softmax"(%{{.*}}) <{axis = 1 : i64}> : (tensor<4x10xf32>) -> tensor<4x10xf32>

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<8x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[G2:.*]]: tensor<16x64xf32>, %[[H:.*]]: tensor<8x16x64xbf16>, %[[GH:.*]]: tensor<64xbf16>)
func.func @layer_norm(%x: tensor<8x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %g2: tensor<16x64xf32>, %h: tensor<8x16x64xbf16>, %gh: tensor<64xbf16>)
    -> (tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>,
        tensor<8x16x64xf32>, tensor<8x16x64xbf16>) {
  // CHECK: %[[N0:.*]] = amp.layer_norm %[[X]] : tensor<8x16x64xf32>
  %0 = amp.layer_norm %x : tensor<8x16x64xf32>
  // CHECK: %[[N1:.*]] = amp.layer_norm %[[X]] weight(%[[G]] : tensor<64xf32>) bias(%[[B]] : tensor<64xf32>) : tensor<8x16x64xf32>
  %1 = amp.layer_norm %x weight(%g : tensor<64xf32>) bias(%b : tensor<64xf32>) : tensor<8x16x64xf32>
  // CHECK: %[[N2:.*]] = amp.layer_norm %[[X]] weight(%[[G]] : tensor<64xf32>) : tensor<8x16x64xf32>
  %2 = amp.layer_norm %x weight(%g : tensor<64xf32>) : tensor<8x16x64xf32>
  // CHECK: %[[N3:.*]] = amp.layer_norm %[[X]] bias(%[[B]] : tensor<64xf32>) : tensor<8x16x64xf32>
  %3 = amp.layer_norm %x bias(%b : tensor<64xf32>) : tensor<8x16x64xf32>
  // Two normalised dimensions and a custom eps.
  // CHECK: %[[N4:.*]] = amp.layer_norm %[[X]] weight(%[[G2]] : tensor<16x64xf32>) {eps = 9.9999999999999995E-7 : f64, normalized_ndim = 2 : i64} : tensor<8x16x64xf32>
  %4 = amp.layer_norm %x weight(%g2 : tensor<16x64xf32>) {normalized_ndim = 2 : i64, eps = 1.0e-6 : f64} : tensor<8x16x64xf32>
  // CHECK: %[[N5:.*]] = amp.layer_norm %[[H]] weight(%[[GH]] : tensor<64xbf16>) : tensor<8x16x64xbf16>
  %5 = amp.layer_norm %h weight(%gh : tensor<64xbf16>) : tensor<8x16x64xbf16>
  // CHECK: return %[[N0]], %[[N1]], %[[N2]], %[[N3]], %[[N4]], %[[N5]]
  return %0, %1, %2, %3, %4, %5 : tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>,
                                  tensor<8x16x64xf32>, tensor<8x16x64xbf16>
}
// GENERIC-LABEL: sym_name = "layer_norm"
// GENERIC: "amp.layer_norm"(%{{.*}}) <{eps = 1.000000e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}>
// GENERIC: "amp.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) <{{.*}}operandSegmentSizes = array<i32: 1, 1, 1>}>
// GENERIC: "amp.layer_norm"(%{{.*}}, %{{.*}}) <{{.*}}operandSegmentSizes = array<i32: 1, 1, 0>}>
// GENERIC: "amp.layer_norm"(%{{.*}}, %{{.*}}) <{{.*}}operandSegmentSizes = array<i32: 1, 0, 1>}>
// GENERIC: "amp.layer_norm"(%{{.*}}, %{{.*}}) <{eps = 9.9999999999999995E-7 : f64, normalized_ndim = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}>

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<8x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[G2:.*]]: tensor<16x64xf16>, %[[H:.*]]: tensor<8x16x64xf16>)
func.func @rms_norm(%x: tensor<8x16x64xf32>, %g: tensor<64xf32>, %g2: tensor<16x64xf16>, %h: tensor<8x16x64xf16>)
    -> (tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf16>) {
  // CHECK: %[[R0:.*]] = amp.rms_norm %[[X]] : tensor<8x16x64xf32>
  %0 = amp.rms_norm %x : tensor<8x16x64xf32>
  // CHECK: %[[R1:.*]] = amp.rms_norm %[[X]] weight(%[[G]] : tensor<64xf32>) : tensor<8x16x64xf32>
  %1 = amp.rms_norm %x weight(%g : tensor<64xf32>) : tensor<8x16x64xf32>
  // CHECK: %[[R2:.*]] = amp.rms_norm %[[H]] weight(%[[G2]] : tensor<16x64xf16>) {eps = 1.000000e-05 : f64, normalized_ndim = 2 : i64} : tensor<8x16x64xf16>
  %2 = amp.rms_norm %h weight(%g2 : tensor<16x64xf16>) {normalized_ndim = 2 : i64, eps = 1.0e-5 : f64} : tensor<8x16x64xf16>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]] : tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf16>
  return %0, %1, %2 : tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf16>
}

// -----

// softmax_grad: the cotangent in the output's type, or bf16/f16 under an f32 output.
// CHECK-LABEL: func.func @softmax_grad
// CHECK: amp.softmax_grad %{{.*}}, %{{.*}} axis = 1 : tensor<4x10xf32>, tensor<4x10xbf16>
// CHECK: amp.softmax_grad %{{.*}}, %{{.*}} axis = 0 : tensor<4x10xf16>, tensor<4x10xf16>
func.func @softmax_grad(%y: tensor<4x10xf32>, %dy: tensor<4x10xbf16>, %h: tensor<4x10xf16>)
    -> (tensor<4x10xf32>, tensor<4x10xf16>) {
  %0 = amp.softmax_grad %y, %dy axis = 1 : tensor<4x10xf32>, tensor<4x10xbf16>
  %1 = amp.softmax_grad %h, %h axis = 0 : tensor<4x10xf16>, tensor<4x10xf16>
  return %0, %1 : tensor<4x10xf32>, tensor<4x10xf16>
}
// GENERIC-LABEL: sym_name = "softmax_grad"
// GENERIC: "amp.softmax_grad"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<4x10xf32>, tensor<4x10xbf16>) -> tensor<4x10xf32>
