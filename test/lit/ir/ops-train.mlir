// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @scaler
// CHECK-SAME: (%[[G1:.*]]: tensor<4x3xf32>, %[[G2:.*]]: tensor<3xf16>, %[[S:.*]]: tensor<f32>, %[[T:.*]]: tensor<i32>)
func.func @scaler(%g1: tensor<4x3xf32>, %g2: tensor<3xf16>, %scale: tensor<f32>, %tracker: tensor<i32>)
    -> (tensor<4x3xf32>, tensor<3xf16>, tensor<f32>, tensor<f32>, tensor<i32>, tensor<f32>) {
  // CHECK: %{{.*}}:2, %[[F:.*]] = amp.unscale_check %[[G1]], %[[G2]] scale(%[[S]]) : tensor<4x3xf32>, tensor<3xf16>
  %u1, %u2, %found = amp.unscale_check %g1, %g2 scale(%scale) : tensor<4x3xf32>, tensor<3xf16>
  // CHECK: %{{.*}}, %{{.*}} = amp.unscale_check %[[G1]] : tensor<4x3xf32>
  %c1, %found2 = amp.unscale_check %g1 : tensor<4x3xf32>
  // CHECK: %{{.*}}, %{{.*}} = amp.update_scale %[[S]], %[[T]], %[[F]] {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64}
  %s2, %t2 = amp.update_scale %scale, %tracker, %found {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %u1, %u2, %found, %s2, %t2, %found2 : tensor<4x3xf32>, tensor<3xf16>, tensor<f32>, tensor<f32>, tensor<i32>, tensor<f32>
}
// GENERIC-LABEL: "func.func"() <{function_type = (tensor<4x3xf32>, tensor<3xf16>
// GENERIC: "amp.unscale_check"(%{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 1>}> : (tensor<4x3xf32>, tensor<3xf16>, tensor<f32>) -> (tensor<4x3xf32>, tensor<3xf16>, tensor<f32>)
// GENERIC: "amp.unscale_check"(%{{.*}}) <{operandSegmentSizes = array<i32: 1, 0>}> : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<f32>)

// -----

// CHECK-LABEL: func.func @clip_and_counters
func.func @clip_and_counters(%g1: tensor<4x3xf32>, %g2: tensor<f32>, %step: tensor<i64>, %skipped: tensor<i64>,
                             %found: tensor<f32>) -> (tensor<4x3xf32>, tensor<f32>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[N:.*]] = amp.global_norm %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<f32>
  %n = amp.global_norm %g1, %g2 : tensor<4x3xf32>, tensor<f32>
  // CHECK: %{{.*}}:2 = amp.clip_grads %{{.*}}, %{{.*}} norm(%[[N]]) {max_norm = 1.000000e+00 : f64} : tensor<4x3xf32>, tensor<f32>
  %c1, %c2 = amp.clip_grads %g1, %g2 norm(%n) {max_norm = 1.0 : f64} : tensor<4x3xf32>, tensor<f32>
  // CHECK: %[[STEP:.*]], %{{.*}} = amp.step_counters %{{.*}}, %{{.*}}, %{{.*}}
  %s2, %k2 = amp.step_counters %step, %skipped, %found
  // CHECK: amp.lr_schedule constant %[[STEP]] {base_lr = 1.000000e-01 : f64}
  %lr = amp.lr_schedule constant %s2 {base_lr = 0.1 : f64}
  // CHECK: amp.lr_schedule cosine %[[STEP]] {base_lr = 1.000000e-03 : f64, min_lr = 1.000000e-05 : f64, total_steps = 1000 : i64, warmup_steps = 10 : i64}
  %lr2 = amp.lr_schedule cosine %s2 {base_lr = 1.0e-3 : f64, warmup_steps = 10 : i64, total_steps = 1000 : i64, min_lr = 1.0e-5 : f64}
  return %c1, %c2, %s2, %k2, %lr, %lr2 : tensor<4x3xf32>, tensor<f32>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @updates
func.func @updates(%p: tensor<4x3xf32>, %g: tensor<4x3xf32>, %gh: tensor<4x3xf16>, %buf: tensor<4x3xf32>,
                   %m: tensor<4x3xf32>, %v: tensor<4x3xf32>, %step: tensor<i64>, %lr: tensor<f32>, %found: tensor<f32>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = amp.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} momentum_buffer(%{{.*}} : tensor<4x3xf32>) {momentum = 9.000000e-01 : f64, nesterov = true} : tensor<4x3xf32>, tensor<4x3xf32>
  %p1, %b1 = amp.sgd_update %p, %g, %lr, %found momentum_buffer(%buf : tensor<4x3xf32>) {momentum = 0.9 : f64, nesterov = true} : tensor<4x3xf32>, tensor<4x3xf32>
  // CHECK: amp.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {weight_decay = 1.000000e-04 : f64} : tensor<4x3xf32>, tensor<4x3xf16>
  %p2 = amp.sgd_update %p, %gh, %lr, %found {weight_decay = 1.0e-4 : f64} : tensor<4x3xf32>, tensor<4x3xf16>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = amp.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {decoupled = true, weight_decay = 1.000000e-02 : f64} : tensor<4x3xf32>, tensor<4x3xf32>
  %p3, %m3, %v3 = amp.adam_update %p, %g, %m, %v, %step, %lr, %found {weight_decay = 0.01 : f64, decoupled = true} : tensor<4x3xf32>, tensor<4x3xf32>
  return %p1, %b1, %p2, %p3, %m3, %v3 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// The fused pipeline (amp-fuse-grad-pipeline): statistics of the stored gradients, and updates
// that unscale, clip and write the weight copy.
// CHECK-LABEL: func.func @fused_pipeline
func.func @fused_pipeline(%p: tensor<4x3xf32>, %g: tensor<4x3xbf16>, %m: tensor<4x3xf32>, %v: tensor<4x3xf32>,
                          %step: tensor<i64>, %lr: tensor<f32>, %s: tensor<f32>)
    -> (tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xf32>, tensor<4x3xf32>) {
  // CHECK: %[[F:.*]], %[[N:.*]] = amp.grad_stats %{{.*}} scale(%{{.*}}) : tensor<4x3xbf16> -> tensor<f32>, tensor<f32>
  %found, %norm = amp.grad_stats %g scale(%s) : tensor<4x3xbf16> -> tensor<f32>, tensor<f32>
  // CHECK: amp.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %[[F]] unscale(%{{.*}}) clip(%[[N]]) weight_copy(bf16) {max_norm = 2.000000e+00 : f64} : tensor<4x3xf32>, tensor<4x3xbf16>
  %p1, %c1 = amp.sgd_update %p, %g, %lr, %found unscale(%s) clip(%norm) weight_copy(bf16) {max_norm = 2.0 : f64} : tensor<4x3xf32>, tensor<4x3xbf16>
  // CHECK: amp.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[F]] clip(%[[N]]) {max_norm = 1.000000e+00 : f64} : tensor<4x3xf32>, tensor<4x3xbf16>
  %p2, %m2, %v2 = amp.adam_update %p, %g, %m, %v, %step, %lr, %found clip(%norm) {max_norm = 1.0 : f64} : tensor<4x3xf32>, tensor<4x3xbf16>
  return %p1, %c1, %m2, %v2 : tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Compact optimizer state (--optimizer-state=bf16): bf16 moments, named after the types, with the
// update's rounding stream.
// CHECK-LABEL: func.func @bf16_moments
func.func @bf16_moments(%p: tensor<4x3xf32>, %g: tensor<4x3xbf16>, %m: tensor<4x3xbf16>, %v: tensor<4x3xbf16>,
                        %step: tensor<i64>, %lr: tensor<f32>, %found: tensor<f32>)
    -> (tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xbf16>) {
  // CHECK: amp.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {decoupled = true, rounding_seed = 7 : i64} : tensor<4x3xf32>, tensor<4x3xbf16> moments(bf16)
  %p2, %m2, %v2 = amp.adam_update %p, %g, %m, %v, %step, %lr, %found {decoupled = true, rounding_seed = 7 : i64} : tensor<4x3xf32>, tensor<4x3xbf16> moments(bf16)
  // GENERIC: "amp.adam_update"({{.*}}) <{{.*}}rounding_seed = 7 : i64{{.*}} : (tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xbf16>, tensor<4x3xbf16>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xbf16>)
  return %p2, %m2, %v2 : tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xbf16>
}
