// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Training and inference forms over NCHW, and the [N, C] form; the per-channel values and the
// new running statistics are f32 whatever the input's type.
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<8x16x4x4xbf16>, %[[G:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>, %[[RM:.*]]: tensor<16xf32>, %[[RV:.*]]: tensor<16xf32>, %[[X2:.*]]: tensor<8x16xf32>)
func.func @batch_norm(%x: tensor<8x16x4x4xbf16>, %g: tensor<16xf32>, %b: tensor<16xf32>,
                      %rm: tensor<16xf32>, %rv: tensor<16xf32>, %x2: tensor<8x16xf32>)
    -> (tensor<8x16x4x4xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x4x4xbf16>, tensor<8x16xf32>) {
  // CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]] = amp.batch_norm %[[X]], %[[G]], %[[B]] running(%[[RM]], %[[RV]]) training {momentum = 1.000000e-02 : f64} : tensor<8x16x4x4xbf16>, tensor<16xf32>
  %y, %m, %v = amp.batch_norm %x, %g, %b running(%rm, %rv) training {momentum = 0.01 : f64}
      : tensor<8x16x4x4xbf16>, tensor<16xf32>
  // CHECK: %[[YI:.*]], %{{.*}}, %{{.*}} = amp.batch_norm %[[X]], %[[G]], %[[B]] running(%[[RM]], %[[RV]]) {epsilon = 1.000000e-03 : f64} : tensor<8x16x4x4xbf16>, tensor<16xf32>
  %yi, %mi, %vi = amp.batch_norm %x, %g, %b running(%rm, %rv) {epsilon = 1.0e-3 : f64}
      : tensor<8x16x4x4xbf16>, tensor<16xf32>
  // CHECK: %[[Y2:.*]], %{{.*}}, %{{.*}} = amp.batch_norm %[[X2]], %[[G]], %[[B]] running(%[[RM]], %[[RV]]) training : tensor<8x16xf32>, tensor<16xf32>
  %y2, %m2, %v2 = amp.batch_norm %x2, %g, %b running(%rm, %rv) training : tensor<8x16xf32>, tensor<16xf32>
  // CHECK: return %[[Y]], %[[M]], %[[V]], %[[YI]], %[[Y2]]
  return %y, %m, %v, %yi, %y2
      : tensor<8x16x4x4xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x4x4xbf16>, tensor<8x16xf32>
}
// GENERIC-LABEL: sym_name = "batch_norm"
// GENERIC: "amp.batch_norm"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{epsilon = 1.000000e-05 : f64, momentum = 1.000000e-02 : f64, training}> : (tensor<8x16x4x4xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x4x4xbf16>, tensor<16xf32>, tensor<16xf32>)
// GENERIC: "amp.batch_norm"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{epsilon = 1.000000e-03 : f64, momentum = 1.000000e-01 : f64}>

// -----

// CHECK-LABEL: func.func @batch_norm_grad
func.func @batch_norm_grad(%x: tensor<8x16x4x4xf16>, %dy: tensor<8x16x4x4xf16>, %g: tensor<16xf32>,
                           %rm: tensor<16xf32>, %rv: tensor<16xf32>)
    -> (tensor<8x16x4x4xf16>, tensor<16xf32>, tensor<16xf32>) {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = amp.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} running(%{{.*}}, %{{.*}}) training : tensor<8x16x4x4xf16>, tensor<16xf32>
  %dx, %ds, %db = amp.batch_norm_grad %x, %dy, %g running(%rm, %rv) training
      : tensor<8x16x4x4xf16>, tensor<16xf32>
  return %dx, %ds, %db : tensor<8x16x4x4xf16>, tensor<16xf32>, tensor<16xf32>
}

// -----

// BatchNorm1d over [N, C, L] and BatchNorm3d over [N, C, D, H, W]: every dim after C is reduced.
// CHECK-LABEL: func.func @batch_norm_other_ranks
func.func @batch_norm_other_ranks(%x: tensor<4x3x7xf32>, %v: tensor<2x3x2x4x4xf32>, %g: tensor<3xf32>)
    -> (tensor<4x3x7xf32>, tensor<2x3x2x4x4xf32>) {
  // CHECK: amp.batch_norm %{{.*}} training : tensor<4x3x7xf32>, tensor<3xf32>
  %y, %m, %s = amp.batch_norm %x, %g, %g running(%g, %g) training : tensor<4x3x7xf32>, tensor<3xf32>
  // CHECK: amp.batch_norm %{{.*}} : tensor<2x3x2x4x4xf32>, tensor<3xf32>
  %y3, %m3, %s3 = amp.batch_norm %v, %g, %g running(%g, %g) : tensor<2x3x2x4x4xf32>, tensor<3xf32>
  return %y, %y3 : tensor<4x3x7xf32>, tensor<2x3x2x4x4xf32>
}
