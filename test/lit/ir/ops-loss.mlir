// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// The loss is a rank-0 tensor of the logits' element type.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:.*]]: tensor<32x10xf32>, %[[Y64:.*]]: tensor<32xi64>, %[[Y32:.*]]: tensor<32xi32>, %[[LB:.*]]: tensor<32x10xbf16>)
func.func @cross_entropy(%logits: tensor<32x10xf32>, %y64: tensor<32xi64>, %y32: tensor<32xi32>,
                         %lb: tensor<32x10xbf16>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<bf16>) {
  // CHECK: %[[C0:.*]] = amp.cross_entropy %[[L]], %[[Y64]] : tensor<32x10xf32>, tensor<32xi64>
  %0 = amp.cross_entropy %logits, %y64 : tensor<32x10xf32>, tensor<32xi64>
  // CHECK: %[[C1:.*]] = amp.cross_entropy %[[L]], %[[Y32]] {ignore_index = 0 : i64} : tensor<32x10xf32>, tensor<32xi32>
  %1 = amp.cross_entropy %logits, %y32 {ignore_index = 0 : i64} : tensor<32x10xf32>, tensor<32xi32>
  // CHECK: %[[C2:.*]] = amp.cross_entropy %[[L]], %[[Y64]] {label_smoothing = 1.000000e-01 : f64} : tensor<32x10xf32>, tensor<32xi64>
  %2 = amp.cross_entropy %logits, %y64 {label_smoothing = 0.1 : f64} : tensor<32x10xf32>, tensor<32xi64>
  // CHECK: %[[C3:.*]] = amp.cross_entropy %[[L]], %[[Y64]] {ignore_index = -1 : i64, label_smoothing = 1.000000e+00 : f64}
  %3 = amp.cross_entropy %logits, %y64 {ignore_index = -1 : i64, label_smoothing = 1.0 : f64} : tensor<32x10xf32>, tensor<32xi64>
  // CHECK: %[[C4:.*]] = amp.cross_entropy %[[LB]], %[[Y32]] : tensor<32x10xbf16>, tensor<32xi32>
  %4 = amp.cross_entropy %lb, %y32 : tensor<32x10xbf16>, tensor<32xi32>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]], %[[C3]], %[[C4]] : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<bf16>
  return %0, %1, %2, %3, %4 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<bf16>
}
// GENERIC-LABEL: sym_name = "cross_entropy"
// GENERIC: "amp.cross_entropy"(%{{.*}}, %{{.*}}) <{ignore_index = -100 : i64, label_smoothing = 0.000000e+00 : f64}> : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
// GENERIC: "amp.cross_entropy"(%{{.*}}, %{{.*}}) <{ignore_index = 0 : i64, label_smoothing = 0.000000e+00 : f64}> : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
// GENERIC: "amp.cross_entropy"(%{{.*}}, %{{.*}}) <{ignore_index = -100 : i64, label_smoothing = 1.000000e-01 : f64}>
// GENERIC: "amp.cross_entropy"(%{{.*}}, %{{.*}}) <{ignore_index = -1 : i64, label_smoothing = 1.000000e+00 : f64}>
// GENERIC: "amp.cross_entropy"(%{{.*}}, %{{.*}}) <{{.*}}}> : (tensor<32x10xbf16>, tensor<32xi32>) -> tensor<bf16>

// -----

// CHECK-LABEL: func.func @mse_loss
// CHECK-SAME: (%[[P:.*]]: tensor<32x4xf32>, %[[T:.*]]: tensor<32x4xf32>, %[[H:.*]]: tensor<8xf16>)
func.func @mse_loss(%p: tensor<32x4xf32>, %t: tensor<32x4xf32>, %h: tensor<8xf16>) -> (tensor<f32>, tensor<f16>) {
  // CHECK: %[[M0:.*]] = amp.mse_loss %[[P]], %[[T]] : tensor<32x4xf32>, tensor<32x4xf32>
  %0 = amp.mse_loss %p, %t : tensor<32x4xf32>, tensor<32x4xf32>
  // CHECK: %[[M1:.*]] = amp.mse_loss %[[H]], %[[H]] : tensor<8xf16>, tensor<8xf16>
  %1 = amp.mse_loss %h, %h : tensor<8xf16>, tensor<8xf16>
  // CHECK: return %[[M0]], %[[M1]] : tensor<f32>, tensor<f16>
  return %0, %1 : tensor<f32>, tensor<f16>
}
// GENERIC-LABEL: sym_name = "mse_loss"
// GENERIC: "amp.mse_loss"(%{{.*}}, %{{.*}}) : (tensor<32x4xf32>, tensor<32x4xf32>) -> tensor<f32>
// GENERIC: "amp.mse_loss"(%{{.*}}, %{{.*}}) : (tensor<8xf16>, tensor<8xf16>) -> tensor<f16>
