//===- Passes.td - ampc passes ---------------------------------------------===//
#ifndef AMP_PASSES_TD
#define AMP_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

def AmpVerifyModelPass : Pass<"amp-verify-model", "::mlir::ModuleOp"> {
  let summary = "Checks every public function against the model convention";
  let description = [{
    Each public `func.func` of the module is a model: every argument carries `amp.role`
    (`param`, `input` or `label`) and a unique `amp.name`; params are f32 master weights and
    only params carry `amp.init`; the first result is the scalar loss `tensor<f32>`; the body
    holds only `amp` ops. Violations are reported at the argument or op they concern.

    ```mlir
    // error: model 'f': argument #0 has no amp.role (param, input or label)
    func.func @f(%x: tensor<4xf32>) -> tensor<f32> { ... }
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

def AmpAutocastPass : Pass<"amp-autocast", "::mlir::ModuleOp"> {
  let summary = "Decides every op's precision from a policy and inserts the minimal casts";
  let description = [{
    Assigns each amp op a precision (f32, f16 or bf16) from a precision policy, rewrites the
    op's float operand and result types accordingly and inserts `amp.cast` ops only on edges
    whose two ends differ. Each op is annotated with `amp.precision` and a typed
    `amp.reason = #amp.reason<...>` (what decided: policy and category, override, autocast off;
    reports print its sentence); inserted casts carry the unit attribute `amp.autocast_inserted`; the module
    gets `amp.precision` = the low-precision dtype used.

    Policies (docs/precision-policy.md):
    - `pytorch`: PyTorch CUDA autocast, decided per op from its inputs: lower_precision_fp
      (matmul, conv2d), fp32 (exp, log, rsqrt, reciprocal, pow, norms, losses),
      fp32_set_opt_dtype (softmax, log_softmax, reduce_sum: computed in f32, f32 output),
      promote (widest input; f16 with bf16 is an error) and fall-through (input dtype, with
      PyTorch's native type promotion for several inputs).
    - `tensorflow`: TensorFlow grappler's allow/infer/deny/clear painting (fp16 lists, or the
      oneDNN bf16 lists when the dtype is bf16), which grows low-precision regions and avoids
      cast ping-pong.
    - a JSON policy file that starts from a built-in policy and edits its lists.

    Overrides: `amp.precision = "f32" | "f16" | "bf16"` on an op; `amp.autocast = false` on an
    op, a function or the module disables autocast there (ops run as declared; `true` on an op
    re-enables it); pattern overrides `override=PATTERN=PRECISION` (PATTERN is a glob on the
    location name, or `op:GLOB` on the op name; PRECISION is f32, f16, bf16, low or off).

    Function arguments and results keep their declared types; integer and i1 values are never
    cast; explicit casts in the input are kept (and folded by amp-cast-cleanup when exact).

    ```mlir
    // amp-opt --amp-autocast="dtype=bf16 policy=pytorch"
    %0 = amp.cast %x {amp.autocast_inserted} : tensor<8x64xf32> to tensor<8x64xbf16>
    %1 = amp.cast %w {amp.autocast_inserted} : tensor<64x64xf32> to tensor<64x64xbf16>
    %2 = amp.matmul %0, %1 {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "...">}
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "::mlir::amp::AutocastDtype",
           /*default=*/"::mlir::amp::AutocastDtype::Auto",
           "Low-precision dtype: f16, bf16, auto (from the target) or f32 (autocast off)",
           [{::mlir::amp::autocastDtypeValues()}]>,
    Option<"policy", "policy", "std::string", /*default=*/"\"pytorch\"",
           "pytorch, tensorflow, tensorflow-fp16, tensorflow-bf16 or a PATH.json policy file">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "Target for dtype=auto (cuda:sm_NN, cpu, cpu:FEATURES, reference); default: the "
           "module's amp.target attribute, else cpu (the compiling machine, as ampc)">,
    ListOption<"overrides", "override", "std::string",
               "Pattern overrides PATTERN=PRECISION (loc glob, or op:GLOB)">,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

def AmpCastCleanupPass : Pass<"amp-cast-cleanup"> {
  let summary = "Removes identity casts, folds exact cast chains and constants, then CSE";
  let description = [{
    Canonicalizes `amp.cast`: identity casts disappear; a chain `cast(cast(x: A -> B) -> C)`
    becomes `cast(x: A -> C)` when the first cast is exact (B represents every A value), so
    `f16 -> f32 -> f16` becomes `x` while `f32 -> f16 -> f32` (a rounding) is kept; a cast of
    an `amp.constant` becomes a constant of the new type (rounded to nearest even). Then
    common subexpressions are eliminated, so equal casts of one value are shared.

    ```mlir
    %1 = amp.cast %x : tensor<4xf16> to tensor<4xf32>
    %2 = amp.cast %1 : tensor<4xf32> to tensor<4xf16>   // uses of %2 now use %x
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

//===----------------------------------------------------------------------===//
// Training step
//===----------------------------------------------------------------------===//

def AmpAutodiffPass : Pass<"amp-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the @train_step entry: the model's forward plus its reverse-mode backward";
  let description = [{
    Differentiates the model (the public `func.func` without `amp.entry`) with respect to its
    params and adds `@train_step` (`amp.entry = "train_step"`) in the shape docs/training-ir.md
    fixes: every model argument with its attributes, plus
    `%seed: tensor<f32> {amp.role = "state", amp.name = "amp.grad_seed"}`; results are the loss
    (`amp.name = "loss"`) and one gradient per param in argument order
    (`amp.grad_of = "<param name>"`). The backward is seeded with `d loss = %seed`, so every
    gradient is multiplied by the seed. The model function is left unchanged (the eval entry);
    its extra results are not returned by the step.

    Each op on a path from a param to the loss gets its VJP from its `DifferentiableOpInterface`
    (every model op defines it in ir/AmpVjp.cpp; built from forward ops where exact, or from the
    gradient ops of ir/AmpGradOps.td). Backward ops run
    in the precision of their forward op and carry its `amp.precision`, with
    `amp.reason = #amp.reason<backward, source = "<op>">`; the VJP of `amp.cast` is the cast back, so f32 params
    receive f32 gradients. Cotangents of values with several users are summed with `amp.add` in
    the value's type; integer and i1 values get no gradient; a param the loss does not read gets
    a zero gradient. An op without a rule on such a path is a located error.

    ```mlir
    // amp-opt --amp-autodiff
    func.func @train_step(%x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"}, ...,
                          %seed: tensor<f32> {amp.role = "state", amp.name = "amp.grad_seed"})
        -> (tensor<f32> {amp.name = "loss"}, tensor<8x2xf32> {amp.grad_of = "w"})
        attributes {amp.entry = "train_step"}
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect", "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Loss scaling, optimizer, training-step verification (docs/training-ir.md)
//===----------------------------------------------------------------------===//

def AmpLossScalingPass : Pass<"amp-loss-scaling", "::mlir::ModuleOp"> {
  let summary = "Seeds the backward pass with the loss scale and inserts unscale+check and the scale update";
  let description = [{
    Rewrites `@train_step` (`amp.entry = "train_step"`, the "after amp-autodiff" shape):

    - `dynamic` / `static`: the seed argument becomes the state `amp.loss_scale`
      (`#amp.init<constant, scale = init-scale>`). Since the backward pass is seeded with it,
      every gradient is already scaled: scaling costs no extra multiply over the graph. The
      gradients go through one `amp.unscale_check ... scale(%scale)` (fused unscale and
      non-finite check) and the returned gradients are its results; `found_inf` is returned as
      `amp.name = "found_inf"`.
    - `dynamic` also adds the state `amp.growth_tracker` (i32, zeros) and, as the last op,
      `amp.update_scale` (PyTorch `_amp_update_scale_`) whose results are returned with
      `amp.updates`.
    - `none`: the seed is the constant 1.0 and the argument is removed; `amp.unscale_check` has
      no scale (check only), so a non-finite step is still skipped.
    - `auto` (default): `dynamic` when any value in `@train_step` is f16, `none` otherwise
      (bf16 and f32 training need no scaling).

    ```mlir
    // amp-opt --amp-loss-scaling="mode=dynamic"
    %g1u, %found_inf = amp.unscale_check %g1 scale(%scale) : tensor<4x3xf32>
    %scale2, %tracker2 = amp.update_scale %scale, %tracker, %found_inf
        {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64}
    ```
  }];
  let options = [
    Option<"mode", "mode", "::mlir::amp::LossScalingMode",
           /*default=*/"::mlir::amp::LossScalingMode::Auto",
           "dynamic, static, none, or auto (dynamic when @train_step computes in f16)",
           [{::mlir::amp::lossScalingModeValues()}]>,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "Initial (dynamic) or fixed (static) loss scale">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Dynamic: factor applied after growth-interval consecutive clean steps (> 1)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Dynamic: factor applied on a step with non-finite gradients (in (0, 1))">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "Dynamic: consecutive clean steps before the scale grows">,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

def AmpGradsEntryPass : Pass<"amp-grads-entry", "::mlir::ModuleOp"> {
  let summary = "Adds a @grads entry that returns every param's unscaled f32 gradient";
  let description = [{
    Runs after `amp-loss-scaling`, before `amp-optimizer`. Clones `@train_step` into `@grads`
    (`amp.entry = "grads"`): the same forward, backward and loss-scale seed, the same
    `amp.unscale_check`, but no state update. It returns the loss, `found_inf`, and each
    param's unscaled f32 gradient named `<param>.grad` (in place of `amp.grad_of`). The
    scale update and the state it alone reads (the growth tracker) are removed, so running
    `@grads` changes nothing: a user can compare the gradients with any framework's.

    ```mlir
    // amp-opt --amp-grads-entry
    func.func @grads(...) -> (tensor<f32> {amp.name = "loss"}, tensor<f32> {amp.name = "found_inf"},
                              tensor<4x3xf32> {amp.name = "w.grad"}) attributes {amp.entry = "grads"}
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect", "::mlir::func::FuncDialect"];
}

def AmpOptimizerPass : Pass<"amp-optimizer", "::mlir::ModuleOp"> {
  let summary = "Consumes the gradients of @train_step with an optimizer step guarded by found_inf";
  let description = [{
    Replaces the `amp.grad_of` results of `@train_step` by an optimizer step on the f32 master
    weights, inserted between `amp.unscale_check` and `amp.update_scale` in this order:
    (optional) `amp.global_norm` + `amp.clip_grads` on the unscaled gradients;
    `amp.step_counters` (state `amp.step`, `amp.skipped_steps`, i64); `amp.lr_schedule` on the new
    step; one `amp.sgd_update` / `amp.adam_update` per param, each taking `%found_inf`. Moments
    are state named `<param>.momentum_buffer`, `<param>.exp_avg`, `<param>.exp_avg_sq` (zeros);
    new params and state are returned with `amp.updates`. Without an `amp.unscale_check` (loss
    scaling not run) a check-only one is inserted, so every update is still guarded.

    `accumulate=K` (K > 1) adds state `<param>.grad_accum` and an entry `@accumulate`
    (`amp.entry = "accumulate"`: forward + backward with the same loss-scale seed,
    `accum += scaled grads`, returns the loss). `@train_step` adds the last micro-batch's
    gradients, divides the sum by K, then unscales/checks, clips, steps and updates the scale
    once, and returns zeroed accumulators.

    `weight-decay` < 0 (default) takes PyTorch's default for the optimizer: 0 for sgd and adam,
    0.01 for adamw.

    `state=bf16` (adam, adamw) makes the moments bf16 state, rounded stochastically by each
    update (amp.adam_update); update k gets `rounding_seed = k`, so no two params share a
    rounding stream.

    ```mlir
    // amp-opt --amp-optimizer="kind=adamw lr=1e-3 clip-grad-norm=1.0"
    %norm = amp.global_norm %g1u : tensor<4x3xf32>
    %c1 = amp.clip_grads %g1u norm(%norm) {max_norm = 1.000000e+00 : f64} : tensor<4x3xf32>
    %step2, %skipped2 = amp.step_counters %step, %skipped, %found_inf
    %lr = amp.lr_schedule constant %step2 {base_lr = 1.000000e-03 : f64}
    %p2, %m2, %v2 = amp.adam_update %p, %c1, %m, %v, %step2, %lr, %found_inf {...}
    ```
  }];
  let options = [
    Option<"kind", "kind", "::mlir::amp::OptimizerKind", /*default=*/"::mlir::amp::OptimizerKind::Sgd",
           "sgd, adam or adamw", [{::mlir::amp::optimizerKindValues()}]>,
    Option<"lr", "lr", "double", /*default=*/"1.0e-3", "Base learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (L2 for sgd/adam, decoupled for adamw); < 0: PyTorch's default">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1.0e-8", "Adam epsilon">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "Clip the unscaled gradients to this global 2-norm (0 = off)">,
    Option<"schedule", "schedule", "::mlir::amp::LrScheduleKind",
           /*default=*/"::mlir::amp::LrScheduleKind::Constant",
           "constant or cosine (both with optional linear warmup)",
           [{::mlir::amp::lrScheduleKindValues()}]>,
    Option<"warmup", "warmup", "int64_t", /*default=*/"0", "Linear warmup steps">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"10000",
           "Cosine: step at which the rate reaches min-lr">,
    Option<"minLr", "min-lr", "double", /*default=*/"0.0", "Cosine: final learning rate">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Gradient accumulation: micro-batches per optimizer step (K >= 1)">,
    Option<"weightCopies", "weight-copies", "::mlir::amp::WeightCopyMode",
           /*default=*/"::mlir::amp::WeightCopyMode::Stored",
           "Low-precision weight copies: stored (state written by the step), recast (a cast before "
           "each use) or auto (recast on cpu targets, stored on cuda targets)",
           [{::mlir::amp::weightCopyModeValues()}]>,
    Option<"stateType", "state", "::mlir::amp::OptimizerStateType",
           /*default=*/"::mlir::amp::OptimizerStateType::F32",
           "Adam's moments: f32, or bf16 stored with stochastic rounding (adam and adamw only)",
           [{::mlir::amp::optimizerStateTypeValues()}]>,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect", "::mlir::func::FuncDialect"];
}

def AmpRematWeightCastsPass : Pass<"amp-remat-weight-casts", "::mlir::func::FuncOp"> {
  let summary = "Gives every use of a master weight's low-precision cast its own cast, just before it";
  let description = [{
    With recast weight copies (amp-optimizer `weight-copies=recast`), the forward casts each master
    weight down once and the backward's GEMMs read the same cast (amp-cast-cleanup merges them):
    the copy would stay alive from the forward to the backward, as large as a stored copy. This
    pass clones the cast in front of each later user, so each copy is a temporary that lives only
    around its GEMM and the memory planner reuses its bytes. The casts round the same master to the
    same bits, so the step's results do not change. A cast of anything but a `param` argument,
    and a cast with one user, are left alone.

    ```mlir
    // before                                     // after
    %w16 = amp.cast %w : f32 -> bf16              %w16 = amp.cast %w ...
    %y = amp.linear %x, %w16 ...                  %y = amp.linear %x, %w16 ...
    ...                                           ...
    %dx = amp.matmul %dy, %w16 ...                %w16b = amp.cast %w ...
                                                  %dx = amp.matmul %dy, %w16b ...
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

def AmpRematPass : Pass<"amp-remat", "::mlir::func::FuncOp"> {
  let summary = "Recomputes cheap forward values in the backward, so fewer are alive at the peak";
  let description = [{
    Estimates the step's memory in program order: every argument (params, state, inputs) for the
    whole step, plus each temporary from the op that makes it to its last reader (a reshape is a
    view of its operand). At the peak, a value made by a cheap op (a cast, elementwise math, a
    transpose, a broadcast, a softmax or a norm) and read again after the peak is recomputed just
    before that later reader, from operands that are alive there anyway (or recomputed too), so
    recomputing extends no other lifetime; failing that, from a smaller stored operand kept alive
    until the reader (a bf16 attention's f32 probabilities from its bf16 scores), a change that is
    undone when the step's estimate grows.
    A value not read before the peak is simply made later (no recompute, whatever op makes it) when
    the operands it then keeps alive longer are smaller than it. Cheapest first: casts,
    then elementwise math, then copies, then softmax and norms; among equals, the most bytes. Recompute runs the same op
    on the same operands, so results are bitwise unchanged. The clones carry
    `amp.origin = "remat"`, which `ampc --emit=memory-report` counts, and the location
    `"amp.remat"(original)` for diagnostics.

    `auto` recomputes while the peak falls, at most 2% of the step's estimated FLOPs, and leaves
    the step as it found it when its estimate did not fall. Where a peak has many candidates, up to
    one in eight of them that share no op or operand are applied before the next estimate. `budget` (bytes, > 0) stops once the estimate is at most
    the budget, and is an error, naming the smallest estimate reached, when no candidate is left;
    only a budget recomputes GEMMs, convolutions and batch norms (a
    conv -> batch_norm -> relu block; an attention's scores from its Q and K), through chains of up
    to 8 ops. Dropout and reductions are never recomputed.

    With `fusion-aware` (what the pipeline sets when amp-fuse runs after it), the estimate sees
    the step as amp-fuse will leave it: an elementwise value read only inside its fused region
    takes no memory, a region makes its results and reads its inputs at its last op, and a relu
    folded into its linear layer shares the layer's result.
  }];
  let options = [
    Option<"autoRemat", "auto", "bool", /*default=*/"false", "Recompute while the estimated peak falls">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "Bytes (arguments + live temporaries) to stay under; 0 = no budget">,
    Option<"fusionAware", "fusion-aware", "bool", /*default=*/"false",
           "Estimate as amp-fuse will leave the step: values read only inside their fused region are "
           "never stored, and a region reads its inputs where it is placed">,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

def AmpDataParallelPass : Pass<"amp-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Makes @train_step data-parallel: gradients, found_inf and the loss reduced across ranks";
  let description = [{
    Runs after `amp-optimizer`. In `@train_step` it inserts `amp.all_reduce` ops
    (docs/data-parallel.md):

    - the gradients that `amp.unscale_check` reads are all-reduced as a `mean`, in buckets of
      at most `bucket-bytes` (a gradient larger than that is a bucket of its own), in the order
      the gradients become ready (their definition order in the backward pass), each bucket
      right after its last gradient: a backend can overlap it with the rest of the backward;
    - `found_inf` is all-reduced as a `max` right after the check, before anything reads it,
      so every rank skips the same steps and keeps the same scale;
    - the returned `loss` is all-reduced as a `mean` (for logging).

    With accumulation (`@accumulate`), only `@train_step`, the window's last micro-batch,
    communicates; it reduces the accumulated mean gradients. `reduce-precision=bf16|f16`
    rounds each gradient to that type before the reduction and widens the result after it.
    The module gets `amp.data_parallel`, which makes `amp-verify` check rule AMP010.

    ```mlir
    // amp-opt --amp-data-parallel
    %r:2 = amp.all_reduce mean %gw, %gb {amp.precision = "f32", ...} : tensor<8x6xf32>, tensor<6xf32>
    %u:2, %found_inf = amp.unscale_check %r#0, %r#1 scale(%scale) : tensor<8x6xf32>, tensor<6xf32>
    %found = amp.all_reduce max %found_inf : tensor<f32>
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Gradient bytes per all-reduce bucket (DDP's bucket_cap_mb = 25)">,
    Option<"reducePrecision", "reduce-precision", "::mlir::amp::Precision", /*default=*/"::mlir::amp::Precision::F32",
           "f32, bf16 or f16: the precision gradients are reduced in", [{::mlir::amp::reducePrecisionValues()}]>,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect", "::mlir::func::FuncDialect"];
}

def AmpShardOptimizerPass : Pass<"amp-shard-optimizer", "::mlir::ModuleOp"> {
  let summary = "ZeRO stage 1: each rank keeps and updates only its chunk of the optimizer state";
  let description = [{
    Runs after `amp-data-parallel`, for a job of exactly `world-size` ranks
    (docs/data-parallel.md). Every tensor is split, row-major and zero-padded at the end, into
    `world-size` chunks of ceil(numel / world-size) elements; rank r owns chunk r. In
    `@train_step`:

    - each gradient bucket's `amp.all_reduce mean` becomes an `amp.reduce_scatter mean` of the
      same bucket: a rank receives only its chunk of each mean gradient;
    - the unscale check, the clipping and the updates run on the chunks; the check's found_inf is
      still all-reduced as a max, and the clip norm is the square root of the all-reduced sum
      of the ranks' squared chunk norms;
    - each update reads this rank's chunk of the f32 master (`amp.rank_chunk`) and its optimizer
      state (momentum buffer, exp_avg, exp_avg_sq) is the chunk only: a state argument of
      ceil(numel / world-size) elements marked `amp.shard_of = "<param>"`;
    - each bucket's updated chunks are all-gathered (`amp.all_gather`, f32) into the whole
      params, from which the low-precision weight copies are cast as before.

    ```mlir
    // amp-opt --amp-data-parallel --amp-shard-optimizer=world-size=2
    %c:2 = amp.reduce_scatter mean ranks(2) %gw, %gb : tensor<8x6xf32>, tensor<6xf32>
    %u:2, %found_inf = amp.unscale_check %c#0, %c#1 scale(%scale) : tensor<24xf32>, tensor<3xf32>
    %w = amp.rank_chunk ranks(2) %weight : tensor<8x6xf32>
    ...
    %nw, %nb = amp.all_gather ranks(2) %uw, %ub : tensor<24xf32>, tensor<3xf32> -> tensor<8x6xf32>, tensor<6xf32>
    ```
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", /*default=*/"0",
           "The number of ranks the step is compiled for (>= 1)">,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect", "::mlir::func::FuncDialect"];
}

def AmpVerifyPass : Pass<"amp-verify", "::mlir::ModuleOp"> {
  let summary = "Checks the mixed-precision rules of docs/design.md on every training entry";
  let description = [{
    Reports, at the value or op concerned, every violation of the correctness rules in the
    functions with `amp.entry` (and the model, for the loss and policy rules). Each diagnostic
    starts with its rule's stable id and ends with the docs/design.md rule it enforces (that page's
    table "amp-verify rule identifiers" gives a fix for each):

    - `AMP001` a param (master weight) that is not f32 (rule 1);
    - `AMP002` a gradient that reaches an optimizer update (or is returned as `amp.grad_of`) in
      low precision (rule 1);
    - `AMP003` an op in low precision that the precision policy denies (`policy` option; ops the
      user forced with an override are exempt; a backward op, `#amp.reason<backward, source = "OP">`, is
      judged by the policy's decision for OP, whose precision it takes) (rule 2);
    - `AMP004` a loss that is not computed in f32 (the returned loss, or a loss op, in f16/bf16)
      (rule 3);
    - `AMP005` f16 training without loss scaling (a warning) (rule 3);
    - `AMP006` clipping (`amp.global_norm` / `amp.clip_grads`) on gradients that are still scaled
      (they depend on the loss scale without passing through `amp.unscale_check`) (rule 4);
    - `AMP007` an optimizer update on gradients that are still scaled (rule 4);
    - `AMP008` the scale update missing (a growth tracker without `amp.update_scale`), lost (its
      results not written back), not reading the `found_inf` of an `amp.unscale_check`, or run
      more than once per step or in `@accumulate` (rule 4);
    - `AMP009` an optimizer update or step counter not guarded by the `found_inf` of an
      `amp.unscale_check` (rule 5);
    - `AMP010` in a data-parallel module (`amp.data_parallel`), a param or state update of
      `@train_step` that depends on this rank's data without passing through `amp.all_reduce`:
      an optimizer reading a gradient, or a skip decision reading a `found_inf`, that was not
      reduced (the replicas would diverge) (rule 9).

    ```mlir
    // error: amp-verify: [AMP006] clipping sees scaled gradients (operand #0 depends on the loss
    // scale without passing through amp.unscale_check); clip after unscaling (docs/design.md rule 4)
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"pytorch\"",
           "Precision policy for the deny rule (as amp-autocast's policy option)">,
  ];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}


def AmpFusePass : Pass<"amp-fuse", "::mlir::func::FuncOp"> {
  let summary = "Groups elementwise producer/consumer chains into amp.fused regions";
  let description = [{
    Walks each function in order and grows groups of elementwise ops (unary and binary math,
    compare, select, cast) that share one iteration space (their result shape). An op joins the
    group of a producer it reads when every input from outside the group has the iteration shape,
    is a scalar, or broadcasts along leading dims, and when no op outside the group reads a group
    value before the region's position (the group's last op). Groups of two or more ops become
    `amp.fused` regions whose results are the values used outside; each op keeps its precision,
    so a fused region computes the same bits as the unfused chain, in one pass over memory.
    Casts fold into their neighbours this way: no standalone cast kernel remains where a
    neighbour can absorb it. First, a relu that is the only reader of an `amp.linear` result
    becomes the layer's `activation = relu` (the GEMM epilogue). A reduce_sum over all but the
    last dim of a group value (a bias gradient) joins that group and ends it; the region is then
    placed at its last elementwise op, so the backward's mask, its output and the bias gradient
    are one pass. A region holds at most 32 ops, so each generated kernel stays small
    enough to compile quickly.

    ```mlir
    %0 = amp.cast %x : tensor<128x256xbf16> to tensor<128x256xf32>
    %1 = amp.add %0, %b : tensor<128x256xf32>, tensor<256xf32>
    %2 = amp.relu %1 : tensor<128x256xf32>
    // becomes
    %2 = amp.fused "mlp.k0" (%x, %b) : (...) -> tensor<128x256xf32> { ... }
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

def AmpFuseGradPipelinePass : Pass<"amp-fuse-grad-pipeline", "::mlir::func::FuncOp"> {
  let summary = "Runs the gradient pipeline as one statistics pass and the optimizer pass";
  let description = [{
    The training step unscales and checks the gradients (`amp.unscale_check`), takes their
    global norm and clips them, and updates each master, then casts it to its low-precision
    copy: four or five passes over every gradient, each intermediate gradient a buffer. When
    nothing but the norm, the clip and exactly one optimizer update reads each unscaled
    gradient, this pass rewrites the pipeline into

    - `amp.grad_stats`: one read of each gradient as stored (a widening `amp.cast` from f16/bf16
      to f32 whose only reader is the check is dropped) giving `found_inf` and, when the step
      clips, the global norm of the unscaled values;
    - the optimizer updates, which read the stored gradient and unscale (`unscale(%scale)`) and
      clip (`clip(%norm)`, `max_norm`) each element as they read it, and write the master's
      low-precision copy (`weight_copy(bf16)`) in place of the `amp.cast` that followed them.

    Every value is the bits of the unfused ops (the widening is exact; the unscale, clip and
    update formulas and their order are unchanged), while the unscaled, clipped and widened
    gradients are never stored. The updates are then grouped by kernel (op, gradient type, copy
    type) at the first update's place, so each group runs as one multi-tensor launch sequence;
    updates are independent, so the order changes no value. Every device runs the result: no
    target needs the unfused form, and `ampc --fuse=false` keeps it.

    ```mlir
    %u:2, %found = amp.unscale_check %gw, %gb scale(%s) : tensor<4x3xf32>, tensor<3xf32>
    %norm = amp.global_norm %u#0, %u#1 : tensor<4x3xf32>, tensor<3xf32>
    %c:2 = amp.clip_grads %u#0, %u#1 norm(%norm) {max_norm = 1.0 : f64} : ...
    %w2 = amp.sgd_update %w, %c#0, %lr, %found : tensor<4x3xf32>, tensor<4x3xf32>
    %w16 = amp.cast %w2 : tensor<4x3xf32> to tensor<4x3xbf16>
    // becomes
    %found, %norm = amp.grad_stats %gw, %gb scale(%s) : ... -> tensor<f32>, tensor<f32>
    %w2, %w16 = amp.sgd_update %w, %gw, %lr, %found unscale(%s) clip(%norm) weight_copy(bf16)
        {max_norm = 1.0 : f64} : tensor<4x3xf32>, tensor<4x3xf32>
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

def AmpSelectGemmEpiloguesPass : Pass<"amp-select-gemm-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Moves activation and bias-gradient work into cuBLASLt's training epilogues (cuda targets)";
  let description = [{
    Runs after amp-fuse, only when asked (`ampc --gemm-epilogues=cublaslt`, cuda targets; a module
    whose `amp.target` is not cuda is refused). It rewrites, on the IR, into
    `amp.gemm_epilogue` ops:

    - ReLU: an `amp.linear ... activation = relu` becomes `relu_aux[_bias]`, giving the layer's
      result and its mask, when the ReLU backward reads it: the `amp.fused` region
      `compare gt(h, +0) -> select(mask, g, +0)[ -> reduce_sum]` whose `g` is an `amp.matmul` read
      by that region alone becomes `drelu[_bgrad]` of that matmul and the mask;
    - GELU (tanh): `amp.linear` + `amp.gelu approximate = tanh` become `gelu_aux[_bias]` (the GELU
      input is kept when anything else reads it) or `gelu_bias`; each `amp.gelu_grad` of that
      input fed by its own matmul becomes `dgelu`, or `dgelu_bgrad` with a row-sum bias gradient
      of its result whose readers all follow the matmul;
    - a bias gradient left as a lone row sum (`reduce_sum` over all dims but the last) of an
      operand of a weight-gradient `amp.matmul ... transpose_a` (possibly through reshapes that
      keep the last dim) becomes `bgrad_a` / `bgrad_b`.

    Legality is cuBLASLt's (runtime/schema/CublasLtEpilogue.h, which the cuda device applies
    too): one unbatched GEMM after folding, the forward and backward GEMMs seeing the auxiliary
    matrix with one layout, a GELU input whose rows are a multiple of 8 elements, a ReLU bit mask
    that fits in its i1 tensor, one element type throughout. Anything else is left as it was.

    Each new op means the bits of the ops it replaces (the reference runs those); cuBLASLt computes
    them within summation-order bounds (docs/cuda-device.md), which is why the rewrite is opt-in.

    ```mlir
    %h = amp.linear %x, %w, %b transpose_w = false activation = relu : ...
    %dh = amp.matmul %dy, %w2 transpose_b : ...
    %r:2 = amp.fused "k0" (%h, %zero, %dh) : ... { compare gt, select, reduce_sum }
    // becomes
    %h, %mask = amp.gemm_epilogue relu_aux_bias %x, %w, %b : ... -> tensor<128x256xf32>, tensor<128x256xi1>
    %r:2 = amp.gemm_epilogue drelu_bgrad %dy, %w2, %mask transpose_b : ... -> tensor<128x256xf32>, tensor<256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

#endif // AMP_PASSES_TD
