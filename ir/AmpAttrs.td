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

#endif // AMP_ATTRS_TD
