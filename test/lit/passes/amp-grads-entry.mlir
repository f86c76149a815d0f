// RUN: amp-opt %s --split-input-file --amp-loss-scaling="mode=dynamic" --amp-grads-entry --verify-diagnostics | FileCheck %s
// RUN: amp-opt %s --split-input-file --amp-loss-scaling="mode=none" --amp-grads-entry --verify-diagnostics | FileCheck %s --check-prefix=NONE
// RUN: amp-opt %s --split-input-file --amp-loss-scaling="mode=dynamic" --amp-grads-entry --amp-optimizer --amp-verify | FileCheck %s --check-prefix=OPT

// An f16 step with dynamic scaling: @grads runs the same scaled backward and unscale_check but
// returns `<param>.grad` and updates nothing (no update_scale, no growth tracker).
// CHECK-LABEL: func.func @train_step
// CHECK: amp.update_scale
// CHECK-LABEL: func.func @grads
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<constant, scale = 6.553600e+04>, amp.name = "amp.loss_scale", amp.role = "state"})
// CHECK-NOT: amp.growth_tracker
// CHECK-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.name = "w.grad"}, tensor<f32> {amp.name = "found_inf"})
// CHECK-SAME: attributes {amp.entry = "grads"}
// CHECK: %[[D:.*]] = amp.mul %{{.*}}, %[[S]]
// CHECK: %[[U:.*]], %[[F:.*]] = amp.unscale_check %{{.*}} scale(%[[S]]) {amp.origin = "loss_scaling"} : tensor<4x3xf32>
// CHECK-NOT: amp.update_scale
// CHECK-NEXT: return %{{.*}}, %[[U]], %[[F]]
// Without scaling the seed is 1 and only the check remains.
// NONE-LABEL: func.func @grads
// NONE-NOT: amp.loss_scale
// NONE-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.name = "w.grad"}, tensor<f32> {amp.name = "found_inf"})
// NONE: amp.unscale_check %{{.*}} : tensor<4x3xf32>
// The optimizer consumes @train_step's gradients only; @grads passes amp-verify untouched.
// OPT-LABEL: func.func @train_step
// OPT: amp.sgd_update
// OPT-LABEL: func.func @grads
// OPT-NOT: amp.sgd_update
// OPT-NOT: amp.step
// OPT: return
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
