// RUN: amp-opt %s --split-input-file --amp-verify --verify-diagnostics

// A correct f16 step passes: f32 masters and loss, clip after unscale, guarded update, one
// scale update written back.
func.func @train_step(
    %x: tensor<8x4xf32> {amp.role = "input", amp.name = "x"},
    %w: tensor<4x4xf32> {amp.role = "param", amp.name = "w"},
    %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
    %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker"},
    %lr: tensor<f32> {amp.role = "state", amp.name = "lr"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4x4xf32> {amp.updates = "w"},
        tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
    attributes {amp.entry = "train_step"} {
  %xh = amp.cast %x : tensor<8x4xf32> to tensor<8x4xf16>
  %wh = amp.cast %w : tensor<4x4xf32> to tensor<4x4xf16>
  %h = amp.matmul %xh, %wh : tensor<8x4xf16>, tensor<4x4xf16>
  %y = amp.cast %h : tensor<8x4xf16> to tensor<8x4xf32>
  %l = amp.mse_loss %y, %x : tensor<8x4xf32>, tensor<8x4xf32>
  %g = amp.mul %w, %s : tensor<4x4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4x4xf32>
  %n = amp.global_norm %u : tensor<4x4xf32>
  %c = amp.clip_grads %u norm(%n) {max_norm = 1.0 : f64} : tensor<4x4xf32>
  %p = amp.sgd_update %w, %c, %lr, %f : tensor<4x4xf32>, tensor<4x4xf32>
  %s2, %t2 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %l, %p, %s2, %t2 : tensor<f32>, tensor<4x4xf32>, tensor<f32>, tensor<i32>
}

// -----

// AMP004 (rule 3): the loss computed in f16 and cast to f32.
func.func @model(%x: tensor<4xf16> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  // expected-error @+2 {{amp-verify: [AMP004] loss op 'amp.mse_loss' runs in f16; every loss runs in f32 (docs/design.md rule 3)}}
  // expected-error @+1 {{amp-verify: [AMP003] 'amp.mse_loss' runs in f16 but the 'pytorch' policy puts it in fp32 (f32)}}
  %l = amp.mse_loss %x, %x : tensor<4xf16>, tensor<4xf16>
  // expected-error @+1 {{amp-verify: [AMP004] the loss is computed in f16 and only then cast to f32; the loss must be computed in f32 (docs/design.md rule 3)}}
  %l32 = amp.cast %l : tensor<f16> to tensor<f32>
  return %l32 : tensor<f32>
}

// -----

// AMP001 (rule 1): a low-precision master weight.
func.func @model(
    // expected-error @+1 {{amp-verify: [AMP001] param 'w' is a bf16 master weight; master weights must be f32: only compute runs in low precision (docs/design.md rule 1)}}
    %w: tensor<4xbf16> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
  %w32 = amp.cast %w : tensor<4xbf16> to tensor<4xf32>
  %l = amp.mse_loss %w32, %w32 : tensor<4xf32>, tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// AMP002 (rule 1): a low-precision gradient reaching the optimizer.
// expected-warning @+1 {{amp-verify: [AMP005] f16 training without loss scaling}}
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %lr: tensor<f32> {amp.role = "state", amp.name = "lr"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.updates = "w"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %gh = amp.cast %w : tensor<4xf32> to tensor<4xf16>
  %u, %f = amp.unscale_check %gh : tensor<4xf16>
  // expected-error @+1 {{amp-verify: [AMP002] a f16 gradient reaches the optimizer update; the optimizer computes in f32: a gradient reaches it as f32, or as stored by its GEMM and widened exactly by the update itself (amp-fuse-grad-pipeline) (docs/design.md rule 1)}}
  %p = amp.sgd_update %w, %u, %lr, %f : tensor<4xf32>, tensor<4xf16>
  return %l, %p : tensor<f32>, tensor<4xf32>
}

// -----

// AMP002 (rule 1): a low-precision amp.grad_of result.
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xbf16> {amp.grad_of = "w"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{amp-verify: [AMP002] the gradient of 'w' (result #1) is bf16; the optimizer computes in f32: a gradient reaches it as f32, or as stored by its GEMM and widened exactly by the update itself (amp-fuse-grad-pipeline) (docs/design.md rule 1)}}
  %g = amp.cast %w : tensor<4xf32> to tensor<4xbf16>
  return %l, %g : tensor<f32>, tensor<4xbf16>
}

// -----

// AMP006 (rule 4): clipping on scaled gradients.
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  // expected-error @+1 {{amp-verify: [AMP006] clipping sees scaled gradients (operand #0 depends on the loss scale without passing through amp.unscale_check); clip after unscaling (docs/design.md rule 4)}}
  %n = amp.global_norm %g : tensor<4xf32>
  // expected-error @+1 {{amp-verify: [AMP006] clipping sees scaled gradients}}
  %c = amp.clip_grads %g norm(%n) {max_norm = 1.0 : f64} : tensor<4xf32>
  %u, %f = amp.unscale_check %c scale(%s) : tensor<4xf32>
  return %l, %u, %f : tensor<f32>, tensor<4xf32>, tensor<f32>
}

// -----

// AMP008 (rule 4): the scale update missing.
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
                      // expected-error @+1 {{amp-verify: [AMP008] dynamic loss scaling (state 'amp.growth_tracker') but no amp.update_scale: the scale update is missing (docs/design.md rule 4)}}
                      %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  return %l, %u, %f : tensor<f32>, tensor<4xf32>, tensor<f32>
}

// -----

// AMP008 (rule 4): the scale update run twice (two optimizers each updating it).
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
                      %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  %s1, %t1 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  // expected-error @+1 {{amp-verify: [AMP008] the scale update runs 2 times per step; it must run exactly once, across all optimizers (docs/design.md rule 4)}}
  %s2, %t2 = amp.update_scale %s1, %t1, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %l, %s2, %t2 : tensor<f32>, tensor<f32>, tensor<i32>
}

// -----

// AMP008 (rule 4): the scale update inside the accumulation window.
func.func @accumulate(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
                      %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
    attributes {amp.entry = "accumulate"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  // expected-error @+1 {{amp-verify: [AMP008] the scale update runs in @accumulate; the scale must stay fixed over the accumulation window and be updated once, at its end (docs/design.md rule 4)}}
  %s1, %t1 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %l, %s1, %t1 : tensor<f32>, tensor<f32>, tensor<i32>
}

// -----

// AMP009 (rule 5): an update not guarded by found_inf.
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %lr: tensor<f32> {amp.role = "state", amp.name = "lr"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.updates = "w"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %zero = amp.constant dense<0.0> : tensor<f32>
  // expected-error @+1 {{amp-verify: [AMP009] 'amp.sgd_update' is not guarded by the found_inf of an amp.unscale_check; a step with a non-finite gradient must change no state (docs/design.md rule 5)}}
  %p = amp.sgd_update %w, %w, %lr, %zero : tensor<4xf32>, tensor<4xf32>
  return %l, %p : tensor<f32>, tensor<4xf32>
}

// -----

// AMP005 (rule 3): f16 training without loss scaling is a warning.
// expected-warning @+1 {{amp-verify: [AMP005] f16 training without loss scaling: small gradients flush to zero in f16; run amp-loss-scaling with mode=dynamic (docs/design.md rule 3)}}
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
    attributes {amp.entry = "train_step"} {
  %wh = amp.cast %w : tensor<4xf32> to tensor<4xf16>
  %y = amp.relu %wh : tensor<4xf16>
  %y32 = amp.cast %y : tensor<4xf16> to tensor<4xf32>
  %l = amp.mse_loss %y32, %w : tensor<4xf32>, tensor<4xf32>
  %u, %f = amp.unscale_check %y32 : tensor<4xf32>
  return %l, %u, %f : tensor<f32>, tensor<4xf32>, tensor<f32>
}

// -----

// AMP003 (rule 2): an op the policy denies runs in low precision (an explicit override is exempt).
func.func @model(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  %xh = amp.cast %x : tensor<4xf32> to tensor<4xbf16>
  // expected-error @+1 {{amp-verify: [AMP003] 'amp.exp' runs in bf16 but the 'pytorch' policy puts it in fp32 (f32); numerically sensitive ops run in f32; force it with an override if intended (docs/design.md rule 2)}}
  %e = amp.exp %xh : tensor<4xbf16>
  %e2 = amp.exp %xh {amp.precision = "bf16", amp.reason = #amp.reason<override, detail = "op:amp.exp -> bf16; runs in bf16">} : tensor<4xbf16>
  %s = amp.add %e, %e2 : tensor<4xbf16>, tensor<4xbf16>
  %s32 = amp.cast %s : tensor<4xbf16> to tensor<4xf32>
  %l = amp.mse_loss %s32, %x : tensor<4xf32>, tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// AMP003 (rule 2) for backward ops: judged by the forward op they differentiate. The bias
// gradient of a bf16 amp.linear (lower_precision_fp) may be a bf16 reduce_sum; a bf16 backward op
// of amp.exp (fp32) may not.
func.func @model(%x: tensor<4x4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  %xh = amp.cast %x : tensor<4x4xf32> to tensor<4x4xbf16>
  %db = amp.reduce_sum %xh dims = [0] {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.linear">} : tensor<4x4xbf16>
  // expected-error @+1 {{amp-verify: [AMP003] 'amp.mul' (backward of 'amp.exp') runs in bf16 but the 'pytorch' policy puts 'amp.exp' in fp32 (f32); numerically sensitive ops run in f32 (docs/design.md rule 2)}}
  %de = amp.mul %db, %db {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.exp">} : tensor<4xbf16>, tensor<4xbf16>
  // An op named by its own reason is still judged as itself.
  // expected-error @+1 {{amp-verify: [AMP003] 'amp.reduce_sum' runs in bf16 but the 'pytorch' policy puts it in fp32_set_opt_dtype (f32)}}
  %s = amp.reduce_sum %de dims = [0] keepdim {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.nothing">} : tensor<4xbf16>
  %s32 = amp.cast %s : tensor<1xbf16> to tensor<1xf32>
  %t = amp.constant dense<1.0> : tensor<1xf32>
  %l = amp.mse_loss %s32, %t : tensor<1xf32>, tensor<1xf32>
  return %l : tensor<f32>
}

// -----

// AMP003 (rule 2): the backward ops of an op the user forced take its precision (amp-autodiff),
// so the override exempts them too: `--precision-override=op:amp.exp=bf16` must compile under
// --train. A backward op of another, unforced op is still judged.
func.func @model(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  %xh = amp.cast %x : tensor<4xf32> to tensor<4xbf16>
  %e = amp.exp %xh {amp.precision = "bf16", amp.reason = #amp.reason<override, detail = "op:amp.exp -> bf16; runs in bf16">} : tensor<4xbf16>
  %de = amp.mul %e, %e {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.exp">} : tensor<4xbf16>, tensor<4xbf16>
  // expected-error @+1 {{amp-verify: [AMP003] 'amp.mul' (backward of 'amp.log') runs in bf16}}
  %dl = amp.mul %de, %e {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.log">} : tensor<4xbf16>, tensor<4xbf16>
  %s32 = amp.cast %dl : tensor<4xbf16> to tensor<4xf32>
  %l = amp.mse_loss %s32, %x : tensor<4xf32>, tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// AMP004 (rule 3): the returned loss of a training entry in bf16.
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
    -> (tensor<bf16> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}, tensor<f32> {amp.name = "found_inf"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{amp-verify: [AMP004] the loss (result #0) is bf16; the loss must be computed in f32 (docs/design.md rule 3)}}
  %lh = amp.cast %l : tensor<f32> to tensor<bf16>
  %u, %f = amp.unscale_check %w : tensor<4xf32>
  return %lh, %u, %f : tensor<bf16>, tensor<4xf32>, tensor<f32>
}

// -----

// AMP007 (rule 4): the optimizer steps on the scaled gradient (the unscaled one only feeds the
// flag).
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
                      %lr: tensor<f32> {amp.role = "state", amp.name = "lr"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.updates = "w"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  // expected-error @+1 {{amp-verify: [AMP007] the optimizer steps on scaled gradients (the gradient depends on the loss scale without passing through amp.unscale_check); step after unscaling (docs/design.md rule 4)}}
  %p = amp.sgd_update %w, %g, %lr, %f : tensor<4xf32>, tensor<4xf32>
  return %l, %p : tensor<f32>, tensor<4xf32>
}

// -----

// AMP008 (rule 4): the scale update's results not written back (the new scale is lost).
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
                      %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %s : tensor<4xf32>, tensor<f32>
  %u, %f = amp.unscale_check %g scale(%s) : tensor<4xf32>
  // expected-error @+1 {{amp-verify: [AMP008] the scale update's results are not returned with amp.updates = "amp.loss_scale" and "amp.growth_tracker": the scale update is lost (docs/design.md rule 4)}}
  %s1, %t1 = amp.update_scale %s, %t, %f {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %l, %t1 : tensor<f32>, tensor<i32>
}

// -----

// AMP008 (rule 4): the scale update reads a flag that no unscale check produced.
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                      %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale"},
                      %t: tensor<i32> {amp.role = "state", amp.name = "amp.growth_tracker"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<f32> {amp.updates = "amp.loss_scale"}, tensor<i32> {amp.updates = "amp.growth_tracker"})
    attributes {amp.entry = "train_step"} {
  %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %zero = amp.constant dense<0.0> : tensor<f32>
  // expected-error @+1 {{amp-verify: [AMP008] the scale update does not read the found_inf of an amp.unscale_check; it must follow the unscale and inf check (docs/design.md rule 4)}}
  %s1, %t1 = amp.update_scale %s, %t, %zero {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
  return %l, %s1, %t1 : tensor<f32>, tensor<f32>, tensor<i32>
}

// -----

// AMP010 (rule 9): a data-parallel step whose update reads a gradient that was not reduced. The
// bias gradient is reduced; the weight gradient goes to the check (and the update) unreduced.
module attributes {amp.data_parallel = #amp.data_parallel<reduce = f32>} {
  func.func @train_step(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
                        %w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                        %b: tensor<4xf32> {amp.role = "param", amp.name = "b"},
                        %lr: tensor<f32> {amp.role = "state", amp.name = "lr"})
      -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.updates = "w"}, tensor<4xf32> {amp.updates = "b"})
      attributes {amp.entry = "train_step"} {
    %l = amp.mse_loss %x, %w : tensor<4xf32>, tensor<4xf32>
    %gw = amp.mul %x, %w : tensor<4xf32>, tensor<4xf32>
    %gb = amp.add %x, %b : tensor<4xf32>, tensor<4xf32>
    %rb = amp.all_reduce mean %gb : tensor<4xf32>
    %u:2, %f = amp.unscale_check %gw, %rb : tensor<4xf32>, tensor<4xf32>
    %fr = amp.all_reduce max %f : tensor<f32>
    // expected-error @+1 {{amp-verify: [AMP010] in a data-parallel step the update of 'w' (result #1) depends on this rank's data without passing through amp.all_reduce (a gradient or found_inf that was not reduced); the replicas would diverge (docs/design.md rule 9)}}
    %pw = amp.sgd_update %w, %u#0, %lr, %fr : tensor<4xf32>, tensor<4xf32>
    %pb = amp.sgd_update %b, %u#1, %lr, %fr : tensor<4xf32>, tensor<4xf32>
    return %l, %pw, %pb : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// AMP010: the skip decision reads this rank's found_inf, not the reduced one: the flag itself
// depends on the rank's data, so every update it guards does.
module attributes {amp.data_parallel = #amp.data_parallel<reduce = f32>} {
  func.func @train_step(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
                        %w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
                        %lr: tensor<f32> {amp.role = "state", amp.name = "lr"})
      -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.updates = "w"})
      attributes {amp.entry = "train_step"} {
    %l = amp.mse_loss %x, %w : tensor<4xf32>, tensor<4xf32>
    %g = amp.mul %x, %w : tensor<4xf32>, tensor<4xf32>
    %rg = amp.all_reduce mean %g : tensor<4xf32>
    %u, %f = amp.unscale_check %rg : tensor<4xf32>
    %ulocal, %flocal = amp.unscale_check %g : tensor<4xf32>
    // expected-error @+1 {{amp-verify: [AMP010] in a data-parallel step the update of 'w'}}
    %pw = amp.sgd_update %w, %u, %lr, %flocal : tensor<4xf32>, tensor<4xf32>
    return %l, %pw : tensor<f32>, tensor<4xf32>
  }
}
