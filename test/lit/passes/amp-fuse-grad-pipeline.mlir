// RUN: amp-opt %s --split-input-file --amp-fuse-grad-pipeline | FileCheck %s

// The whole pipeline: a bf16 gradient widened only to be checked is read as stored, the norm and
// the clip move into the statistics pass and the updates, each update writes its weight copy, and
// the updates of one kernel (op, gradient type, copy type) become adjacent.
// CHECK-LABEL: func.func @clipped
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<4x3xf32>, %[[B:[a-z0-9]+]]: tensor<3xf32>, %[[V:[a-z0-9]+]]: tensor<3xf32>, %[[GW:[a-z0-9]+]]: tensor<4x3xbf16>, %[[GB:[a-z0-9]+]]: tensor<3xf32>, %[[GV:[a-z0-9]+]]: tensor<3xbf16>, %[[S:[a-z0-9]+]]: tensor<f32>, %[[LR:[a-z0-9]+]]: tensor<f32>)
// CHECK-NEXT: %[[F:.*]], %[[N:.*]] = amp.grad_stats %[[GW]], %[[GB]], %[[GV]] scale(%[[S]]) : tensor<4x3xbf16>, tensor<3xf32>, tensor<3xbf16> -> tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[PW:.*]], %[[CW:.*]] = amp.sgd_update %[[W]], %[[GW]], %[[LR]], %[[F]] unscale(%[[S]]) clip(%[[N]]) weight_copy(bf16) {max_norm = 1.000000e+00 : f64} : tensor<4x3xf32>, tensor<4x3xbf16>
// CHECK-NEXT: %[[PV:.*]], %[[CV:.*]] = amp.sgd_update %[[V]], %[[GV]], %[[LR]], %[[F]] unscale(%[[S]]) clip(%[[N]]) weight_copy(bf16) {max_norm = 1.000000e+00 : f64} : tensor<3xf32>, tensor<3xbf16>
// CHECK-NEXT: %[[PB:.*]] = amp.sgd_update %[[B]], %[[GB]], %[[LR]], %[[F]] unscale(%[[S]]) clip(%[[N]]) {max_norm = 1.000000e+00 : f64} : tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT: return %[[F]], %[[N]], %[[PW]], %[[CW]], %[[PB]], %[[PV]], %[[CV]]
func.func @clipped(%w: tensor<4x3xf32>, %b: tensor<3xf32>, %v: tensor<3xf32>, %gw: tensor<4x3xbf16>,
                   %gb: tensor<3xf32>, %gv: tensor<3xbf16>, %s: tensor<f32>, %lr: tensor<f32>)
    -> (tensor<f32>, tensor<f32>, tensor<4x3xf32>, tensor<4x3xbf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>) {
  %gw32 = amp.cast %gw : tensor<4x3xbf16> to tensor<4x3xf32>
  %gv32 = amp.cast %gv : tensor<3xbf16> to tensor<3xf32>
  %u:3, %found = amp.unscale_check %gw32, %gb, %gv32 scale(%s) : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %norm = amp.global_norm %u#0, %u#1, %u#2 : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %c:3 = amp.clip_grads %u#0, %u#1, %u#2 norm(%norm) {max_norm = 1.0 : f64} : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %w2 = amp.sgd_update %w, %c#0, %lr, %found : tensor<4x3xf32>, tensor<4x3xf32>
  %w16 = amp.cast %w2 : tensor<4x3xf32> to tensor<4x3xbf16>
  %b2 = amp.sgd_update %b, %c#1, %lr, %found : tensor<3xf32>, tensor<3xf32>
  %v2 = amp.sgd_update %v, %c#2, %lr, %found : tensor<3xf32>, tensor<3xf32>
  %v16 = amp.cast %v2 : tensor<3xf32> to tensor<3xbf16>
  return %found, %norm, %w2, %w16, %b2, %v2, %v16 : tensor<f32>, tensor<f32>, tensor<4x3xf32>, tensor<4x3xbf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>
}

// -----

// No loss scaling and no clipping (bf16 by default): the statistics pass only checks, and Adam
// reads the stored gradient without unscaling it.
// CHECK-LABEL: func.func @unscaled
// CHECK-NEXT: %[[F:.*]] = amp.grad_stats %arg1 : tensor<8xbf16> -> tensor<f32>
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = amp.adam_update %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %[[F]] weight_copy(bf16) : tensor<8xf32>, tensor<8xbf16>
// CHECK-NOT: amp.unscale_check
// CHECK-NOT: amp.cast
func.func @unscaled(%w: tensor<8xf32>, %g: tensor<8xbf16>, %m: tensor<8xf32>, %v: tensor<8xf32>, %step: tensor<i64>,
                    %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>) {
  %g32 = amp.cast %g : tensor<8xbf16> to tensor<8xf32>
  %u, %found = amp.unscale_check %g32 : tensor<8xf32>
  %w2, %m2, %v2 = amp.adam_update %w, %u, %m, %v, %step, %lr, %found : tensor<8xf32>, tensor<8xf32>
  %w16 = amp.cast %w2 : tensor<8xf32> to tensor<8xbf16>
  return %w2, %m2, %v2, %w16 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>
}

// -----

// An unscaled gradient the caller sees must stay stored: nothing changes.
// CHECK-LABEL: func.func @escapes
// CHECK: amp.unscale_check
// CHECK: amp.sgd_update %arg0, %{{.*}}, %arg3, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK-NOT: amp.grad_stats
func.func @escapes(%w: tensor<4xf32>, %g: tensor<4xf32>, %s: tensor<f32>, %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %u, %found = amp.unscale_check %g scale(%s) : tensor<4xf32>
  %w2 = amp.sgd_update %w, %u, %lr, %found : tensor<4xf32>, tensor<4xf32>
  return %w2, %u : tensor<4xf32>, tensor<4xf32>
}

// -----

// A gradient unscaled in 16 bits (no widening cast before the check) is rounded to bf16 after the
// unscale, which the f32 update prologue would not do: nothing changes.
// CHECK-LABEL: func.func @unscaledInHalf
// CHECK: amp.unscale_check
// CHECK-NOT: amp.grad_stats
func.func @unscaledInHalf(%w: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<f32>, %lr: tensor<f32>) -> tensor<4xf32> {
  %u, %found = amp.unscale_check %g scale(%s) : tensor<4xbf16>
  %w2 = amp.sgd_update %w, %u, %lr, %found : tensor<4xf32>, tensor<4xbf16>
  return %w2 : tensor<4xf32>
}
