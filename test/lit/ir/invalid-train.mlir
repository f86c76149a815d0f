// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @no_grads(%s: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'amp.unscale_check' op needs at least one gradient}}
  %f = "amp.unscale_check"(%s) <{operandSegmentSizes = array<i32: 0, 1>}> : (tensor<f32>) -> tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @scale_not_scalar(%g: tensor<4xf32>, %s: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit float values}}
  %u, %f = "amp.unscale_check"(%g, %s) <{operandSegmentSizes = array<i32: 1, 1>}> : (tensor<4xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<f32>)
  return %f : tensor<f32>
}

// -----

func.func @int_grad(%g: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %u, %f = "amp.unscale_check"(%g) <{operandSegmentSizes = array<i32: 1, 0>}> : (tensor<4xi32>) -> (tensor<4xi32>, tensor<f32>)
  return %f : tensor<f32>
}

// -----

func.func @growth_le_one(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{attribute 'growth_factor' failed to satisfy constraint: 64-bit float attribute in (1.0, inf)}}
  %s2, %t2 = amp.update_scale %s, %t, %f {growth_factor = 1.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %s2 : tensor<f32>
}

// -----

func.func @backoff_ge_one(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{attribute 'backoff_factor' failed to satisfy constraint: 64-bit float attribute in (0.0, 1.0)}}
  %s2, %t2 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 1.0 : f64, growth_interval = 2000 : i64}
  return %s2 : tensor<f32>
}

// -----

func.func @interval_zero(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{attribute 'growth_interval' failed to satisfy constraint: 64-bit signless integer attribute in [1, 2147483647]}}
  %s2, %t2 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 0 : i64}
  return %s2 : tensor<f32>
}

// -----

func.func @tracker_i64(%s: tensor<f32>, %t: tensor<i64>, %f: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit signless integer values}}
  %s2, %t2 = "amp.update_scale"(%s, %t, %f) <{growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}> : (tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<f32>, tensor<i32>)
  return %s2 : tensor<f32>
}

// -----

func.func @clip_bad_max(%g: tensor<4xf32>, %n: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'max_norm' failed to satisfy constraint: 64-bit float attribute in (0.0, inf)}}
  %c = amp.clip_grads %g norm(%n) {max_norm = 0.0 : f64} : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @norm_f16(%g: tensor<4xf16>) -> tensor<f32> {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float values}}
  %n = amp.global_norm %g : tensor<4xf16>
  return %n : tensor<f32>
}

// -----

func.func @lr_cosine_total(%t: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{cosine schedule needs total_steps > warmup_steps}}
  %lr = amp.lr_schedule cosine %t {base_lr = 0.1 : f64, warmup_steps = 10 : i64, total_steps = 10 : i64}
  return %lr : tensor<f32>
}

// -----

func.func @lr_min_above_base(%t: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{min_lr must be in [0, base_lr = 1.000000e-01]}}
  %lr = amp.lr_schedule cosine %t {base_lr = 0.1 : f64, total_steps = 10 : i64, min_lr = 0.2 : f64}
  return %lr : tensor<f32>
}

// -----

func.func @sgd_f16_master(%p: tensor<4xf16>, %g: tensor<4xf16>, %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf16> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %p2 = "amp.sgd_update"(%p, %g, %lr, %f) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}> : (tensor<4xf16>, tensor<4xf16>, tensor<f32>, tensor<f32>) -> tensor<4xf16>
  return %p2 : tensor<4xf16>
}

// -----

func.func @sgd_shape(%p: tensor<4xf32>, %g: tensor<5xf32>, %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{grad must have the param's shape ('tensor<4xf32>'), got 'tensor<5xf32>'}}
  %p2 = amp.sgd_update %p, %g, %lr, %f : tensor<4xf32>, tensor<5xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @sgd_missing_buffer(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs a momentum_buffer operand when momentum != 0}}
  %p2 = amp.sgd_update %p, %g, %lr, %f {momentum = 0.9 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @sgd_nesterov_no_momentum(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{nesterov requires momentum > 0}}
  %p2 = amp.sgd_update %p, %g, %lr, %f {nesterov = true} : tensor<4xf32>, tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @adam_beta(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<i64>,
                     %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'beta2' failed to satisfy constraint: 64-bit float attribute in [0.0, 1.0)}}
  %p2, %m2, %v2 = amp.adam_update %p, %g, %m, %v, %t, %lr, %f {beta2 = 1.0 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @adam_eps(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<i64>,
                    %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'eps' failed to satisfy constraint: 64-bit float attribute in (0.0, inf)}}
  %p2, %m2, %v2 = amp.adam_update %p, %g, %m, %v, %t, %lr, %f {eps = 0.0 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @adam_moment_shape(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<5xf32>, %v: tensor<4xf32>, %t: tensor<i64>,
                             %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{all of {exp_avg, exp_avg_sq} have same type}}
  %p2, %m2, %v2 = "amp.adam_update"(%p, %g, %m, %v, %t, %lr, %f) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0>}> : (tensor<4xf32>, tensor<4xf32>, tensor<5xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<5xf32>, tensor<4xf32>)
  return %p2 : tensor<4xf32>
}

// -----

func.func @clip_without_max_norm(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %f: tensor<f32>, %n: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'amp.sgd_update' op clips by a norm but has no max_norm}}
  %p2 = amp.sgd_update %p, %g, %lr, %f clip(%n) : tensor<4xf32>, tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @f32_weight_copy(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'amp.sgd_update' op weight_copy must be bf16 or f16, got 'f32'}}
  %p2, %c = amp.sgd_update %p, %g, %lr, %f weight_copy(f32) : tensor<4xf32>, tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

func.func @stats_without_grads(%s: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'amp.grad_stats' op needs at least one gradient}}
  %f = "amp.grad_stats"(%s) <{operandSegmentSizes = array<i32: 0, 1>}> : (tensor<f32>) -> tensor<f32>
  return %f : tensor<f32>
}

// -----

// Both moments of another shape than the param's.
func.func @adam_moments_shape(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<5xbf16>, %v: tensor<5xbf16>,
                              %step: tensor<i64>, %lr: tensor<f32>, %found: tensor<f32>) {
  // expected-error @+1 {{exp_avg must have the param's shape ('tensor<4xf32>'), got 'tensor<5xbf16>'}}
  %p2, %m2, %v2 = "amp.adam_update"(%p, %g, %m, %v, %step, %lr, %found) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0>}> : (tensor<4xf32>, tensor<4xf32>, tensor<5xbf16>, tensor<5xbf16>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<5xbf16>, tensor<5xbf16>)
  return
}

// -----

// The two moments share one type (f32, or bf16 with --optimizer-state=bf16).
func.func @mixed_moments(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xbf16>, %v: tensor<4xf32>,
                         %step: tensor<i64>, %lr: tensor<f32>, %found: tensor<f32>) {
  // expected-error @+1 {{all of {exp_avg, exp_avg_sq} have same type}}
  %p2, %m2, %v2 = "amp.adam_update"(%p, %g, %m, %v, %step, %lr, %found) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0>}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>)
  return
}

// -----

// f16 moments are not a compact state: f16's range cannot hold v for small gradients.
func.func @f16_moments(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf16>, %v: tensor<4xf16>,
                       %step: tensor<i64>, %lr: tensor<f32>, %found: tensor<f32>) {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or bfloat16 type values}}
  %p2, %m2, %v2 = amp.adam_update %p, %g, %m, %v, %step, %lr, %found : tensor<4xf32>, tensor<4xf32> moments(f16)
  return
}
