// RUN: amp-opt %s --split-input-file --amp-loss-scaling --verify-diagnostics | FileCheck %s --check-prefix=AUTO
// RUN: amp-opt %s --split-input-file --amp-loss-scaling="mode=dynamic init-scale=1024 growth-factor=4 backoff-factor=0.25 growth-interval=10" --verify-diagnostics | FileCheck %s --check-prefix=DYN
// RUN: amp-opt %s --split-input-file --amp-loss-scaling="mode=static init-scale=128" --verify-diagnostics | FileCheck %s --check-prefix=STATIC
// RUN: amp-opt %s --split-input-file --amp-loss-scaling="mode=none" --verify-diagnostics | FileCheck %s --check-prefix=NONE
// The option parser rejects a mode outside the enum and lists the accepted ones.
// RUN: not amp-opt %s --split-input-file --amp-loss-scaling="mode=bogus" 2>&1 | FileCheck %s --check-prefix=BADMODE
// BADMODE: for the --mode option: 'bogus' is not one of: dynamic, static, none, auto

// An f16 step ("after amp-autodiff" shape): auto picks dynamic with PyTorch's defaults, and
// records the recipe it decided on the module (the plan's training metadata comes from it).
// AUTO: module attributes {amp.loss_scaling = #amp.loss_scaling<kind = dynamic, init_scale = 6.553600e+04 : f64, growth_factor = 2.000000e+00 : f64, backoff_factor = 5.000000e-01 : f64, growth_interval = 2000>}
// DYN: module attributes {amp.loss_scaling = #amp.loss_scaling<kind = dynamic, init_scale = 1.024000e+03 : f64, growth_factor = 4.000000e+00 : f64, backoff_factor = 2.500000e-01 : f64, growth_interval = 10>}
// STATIC: module attributes {amp.loss_scaling = #amp.loss_scaling<kind = static, init_scale = 1.280000e+02 : f64>}
// NONE: module attributes {amp.loss_scaling = #amp.loss_scaling<kind = none>}
// AUTO-LABEL: func.func @train_step
// AUTO-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<constant, scale = 6.553600e+04>, amp.name = "amp.loss_scale", amp.role = "state"}
// AUTO-SAME: %[[T:[a-z0-9]+]]: tensor<i32> {amp.init = #amp.init<zeros>, amp.name = "amp.growth_tracker", amp.role = "state"}
// AUTO-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"}, tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
// The backward is seeded with the scale itself (no extra multiply); one fused unscale + check.
// AUTO: %[[D:.*]] = amp.mul %{{.*}}, %[[S]]
// AUTO: %[[G:.*]] = amp.cast %{{.*}} : tensor<4x3xf16> to tensor<4x3xf32>
// The ops the pass inserts carry amp.origin.
// AUTO: %[[U:.*]], %[[F:.*]] = amp.unscale_check %[[G]] scale(%[[S]]) {amp.origin = "loss_scaling"} : tensor<4x3xf32>
// AUTO-NEXT: %[[NS:.*]], %[[NT:.*]] = amp.update_scale %[[S]], %[[T]], %[[F]] {amp.origin = "loss_scaling", backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64}
// AUTO-NEXT: return %{{.*}}, %[[U]], %[[F]], %[[NS]], %[[NT]]
// DYN-LABEL: func.func @train_step
// DYN-SAME: amp.init = #amp.init<constant, scale = 1.024000e+03>, amp.name = "amp.loss_scale"
// DYN: amp.update_scale {{.*}} {amp.origin = "loss_scaling", backoff_factor = 2.500000e-01 : f64, growth_factor = 4.000000e+00 : f64, growth_interval = 10 : i64}
// STATIC-LABEL: func.func @train_step
// STATIC-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<constant, scale = 1.280000e+02>, amp.name = "amp.loss_scale", amp.role = "state"})
// STATIC-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
// STATIC: amp.unscale_check %{{.*}} scale(%[[S]])
// STATIC-NOT: amp.update_scale
// NONE-LABEL: func.func @train_step
// NONE-NOT: amp.grad_seed
// NONE-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
// NONE: %[[ONE:.*]] = amp.constant dense<1.000000e+00> : tensor<f32>
// NONE: amp.mul %{{.*}}, %[[ONE]]
// NONE: amp.unscale_check %{{.*}} : tensor<4x3xf32>
// NONE-NOT: amp.update_scale
func.func @train_step(
    %x: tensor<8x4xf32> {amp.role = "input", amp.name = "x"},
    %w: tensor<4x3xf32> {amp.role = "param", amp.name = "w"},
    %t: tensor<8x3xf32> {amp.role = "label", amp.name = "t"},
    %seed: tensor<f32> {amp.role = "state", amp.name = "amp.grad_seed"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.grad_of = "w"})
    attributes {amp.entry = "train_step"} {
  %xh = amp.cast %x : tensor<8x4xf32> to tensor<8x4xf16>
  %wh = amp.cast %w : tensor<4x3xf32> to tensor<4x3xf16>
  %h = amp.matmul %xh, %wh : tensor<8x4xf16>, tensor<4x3xf16>
  %y = amp.cast %h : tensor<8x3xf16> to tensor<8x3xf32>
  %loss = amp.mse_loss %y, %t : tensor<8x3xf32>, tensor<8x3xf32>
  %d = amp.sub %y, %t : tensor<8x3xf32>, tensor<8x3xf32>
  %ds = amp.mul %d, %seed : tensor<8x3xf32>, tensor<f32>
  %dh = amp.cast %ds : tensor<8x3xf32> to tensor<8x3xf16>
  %gwh = amp.matmul %xh, %dh transpose_a : tensor<8x4xf16>, tensor<8x3xf16>
  %gw = amp.cast %gwh : tensor<4x3xf16> to tensor<4x3xf32>
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}

// -----

// A bf16 step: auto picks none (bf16 needs no scaling) but keeps the check.
// AUTO-LABEL: func.func @train_step
// AUTO-NOT: amp.loss_scale
// AUTO: amp.constant dense<1.000000e+00> : tensor<f32>
// AUTO: amp.unscale_check %{{.*}} : tensor<4xf32>
// AUTO-NOT: amp.update_scale
func.func @train_step(
    %w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
    %seed: tensor<f32> {amp.role = "state", amp.name = "amp.grad_seed"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"})
    attributes {amp.entry = "train_step"} {
  %wb = amp.cast %w : tensor<4xf32> to tensor<4xbf16>
  %w2 = amp.cast %wb : tensor<4xbf16> to tensor<4xf32>
  %loss = amp.mse_loss %w2, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %seed : tensor<4xf32>, tensor<f32>
  return %loss, %g : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{amp-loss-scaling: no function with amp.entry = "train_step"; run amp-autodiff first}}
module {
  func.func @model(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
    %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error @+1 {{amp-loss-scaling: @train_step already has loss scaling}}
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  return %l, %u, %f : tensor<f32>, tensor<4xf32>, tensor<f32>
}
