//===- AmpTrainOps.td - loss-scaling and optimizer ops ---------------------===//
// Included from AmpOps.td (Amp_Op and the type constraints are defined there).
//
// These ops are inserted by amp-loss-scaling and amp-optimizer into `@train_step`
// (docs/training-ir.md). Scalars are rank-0 tensors. Every op is pure: "in place" updates are
// new SSA values that the function returns with `amp.updates`. The reference executor
// (runtime/reference/ReferenceTrain.cpp, docs/reference-executor.md) gives the exact f32 order of
// every formula below.

// Rank-0 scalars. The builder calls let assembly formats omit their types.
class Amp_Scalar<Type t, string builder> : 0DTensorOf<[t]> {
  let builderCall = "::mlir::RankedTensorType::get({}, " # builder # ")";
}
def Amp_ScalarF32 : Amp_Scalar<F32, "$_builder.getF32Type()">;
def Amp_ScalarI32 : Amp_Scalar<I32, "$_builder.getIntegerType(32)">;
def Amp_ScalarI64 : Amp_Scalar<I64, "$_builder.getIntegerType(64)">;
def Amp_F32Tensor : StaticShapeTensorOf<[F32]>;
// Adam's moments: f32, or bf16 with stochastic rounding (amp.adam_update).
def Amp_MomentTensor : StaticShapeTensorOf<[F32, BF16]>;

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

def Amp_UnscaleCheckOp : Amp_Op<"unscale_check", [Amp_MultiTensorStep, AttrSizedOperandSegments,
    InferTypeOpAdaptor]> {
  let summary = "Fused unscale and non-finite check of a list of gradients";
  let description = [{
    PyTorch's `_amp_foreach_non_finite_check_and_unscale_` as a pure op. For every element of
    every gradient (computed in f32; f16/bf16 gradients are widened first):

    - `found_inf` is `1.0` if any element of any gradient is NaN or ±inf, else `0.0`;
    - with a `scale` operand, `inv_scale = f32(1 / f64(scale))` (the reciprocal is taken in f64,
      as GradScaler does) and each result element is `g` when `inv_scale == 1.0` exactly and
      `fl(g * inv_scale)` otherwise, rounded back to the gradient's element type;
    - without a `scale` operand (loss scaling `none`) the gradients are returned unchanged and
      only checked.

    The unscaled results have the types of the gradients. Non-finite values are multiplied like
    any other (the step that uses them is skipped through `found_inf`).

    ```mlir
    %g1u, %g2u, %found_inf = amp.unscale_check %g1, %g2 scale(%scale)
        : tensor<784x256xf32>, tensor<256xf32>
    %h, %found = amp.unscale_check %g : tensor<4xf32>      // check only
    ```
  }];
  let arguments = (ins Variadic<Amp_FloatTensor>:$grads, Optional<Amp_ScalarF32>:$scale);
  let results = (outs Variadic<Amp_FloatTensor>:$unscaled, Amp_ScalarF32:$found_inf);
  let assemblyFormat = [{
    $grads (`scale` `(` $scale^ `)`)? attr-dict `:` type($grads)
  }];
  let hasVerifier = 1;
}

def Amp_UpdateScaleOp : Amp_Op<"update_scale", [Amp_MultiTensorStep]> {
  let summary = "Dynamic loss-scale update (PyTorch `_amp_update_scale_`)";
  let description = [{
    With `found = (found_inf != 0)` (so `2.0`, the sum of two optimizers' flags, and NaN count
    as found):

    - found: `scale' = f32(f64(scale) * backoff_factor)`, `tracker' = 0`;
    - else `s = tracker + 1`; if `s == growth_interval`: `cand = f32(f64(scale) * growth_factor)`,
      `scale' = cand` if `cand` is finite else `scale` (the scale never grows to inf), and
      `tracker' = 0` in both cases; otherwise `scale' = scale`, `tracker' = s`.

    The products are taken in f64 and rounded once to f32, as the CUDA and CPU kernels do
    (`float * double`). There is no lower clamp: the scale may drop below 1. Attributes must
    satisfy `growth_factor > 1`, `0 < backoff_factor < 1` and
    `1 <= growth_interval <= 2^31 - 1` (the tracker is i32).

    ```mlir
    %scale2, %tracker2 = amp.update_scale %scale, %tracker, %found_inf
        {growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 2000 : i64}
    ```
  }];
  let arguments = (ins Amp_ScalarF32:$scale, Amp_ScalarI32:$growth_tracker,
                       Amp_ScalarF32:$found_inf,
                       Amp_BoundedAttr<F64Attr, "1.0", "INFINITY", 1, 1>:$growth_factor,
                       Amp_BoundedAttr<F64Attr, "0.0", "1.0", 1, 1>:$backoff_factor,
                       Amp_BoundedAttr<I64Attr, "1", "2147483647">:$growth_interval);
  let results = (outs Amp_ScalarF32:$new_scale, Amp_ScalarI32:$new_growth_tracker);
  let assemblyFormat = "$scale `,` $growth_tracker `,` $found_inf attr-dict";
}

//===----------------------------------------------------------------------===//
// Clipping
//===----------------------------------------------------------------------===//

def Amp_GlobalNormOp : Amp_Op<"global_norm", [Amp_MultiTensorStep]> {
  let summary = "Global 2-norm of a list of f32 gradients (clip_grad_norm_'s total_norm)";
  let description = [{
    As `torch.nn.utils.clip_grad_norm_` with `norm_type = 2`: the 2-norm of each tensor, then the
    2-norm of those norms. In f32: `n_t = sqrt(fl(Σ_i fl(g_i · g_i)))` with the sum taken
    sequentially in row-major order starting from 0, then
    `result = sqrt(fl(Σ_t fl(n_t · n_t)))` over the tensors in operand order. An empty tensor
    contributes 0; a non-finite element gives a non-finite norm.

    ```mlir
    %norm = amp.global_norm %g1, %g2 : tensor<784x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Variadic<Amp_F32Tensor>:$grads);
  let results = (outs Amp_ScalarF32:$norm);
  let assemblyFormat = "$grads attr-dict `:` type($grads)";
  let hasVerifier = 1;
}

def Amp_ClipGradsOp : Amp_Op<"clip_grads", [Amp_MultiTensorStep, InferTypeOpAdaptor]> {
  let summary = "Scales gradients so that their global norm is at most max_norm";
  let description = [{
    PyTorch's `_clip_grads_with_norm_`: `coef = min(f32(1 / fl(norm + f32(1e-6))) * f32(max_norm),
    1.0)` (Python's `max_norm / t` is `t.reciprocal() * max_norm`; `clamp` keeps NaN), then every
    element `g' = fl(g · coef)`. The multiply is unconditional, as in PyTorch (by 1.0 it is exact).
    `norm` is normally the result of `amp.global_norm` over the same gradients. `max_norm > 0`.

    ```mlir
    %c1, %c2 = amp.clip_grads %g1, %g2 norm(%norm) {max_norm = 1.0 : f64}
        : tensor<784x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Variadic<Amp_F32Tensor>:$grads, Amp_ScalarF32:$norm, Amp_PositiveF64Attr:$max_norm);
  let results = (outs Variadic<Amp_F32Tensor>:$clipped);
  let assemblyFormat = "$grads `norm` `(` $norm `)` attr-dict `:` type($grads)";
  let hasVerifier = 1;
}

def Amp_GradStatsOp : Amp_Op<"grad_stats", [Amp_MultiTensorStep, AttrSizedOperandSegments]> {
  let summary = "found_inf and the global norm of the unscaled gradients, read once as stored";
  let description = [{
    Formed by amp-fuse-grad-pipeline from an `amp.unscale_check` (and the `amp.global_norm` over
    its results) whose unscaled gradients only the norm, `amp.clip_grads` and the optimizer
    updates read. Each gradient is read as stored (f16/bf16 where the unfused step widened it to
    f32 first) and widened to f32; then, exactly as the ops it replaces:

    - `found_inf` is `1.0` if any element of any gradient is NaN or ±inf, else `0.0`;
    - `norm` (present when the op has two results) is `amp.global_norm` of the unscaled values
      `u = inv_scale == 1 ? g : fl(g · inv_scale)`, `inv_scale = f32(1 / f64(scale))`, summed in
      the same order.

    The unscaled gradients themselves are not materialised: the updates that read them unscale
    (and clip) each element as they read it (`unscale(...)`, `clip(...)` on `amp.sgd_update` and
    `amp.adam_update`), so every value is the bits of the unfused ops.

    ```mlir
    %found, %norm = amp.grad_stats %g1, %g2 scale(%scale)
        : tensor<784x256xbf16>, tensor<256xf32> -> tensor<f32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Amp_FloatTensor>:$grads, Optional<Amp_ScalarF32>:$scale);
  let results = (outs Amp_ScalarF32:$found_inf, Optional<Amp_ScalarF32>:$norm);
  let assemblyFormat = [{
    $grads (`scale` `(` $scale^ `)`)? attr-dict `:` type($grads) `->` type(results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Counters and learning-rate schedule
//===----------------------------------------------------------------------===//

def Amp_StepCountersOp : Amp_Op<"step_counters", [Amp_MultiTensorStep]> {
  let summary = "Advances the step counter, or the skipped-step counter on overflow";
  let description = [{
    With `found = (found_inf != 0)`: `step' = found ? step : step + 1` and
    `skipped' = found ? skipped + 1 : skipped`. A skipped step therefore does not advance the
    step counter, bias correction or the learning-rate schedule.

    ```mlir
    %step2, %skipped2 = amp.step_counters %step, %skipped, %found_inf
    ```
  }];
  let arguments = (ins Amp_ScalarI64:$step, Amp_ScalarI64:$skipped, Amp_ScalarF32:$found_inf);
  let results = (outs Amp_ScalarI64:$new_step, Amp_ScalarI64:$new_skipped);
  let assemblyFormat = "$step `,` $skipped `,` $found_inf attr-dict";
}

def Amp_LrScheduleOp : Amp_Op<"lr_schedule", [Amp_MultiTensorStep]> {
  let summary = "Learning rate of the given (1-based) step: constant or linear warmup + cosine";
  let description = [{
    `step` is the step count after this step's `amp.step_counters` (1 on the first applied step).
    With `t = step`, `W = warmup_steps`, `T = total_steps`, evaluated in f64 and rounded once to
    f32:

    - `1 <= t <= W` (warmup, either kind): `lr = base_lr · t / W`;
    - `constant`, `t > W`: `lr = base_lr`;
    - `cosine`, `t > W`: `p = min(1, (t − W) / (T − W))`,
      `lr = min_lr + 0.5 · (base_lr − min_lr) · (1 + cos(π · p))`, so `lr = base_lr` at `t = W`
      and `min_lr` from `t = T` on;
    - `t <= 0` (no step applied yet) gives the value at `t = 1`.

    Requires `base_lr >= 0`, `warmup_steps >= 0`, and for cosine `0 <= min_lr <= base_lr` and
    `total_steps > warmup_steps`.

    ```mlir
    %lr = amp.lr_schedule cosine %step {base_lr = 1.0e-3 : f64, warmup_steps = 100 : i64,
                                        total_steps = 10000 : i64, min_lr = 0.0 : f64}
    ```
  }];
  let arguments = (ins Amp_ScalarI64:$step, Amp_LrScheduleKindAttr:$kind, Amp_NonNegativeF64Attr:$base_lr,
                       DefaultValuedAttr<Amp_NonNegativeI64Attr, "0">:$warmup_steps,
                       DefaultValuedAttr<I64Attr, "0">:$total_steps,
                       DefaultValuedAttr<F64Attr, "0.0">:$min_lr);
  let results = (outs Amp_ScalarF32:$lr);
  let assemblyFormat = "`` $kind $step attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates (all guarded by found_inf)
//===----------------------------------------------------------------------===//

def Amp_SgdUpdateOp : Amp_Op<"sgd_update", [Amp_MultiTensorStep, InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "torch.optim.SGD step (dampening 0) on an f32 master weight, skipped on overflow";
  let description = [{
    If `found_inf != 0` every result is its input, bit for bit. Otherwise, in f32 with
    `m = momentum`, `wd = weight_decay` (both rounded to f32):

    ```
    d    = wd != 0 ? fl(g + fl(wd · p)) : g
    buf' = fl(fl(m · buf) + d)                 (momentum != 0 only)
    d    = nesterov ? fl(d + fl(m · buf')) : buf'   (momentum != 0 only)
    p'   = fl(p − fl(lr · d))
    ```

    The momentum buffer starts at zeros, so the first step gives `buf' = d`, which is PyTorch's
    `clone(grad)` (up to the sign of a zero). The buffer operand and result are present exactly
    when `momentum != 0`; `nesterov` requires `momentum > 0`. `param` and the buffer are f32;
    `grad` has the param's shape.

    Formed by amp-fuse-grad-pipeline, the update may also read its gradient as the loss-scaled
    one: with `unscale(%scale)` the element is first unscaled as `amp.unscale_check` does (in f32,
    after widening an f16/bf16 gradient), with `clip(%norm)` and `max_norm` then clipped as
    `amp.clip_grads` does with that norm. With `weight_copy(bf16)` (or f16) the update has one
    more result: `amp.cast` of the new param to that type, written on a skipped step too.
    (The type is spelled in the op's syntax, `weight_copy(bf16)`, so the parser knows the results.)

    ```mlir
    %p2, %buf2 = amp.sgd_update %p, %g, %lr, %found_inf momentum_buffer(%buf : tensor<4x3xf32>)
        {momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64}
        : tensor<4x3xf32>, tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Amp_F32Tensor:$param, Amp_FloatTensor:$grad, Amp_ScalarF32:$lr,
                       Amp_ScalarF32:$found_inf, Optional<Amp_F32Tensor>:$momentum_buffer,
                       Optional<Amp_ScalarF32>:$scale, Optional<Amp_ScalarF32>:$norm,
                       DefaultValuedAttr<Amp_NonNegativeF64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<Amp_NonNegativeF64Attr, "0.0">:$weight_decay,
                       OptionalAttr<Amp_PositiveF64Attr>:$max_norm, OptionalAttr<TypeAttr>:$weight_copy);
  // [the new momentum buffer (momentum != 0)] [the weight copy (weight_copy)]: two optional
  // results, which ODS would need a segment attribute for; the accessors below name them.
  let results = (outs Amp_F32Tensor:$new_param, Variadic<Amp_FloatTensor>:$new_state);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr `,` $found_inf (`momentum_buffer` `(` $momentum_buffer^ `:` type($momentum_buffer) `)`)?
    (`unscale` `(` $scale^ `)`)? (`clip` `(` $norm^ `)`)? (`weight_copy` `(` $weight_copy^ `)`)? attr-dict `:`
    type($param) `,` type($grad)
  }];
  let extraClassDeclaration = [{
    ::mlir::Value getNewMomentumBuffer() { return getMomentumBuffer() ? getNewState()[0] : ::mlir::Value(); }
    ::mlir::Value getNewWeightCopy() { return getWeightCopy() ? getNewState().back() : ::mlir::Value(); }
  }];
  let hasVerifier = 1;
}

def Amp_AdamUpdateOp : Amp_Op<"adam_update", [Amp_MultiTensorStep, InferTypeOpAdaptor, AttrSizedOperandSegments,
    AllTypesMatch<["exp_avg", "exp_avg_sq"]>]> {
  let summary = "torch.optim.Adam / AdamW step on an f32 master weight, skipped on overflow";
  let description = [{
    If `found_inf != 0` every result is its input, bit for bit. Otherwise `step` (>= 1) is the
    new step count (after `amp.step_counters`) and, as PyTorch's single-tensor Adam
    (amsgrad off), with scalars computed in f64 from the f32 `lr` and rounded to f32 where they
    meet a tensor:

    ```
    decoupled (AdamW): p = fl(p · f32(1 − lr·wd))     else: g = fl(g + fl(f32(wd) · p))
    m' = lerp(m, g, w = f32(1 − β1)):  |w| < 0.5 ? fl(m + fl(w · fl(g − m)))
                                                 : fl(g − fl(fl(g − m) · fl(1 − w)))
    v' = fl(fl(v · f32(β2)) + fl(fl(f32(1 − β2) · g) · g))
    bc1 = 1 − β1^step,  bc2s = sqrt(1 − β2^step),  step_size = lr / bc1          (f64)
    denom = fl(fl(sqrt(v') / f32(bc2s)) + f32(eps))
    p' = fl(p + fl(fl(f32(−step_size) · m') / denom))
    ```

    (weight decay is skipped when `weight_decay == 0`). `param` is f32; `exp_avg` and
    `exp_avg_sq` are both f32, or both bf16 (compact optimizer state, `--optimizer-state=bf16`),
    with the param's shape; `grad` has that shape. Requires `0 <= β1, β2 < 1`, `eps > 0`,
    `weight_decay >= 0`.

    bf16 moments are widened exactly, m' and v' computed in f32 as above (the param update reads
    those f32 values), and each is stored rounded to bf16 stochastically: 16 random bits are added
    below bf16's mantissa and the rest truncated, so a value rounds up with probability equal to
    its distance from the value below (unbiased; with round-to-nearest v' = fl(v·β2 + ...) would
    stop decaying once (1 − β2)·v is under half a bf16 ulp). Element i of the update at step
    `step` takes word i mod 4 of Philox4x32-10 under key `rounding_seed` (0 when absent) and counter
    (i / 4, step), the dropout stream: its low 16 bits round m', its high 16 bits v'. A NaN stays
    a quiet NaN; a bf16-representable value is stored exactly. The syntax names bf16 moments
    after the types: `: tensor<4x3xf32>, tensor<4x3xf32> moments(bf16)`.

    Formed by amp-fuse-grad-pipeline, the update may also read its gradient as the loss-scaled
    one: with `unscale(%scale)` the element is first unscaled as `amp.unscale_check` does (in f32,
    after widening an f16/bf16 gradient), with `clip(%norm)` and `max_norm` then clipped as
    `amp.clip_grads` does with that norm. With `weight_copy(bf16)` (or f16) the update has one
    more result: `amp.cast` of the new param to that type, written on a skipped step too.
    (The type is spelled in the op's syntax, `weight_copy(bf16)`, so the parser knows the results.)

    ```mlir
    %p2, %m2, %v2 = amp.adam_update %p, %g, %m, %v, %step, %lr, %found_inf
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64,
         weight_decay = 0.01 : f64, decoupled = true} : tensor<4x3xf32>, tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Amp_F32Tensor:$param, Amp_FloatTensor:$grad, Amp_MomentTensor:$exp_avg,
                       Amp_MomentTensor:$exp_avg_sq, Amp_ScalarI64:$step, Amp_ScalarF32:$lr,
                       Amp_ScalarF32:$found_inf,
                       Optional<Amp_ScalarF32>:$scale, Optional<Amp_ScalarF32>:$norm,
                       DefaultValuedAttr<Amp_UnitIntervalF64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<Amp_UnitIntervalF64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<Amp_PositiveF64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<Amp_NonNegativeF64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$decoupled,
                       OptionalAttr<Amp_PositiveF64Attr>:$max_norm, OptionalAttr<TypeAttr>:$weight_copy,
                       OptionalAttr<I64Attr>:$rounding_seed);
  let results = (outs Amp_F32Tensor:$new_param, Amp_MomentTensor:$new_exp_avg,
                      Amp_MomentTensor:$new_exp_avg_sq, Optional<Amp_FloatTensor>:$new_weight_copy);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `,` $lr `,` $found_inf
    (`unscale` `(` $scale^ `)`)? (`clip` `(` $norm^ `)`)? (`weight_copy` `(` $weight_copy^ `)`)? attr-dict `:`
    type($param) `,` type($grad) custom<MomentTypes>(ref(type($param)), type($exp_avg), type($exp_avg_sq))
  }];
  let hasVerifier = 1;
}
