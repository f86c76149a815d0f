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
    whose two ends differ. Each op is annotated with `amp.precision` and a human-readable
    `amp.reason`; inserted casts carry the unit attribute `amp.autocast_inserted`; the module
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
    %2 = amp.matmul %0, %1 {amp.precision = "bf16", amp.reason = "pytorch lower_precision_fp: ..."}
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"auto\"",
           "Low-precision dtype: f16, bf16, auto (from the target) or f32 (autocast off)">,
    Option<"policy", "policy", "std::string", /*default=*/"\"pytorch\"",
           "pytorch, tensorflow, tensorflow-fp16, tensorflow-bf16 or a PATH.json policy file">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "Target for dtype=auto (cuda:sm_NN, cpu, cpu:FEATURES, reference); default: the "
           "module's amp.target attribute">,
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

    Each op on a path from a param to the loss gets its VJP from passes/VjpRules.cpp (built
    from forward ops where exact, or from the gradient ops of ir/AmpGradOps.td). Backward ops run
    in the precision of their forward op and carry its `amp.precision`, with
    `amp.reason = "backward of <op>"`; the VJP of `amp.cast` is the cast back, so f32 params
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

#endif // AMP_PASSES_TD
