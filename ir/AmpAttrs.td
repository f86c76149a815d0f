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

#endif // AMP_ATTRS_TD
