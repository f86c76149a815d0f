//===- AmpAttrs.td - attributes of the amp dialect ------------------------===//
#ifndef AMP_ATTRS_TD
#define AMP_ATTRS_TD

include "ir/AmpBase.td"
include "ir/AmpEnums.td"

def Amp_InitAttr : AttrDef<Amp_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "How a parameter is initialised";
  let description = [{
    `#amp.init<KIND[, scale = S][, seed = N]>` where KIND is one of `zeros`, `ones`,
    `constant` (every element = scale), `normal` (mean 0, std = scale), `uniform`
    (U(-scale, scale)), `xavier_uniform`, `xavier_normal`, `kaiming_uniform`, `kaiming_normal`
    (gain = scale, default 1; fan-in/fan-out from the parameter's shape as PyTorch computes them).
    The seed makes initialisation deterministic: the same (kind, scale, seed, shape) gives the same
    tensor on every machine.

    `#amp.init<cast, from = "NAME">` (state only) is the param NAME's initial value rounded to
    the state's element type: the low-precision weight copy that the optimizer then keeps up to
    date.

    Example: `amp.init = #amp.init<kaiming_uniform, seed = 3>`
  }];
  let parameters = (ins
    StringRefParameter<"initialiser kind">:$kind,
    APFloatParameter<"scale: std, bound, value or gain">:$scale,
    "int64_t":$seed,
    StringRefParameter<"for kind cast: the param the value is derived from", "\"\"">:$from
  );
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$kind, "::llvm::APFloat":$scale, "int64_t":$seed), [{
      return $_get($_ctxt, kind, scale, seed, ::llvm::StringRef());
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Amp_ReasonAttr : AttrDef<Amp_Dialect, "Reason"> {
  let mnemonic = "reason";
  let summary = "Why an op runs in its precision: structured, so passes never parse prose";
  let description = [{
    The value of `amp.reason`. Passes read its fields (amp-verify exempts `override` decisions and
    judges a `backward` op by its `source`); reports print `render()`, the sentence users read.

    - `policy`: an autocast policy decided. `policy` is the policy style ("pytorch",
      "tensorflow"), `category` the op's list or category in it, `rule` how a TensorFlow-style
      policy got there ("painted allow"), `detail` the rest of the explanation.
      Renders as `POLICY CATEGORY[, RULE]: DETAIL` (`POLICY: RULE: DETAIL` without a category).
    - `override`: the user forced the precision; renders as `override: DETAIL`.
    - `off`: autocast is off; renders as `autocast off (dtype=f32): DETAIL`.
    - `backward`: amp-autodiff built the op for the backward of `source` (an op name) and it runs
      in that op's precision; renders as `backward of SOURCE`.
    - `pass`: another pass placed the op; `rule` names what it implements ("data-parallel",
      "ZeRO-1"); renders as `[RULE: ]DETAIL`.

    Example: `amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32",
    detail = "numerically sensitive, runs in f32 (inputs cast to f32)">`
  }];
  let parameters = (ins
    EnumParameter<Amp_ReasonKind>:$kind,
    StringRefParameter<"policy style", "\"\"">:$policy,
    StringRefParameter<"the op's category in the policy", "\"\"">:$category,
    StringRefParameter<"the rule that applied", "\"\"">:$rule,
    StringRefParameter<"the op a backward op differentiates", "\"\"">:$source,
    StringRefParameter<"the rest of the explanation", "\"\"">:$detail
  );
  let assemblyFormat = "`<` $kind `,` struct($policy, $category, $rule, $source, $detail) `>`";
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$policy, "::llvm::StringRef":$category,
                     "::llvm::StringRef":$rule, "::llvm::StringRef":$detail), [{
      return $_get($_ctxt, ReasonKind::Policy, policy, category, rule, ::llvm::StringRef(), detail);
    }]>
  ];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    // Reasons of the kinds that carry only a detail (override, off, pass) or only a source.
    static ReasonAttr override(::mlir::MLIRContext* ctx, ::llvm::StringRef detail);
    static ReasonAttr off(::mlir::MLIRContext* ctx, ::llvm::StringRef detail);
    static ReasonAttr backward(::mlir::MLIRContext* ctx, ::llvm::StringRef sourceOp);
    static ReasonAttr pass(::mlir::MLIRContext* ctx, ::llvm::StringRef rule, ::llvm::StringRef detail);
    // The sentence reports print.
    std::string render() const;
  }];
}

//===----------------------------------------------------------------------===//
// The recipe: what the training passes decided, stamped on the module by the pass that decided
// it. The plan builder alone turns them into the bundle's training metadata
// (runtime/plan/TrainingConfig.h); the driver writes none of it.
//===----------------------------------------------------------------------===//

def Amp_LossScalingRecipeAttr : AttrDef<Amp_Dialect, "LossScalingRecipe"> {
  let mnemonic = "loss_scaling";
  let summary = "The loss scaling amp-loss-scaling built (module attribute amp.loss_scaling)";
  let description = [{
    `kind` is the scaling the step uses, `auto` resolved: `none`, `static` (with its
    `init_scale`) or `dynamic` (with GradScaler's four settings). The verifier holds the one copy
    of their ranges, as torch's GradScaler states them: the scale positive and finite in f32, growth
    factor finite and > 1, backoff factor in (0, 1), growth interval in [1, 2^31 - 1].
    amp-loss-scaling checks its options by building this attribute, so a bad value is reported
    once, by the same rule, whichever way it arrived.

    Example: `amp.loss_scaling = #amp.loss_scaling<kind = dynamic, init_scale = 6.553600e+04,
    growth_factor = 2.000000e+00, backoff_factor = 5.000000e-01, growth_interval = 2000>`
  }];
  let parameters = (ins
    EnumParameter<Amp_ScalingKind>:$kind,
    OptionalParameter<"::mlir::FloatAttr">:$init_scale,
    OptionalParameter<"::mlir::FloatAttr">:$growth_factor,
    OptionalParameter<"::mlir::FloatAttr">:$backoff_factor,
    DefaultValuedParameter<"int64_t", "0">:$growth_interval
  );
  let assemblyFormat = "`<` struct($kind, $init_scale, $growth_factor, $backoff_factor, $growth_interval) `>`";
  let genVerifyDecl = 1;
}

def Amp_OptimizerRecipeAttr : AttrDef<Amp_Dialect, "OptimizerRecipe"> {
  let mnemonic = "optimizer";
  let summary = "The optimizer amp-optimizer built (module attribute amp.optimizer)";
  let description = [{
    The optimizer `kind`, its base learning rate `lr` (before any schedule) and the micro-batches
    per optimizer step (`accumulate`).

    Example: `amp.optimizer = #amp.optimizer<kind = adamw, lr = 1.000000e-03, accumulate = 4>`
  }];
  let parameters = (ins
    EnumParameter<Amp_OptimizerKind>:$kind,
    "::mlir::FloatAttr":$lr,
    DefaultValuedParameter<"int64_t", "1">:$accumulate
  );
  let assemblyFormat = "`<` struct($kind, $lr, $accumulate) `>`";
  let genVerifyDecl = 1;
}

def Amp_DataParallelRecipeAttr : AttrDef<Amp_Dialect, "DataParallelRecipe"> {
  let mnemonic = "data_parallel";
  let summary = "The data parallelism amp-data-parallel built (module attribute amp.data_parallel)";
  let description = [{
    The precision gradients are all-reduced in (`reduce`) and, once amp-shard-optimizer has split
    the optimizer state (ZeRO-1), the ranks it was split for (`shard_world_size`; 0: not sharded).
    Its presence marks the step data-parallel: amp-data-parallel refuses a module that has it.

    Example: `amp.data_parallel = #amp.data_parallel<reduce = bf16, shard_world_size = 4>`
  }];
  let parameters = (ins
    EnumParameter<Amp_Precision>:$reduce,
    DefaultValuedParameter<"int64_t", "0">:$shard_world_size
  );
  let assemblyFormat = "`<` struct($reduce, $shard_world_size) `>`";
  let genVerifyDecl = 1;
}

#endif // AMP_ATTRS_TD
