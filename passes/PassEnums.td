//===- PassEnums.td - the fixed-value options of the ampc passes ----------===//
// Enums of pass options (passes/PassEnums.h gives their command-line spellings). The learning-rate
// schedule and optimizer options use the IR's own enums, ::mlir::amp::LrScheduleKind and
// ::mlir::amp::OptimizerKind (ir/AmpEnums.td): the recipe attributes carry them too.
#ifndef AMP_PASS_ENUMS_TD
#define AMP_PASS_ENUMS_TD

include "mlir/IR/EnumAttr.td"

class Amp_PassEnum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let cppNamespace = "::mlir::amp";
  // Option values only: no attribute.
  let genSpecializedAttr = 0;
}

def Amp_AutocastDtype : Amp_PassEnum<"AutocastDtype", "amp-autocast low-precision dtype", [
  I32EnumAttrCase<"F32", 0, "f32">, I32EnumAttrCase<"F16", 1, "f16">,
  I32EnumAttrCase<"BF16", 2, "bf16">, I32EnumAttrCase<"Auto", 3, "auto">]>;

def Amp_LossScalingMode : Amp_PassEnum<"LossScalingMode", "amp-loss-scaling mode", [
  I32EnumAttrCase<"Dynamic", 0, "dynamic">, I32EnumAttrCase<"Static", 1, "static">,
  I32EnumAttrCase<"None", 2, "none">, I32EnumAttrCase<"Auto", 3, "auto">]>;

// Where the low-precision copy of a master weight lives (amp-optimizer): state written by the
// optimizer step, or a cast before each use; auto decides by the module's amp.target.
def Amp_WeightCopyMode : Amp_PassEnum<"WeightCopyMode", "amp-optimizer weight copies", [
  I32EnumAttrCase<"Auto", 0, "auto">, I32EnumAttrCase<"Stored", 1, "stored">,
  I32EnumAttrCase<"Recast", 2, "recast">]>;

// The element type of Adam's moments (amp-optimizer): f32, or bf16 stored with stochastic
// rounding (amp.adam_update).
def Amp_OptimizerStateType : Amp_PassEnum<"OptimizerStateType", "amp-optimizer moment type", [
  I32EnumAttrCase<"F32", 0, "f32">, I32EnumAttrCase<"BF16", 1, "bf16">]>;

#endif // AMP_PASS_ENUMS_TD
