// RUN: amp-opt %s --split-input-file --amp-optimizer="kind=adamw lr=0.001 clip-grad-norm=1.0 schedule=cosine warmup=10 total-steps=100 min-lr=1e-5" --verify-diagnostics | FileCheck %s --check-prefix=ADAMW
// RUN: amp-opt %s --split-input-file --amp-optimizer="kind=sgd lr=0.1 momentum=0.9 nesterov=true weight-decay=1e-4" --verify-diagnostics | FileCheck %s --check-prefix=SGD
// RUN: amp-opt %s --split-input-file --amp-optimizer="kind=sgd lr=0.1" --verify-diagnostics | FileCheck %s --check-prefix=PLAIN
// RUN: amp-opt %s --split-input-file --amp-optimizer="kind=adam accumulate=4" --verify-diagnostics | FileCheck %s --check-prefix=ACC
// Compact optimizer state: bf16 moments, each update with its own rounding stream; Adam only.
// RUN: amp-opt %s --split-input-file --amp-optimizer="kind=adamw state=bf16" --verify-diagnostics | FileCheck %s --check-prefix=BF16
// RUN: not amp-opt %s --split-input-file --amp-optimizer="kind=sgd state=bf16" 2>&1 | FileCheck %s --check-prefix=BF16SGD
// BF16SGD: amp-optimizer: state=bf16 keeps Adam's moments in bf16: it needs kind=adam or adamw
// The option parser rejects an optimizer or schedule outside the enum and lists the accepted ones.
// RUN: not amp-opt %s --split-input-file --amp-optimizer="kind=lion" 2>&1 | FileCheck %s --check-prefix=BADKIND
// BADKIND: for the --kind option: 'lion' is not one of: sgd, adam, adamw
// RUN: not amp-opt %s --split-input-file --amp-optimizer="schedule=linear" 2>&1 | FileCheck %s --check-prefix=BADSCHEDULE
// BADSCHEDULE: for the --schedule option: 'linear' is not one of: constant, cosine

// The recipe on the module: the optimizer, its base rate and the accumulation window.
// ADAMW: module attributes {amp.optimizer = #amp.optimizer<kind = adamw, lr = 1.000000e-03 : f64>}
// ACC: module attributes {amp.optimizer = #amp.optimizer<kind = adam, lr = 1.000000e-03 : f64, accumulate = 4>}

// "After amp-loss-scaling{mode=dynamic}": the optimizer goes between the check and the update.
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {amp.name = "w", amp.role = "param"}
// ADAMW-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {amp.init = #amp.init<zeros>, amp.name = "amp.step", amp.role = "state"}
// ADAMW-SAME: %[[SKIP:[a-z0-9]+]]: tensor<i64> {amp.init = #amp.init<zeros>, amp.name = "amp.skipped_steps", amp.role = "state"}
// ADAMW-SAME: %[[M:[a-z0-9]+]]: tensor<4xf32> {amp.init = #amp.init<zeros>, amp.name = "w.exp_avg", amp.role = "state"}
// ADAMW-SAME: %[[V:[a-z0-9]+]]: tensor<4xf32> {amp.init = #amp.init<zeros>, amp.name = "w.exp_avg_sq", amp.role = "state"}
// ADAMW-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<f32> {amp.name = "found_inf"}, tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"}, tensor<f32> {amp.name = "lr"}, tensor<f32> {amp.name = "grad_norm"}, tensor<i64> {amp.updates = "amp.step"}, tensor<i64> {amp.updates = "amp.skipped_steps"}, tensor<4xf32> {amp.updates = "w"}, tensor<4xf32> {amp.updates = "w.exp_avg"}, tensor<4xf32> {amp.updates = "w.exp_avg_sq"})
// BF16-LABEL: func.func @train_step
// BF16-SAME: %[[M:[a-z0-9]+]]: tensor<4xbf16> {amp.init = #amp.init<zeros>, amp.name = "w.exp_avg", amp.role = "state"}
// BF16-SAME: %[[V:[a-z0-9]+]]: tensor<4xbf16> {amp.init = #amp.init<zeros>, amp.name = "w.exp_avg_sq", amp.role = "state"}
// BF16: amp.adam_update %{{.*}}, %[[M]], %[[V]], {{.*}} : tensor<4xf32>, tensor<4xf32> moments(bf16)
// ADAMW: %[[U:.*]], %[[F:.*]] = amp.unscale_check
// ADAMW-NEXT: %[[N:.*]] = amp.global_norm %[[U]] {amp.origin = "optimizer"} : tensor<4xf32>
// ADAMW-NEXT: %[[C:.*]] = amp.clip_grads %[[U]] norm(%[[N]]) {amp.origin = "optimizer", max_norm = 1.000000e+00 : f64} : tensor<4xf32>
// ADAMW-NEXT: %[[NSTEP:.*]], %[[NSKIP:.*]] = amp.step_counters %[[STEP]], %[[SKIP]], %[[F]]
// ADAMW-NEXT: %[[LR:.*]] = amp.lr_schedule cosine %[[NSTEP]] {amp.origin = "optimizer", base_lr = 1.000000e-03 : f64, min_lr = 1.000000e-05 : f64, total_steps = 100 : i64, warmup_steps = 10 : i64}
// ADAMW-NEXT: %[[P:.*]], %[[M2:.*]], %[[V2:.*]] = amp.adam_update %[[W]], %[[C]], %[[M]], %[[V]], %[[NSTEP]], %[[LR]], %[[F]] {amp.origin = "optimizer", decoupled = true, weight_decay = 1.000000e-02 : f64} : tensor<4xf32>, tensor<4xf32>
// ADAMW-NEXT: %[[S2:.*]], %[[T2:.*]] = amp.update_scale
// ADAMW-NEXT: return %{{.*}}, %[[F]], %[[S2]], %[[T2]], %[[LR]], %[[N]], %[[NSTEP]], %[[NSKIP]], %[[P]], %[[M2]], %[[V2]]
// SGD-LABEL: func.func @train_step
// SGD-SAME: %[[B:[a-z0-9]+]]: tensor<4xf32> {amp.init = #amp.init<zeros>, amp.name = "w.momentum_buffer", amp.role = "state"}
// SGD-SAME: tensor<4xf32> {amp.updates = "w"}, tensor<4xf32> {amp.updates = "w.momentum_buffer"})
// SGD-NOT: amp.global_norm
// SGD: amp.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} momentum_buffer(%[[B]] : tensor<4xf32>) {amp.origin = "optimizer", momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-04 : f64}
// PLAIN-LABEL: func.func @train_step
// PLAIN-NOT: momentum_buffer
// PLAIN: %[[P:.*]] = amp.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {amp.origin = "optimizer"} : tensor<4xf32>, tensor<4xf32>
// ACC-LABEL: func.func @train_step
// ACC-SAME: %[[A:[a-z0-9]+]]: tensor<4xf32> {amp.init = #amp.init<zeros>, amp.name = "w.grad_accum", amp.role = "state"}
// ACC-SAME: %[[LSUM:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<zeros>, amp.name = "amp.loss_sum", amp.role = "state"}
// ACC: %[[L:.*]] = amp.mse_loss
// ACC: %[[G:.*]] = amp.mul
// ACC: %[[K:.*]] = amp.constant dense<4.000000e+00> : tensor<f32>
// ACC-NEXT: %[[SUM:.*]] = amp.add %[[A]], %[[G]]
// ACC-NEXT: %[[MEAN:.*]] = amp.div %[[SUM]], %[[K]] {amp.origin = "accumulate"}
// The reset value is a scalar zero broadcast to the param's shape, not a param-sized constant.
// ACC-NEXT: %[[Z0:.*]] = amp.constant dense<0.000000e+00> : tensor<f32>
// ACC-NEXT: %[[Z:.*]] = amp.broadcast_to %[[Z0]] {amp.origin = "accumulate"} : tensor<f32> -> tensor<4xf32>
// ACC-NEXT: amp.unscale_check %[[MEAN]] scale
// ACC: amp.update_scale
// The step's loss is the window's: (the sum of the earlier micro-batches' losses + this one) / K,
// and the sum goes back to zero.
// ACC: %[[WSUM:.*]] = amp.add %[[LSUM]], %[[L]]
// ACC-NEXT: %[[WLOSS:.*]] = amp.div %[[WSUM]], %[[K]]
// ACC-NEXT: %[[LZ:.*]] = amp.constant dense<0.000000e+00> : tensor<f32>
// ACC: return %[[WLOSS]], {{.*}}%[[Z]], %[[LZ]]
// ACC-LABEL: func.func @accumulate
// ACC-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<constant, scale = 6.553600e+04>, amp.name = "amp.loss_scale", amp.role = "state"}
// ACC-SAME: %[[LS:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<zeros>, amp.name = "amp.loss_sum", amp.role = "state"}
// ACC-SAME: %[[A2:[a-z0-9]+]]: tensor<4xf32> {amp.init = #amp.init<zeros>, amp.name = "w.grad_accum", amp.role = "state"}
// ACC-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<f32> {amp.updates = "amp.loss_sum"}, tensor<4xf32> {amp.updates = "w.grad_accum"})
// ACC-SAME: attributes {amp.entry = "accumulate"}
// ACC: %[[L2:.*]] = amp.mse_loss
// ACC: %[[G2:.*]] = amp.mul %{{.*}}, %[[S]]
// ACC-NEXT: %[[N:.*]] = amp.add %[[A2]], %[[G2]]
// ACC-NEXT: %[[LS2:.*]] = amp.add %[[LS]], %[[L2]]
// ACC-NOT: amp.unscale_check
// ACC-NOT: amp.update_scale
// ACC: return %[[L2]], %[[LS2]], %[[N]]
func.func @train_step(
    %w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
    %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale", amp.init = #amp.init<constant, scale = 65536.0>},
    %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker", amp.init = #amp.init<zeros>})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"},
        tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  %s2, %t2 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %l, %u, %f, %s2, %t2 : tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<i32>
}

// -----

// Without loss scaling the optimizer adds a check-only amp.unscale_check: updates stay guarded.
// ADAMW-LABEL: func.func @train_step
// ADAMW: %[[U:.*]], %[[F:.*]] = amp.unscale_check %{{.*}} {amp.origin = "optimizer"} : tensor<4xf32>
// ADAMW: amp.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[F]]
// ADAMW: return {{.*}} : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.add %w, %w : tensor<4xf32>, tensor<4xf32>
  return %l, %g : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{amp-optimizer: result #1 is the gradient of 'nope', which is not a param of @train_step}}
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "nope"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// A param that autocast casts down is read through a low-precision copy: state `w.bf16`,
// initialised as the cast of `w` and written by the update itself (also in @accumulate's forward).
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: %[[W:[a-z0-9]+]]: tensor<4x4xf32> {amp.name = "w", amp.role = "param"}
// ADAMW-SAME: %[[WB:[a-z0-9]+]]: tensor<4x4xbf16> {amp.init = #amp.init<cast, from = "w">, amp.name = "w.bf16", amp.role = "state"}
// ADAMW-SAME: tensor<4x4xbf16> {amp.updates = "w.bf16"})
// ADAMW-NOT: amp.cast %[[W]]
// ADAMW: amp.matmul %{{.*}}, %[[WB]]
// ADAMW: %[[P:.*]], %{{.*}}, %{{.*}} = amp.adam_update %[[W]]
// ADAMW: %[[COPY:.*]] = amp.cast %[[P]] {amp.origin = "optimizer"} : tensor<4x4xf32> to tensor<4x4xbf16>
// ADAMW: return {{.*}}, %[[COPY]] :
// ACC: func.func @accumulate({{.*}}%[[AWB:[a-z0-9]+]]: tensor<4x4xbf16> {amp.init = #amp.init<cast, from = "w">, amp.name = "w.bf16", amp.role = "state"}
// ACC: amp.matmul %{{.*}}, %[[AWB]]
func.func @train_step(
    %x: tensor<2x4xbf16> {amp.role = "input", amp.name = "x"},
    %w: tensor<4x4xf32> {amp.role = "param", amp.name = "w"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4x4xf32> {amp.grad_of = "w"})
    attributes {amp.entry = "train_step"} {
  %wb = amp.cast %w : tensor<4x4xf32> to tensor<4x4xbf16>
  %y = amp.matmul %x, %wb : tensor<2x4xbf16>, tensor<4x4xbf16>
  %y32 = amp.cast %y : tensor<2x4xbf16> to tensor<2x4xf32>
  %l = amp.reduce_sum %y32 dims = [0, 1] : tensor<2x4xf32>
  %g = amp.reduce_sum %y32 dims = [0] keepdim : tensor<2x4xf32>
  %gw = amp.broadcast_to %g : tensor<1x4xf32> -> tensor<4x4xf32>
  return %l, %gw : tensor<f32>, tensor<4x4xf32>
}
