//===- AmpEnums.td - enumerated attributes of the amp dialect -------------===//
// Each enum is a C++ enum class (AmpEnums.h.inc, with stringify/symbolize) and an attribute
// that ops print as a bare keyword: `amp.compare gt, ...`, `approximate = tanh`. The keyword is
// also the spelling the execution plan carries (codegen writes stringifyEnum of the value).
// The attribute prints its own leading space, so op formats put `` (no space) before it.
#ifndef AMP_ENUMS_TD
#define AMP_ENUMS_TD

include "ir/AmpBase.td"
include "mlir/IR/EnumAttr.td"

class Amp_I32Enum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let cppNamespace = "::mlir::amp";
  // The attribute is the EnumAttr below (a dialect attribute), not a specialised IntegerAttr.
  let genSpecializedAttr = 0;
}

class Amp_EnumAttr<EnumAttrInfo info, string mnemonic>
    : EnumAttr<Amp_Dialect, info, mnemonic> {
  let summary = info.summary;
}

def Amp_ComparePredicate : Amp_I32Enum<"ComparePredicate",
    "amp.compare predicate (eq, ne, lt, le, gt, ge)", [
  I32EnumAttrCase<"Eq", 0, "eq">, I32EnumAttrCase<"Ne", 1, "ne">,
  I32EnumAttrCase<"Lt", 2, "lt">, I32EnumAttrCase<"Le", 3, "le">,
  I32EnumAttrCase<"Gt", 4, "gt">, I32EnumAttrCase<"Ge", 5, "ge">]>;
def Amp_ComparePredicateAttr : Amp_EnumAttr<Amp_ComparePredicate, "compare_predicate">;

def Amp_GeluApproximation : Amp_I32Enum<"GeluApproximation", "amp.gelu approximation (none, tanh)", [
  I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Tanh", 1, "tanh">]>;
def Amp_GeluApproximationAttr : Amp_EnumAttr<Amp_GeluApproximation, "gelu_approximation">;

def Amp_LinearActivation : Amp_I32Enum<"LinearActivation", "amp.linear activation (none, relu)", [
  I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Relu", 1, "relu">]>;
def Amp_LinearActivationAttr : Amp_EnumAttr<Amp_LinearActivation, "linear_activation">;

def Amp_LrScheduleKind : Amp_I32Enum<"LrScheduleKind", "amp.lr_schedule kind (constant, cosine)", [
  I32EnumAttrCase<"Constant", 0, "constant">, I32EnumAttrCase<"Cosine", 1, "cosine">]>;
def Amp_LrScheduleKindAttr : Amp_EnumAttr<Amp_LrScheduleKind, "lr_schedule_kind">;

def Amp_ReduceKind : Amp_I32Enum<"ReduceKind", "amp.all_reduce reduction (sum, mean, max)", [
  I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Mean", 1, "mean">, I32EnumAttrCase<"Max", 2, "max">]>;
def Amp_ReduceKindAttr : Amp_EnumAttr<Amp_ReduceKind, "reduce_kind">;

// amp.gemm_epilogue kind: what a cuBLASLt GEMM does besides the product (ir/AmpFusedOps.td).
def Amp_GemmEpilogueKind : Amp_I32Enum<"GemmEpilogueKind", "amp.gemm_epilogue kind", [
  I32EnumAttrCase<"ReluAux", 0, "relu_aux">, I32EnumAttrCase<"ReluAuxBias", 1, "relu_aux_bias">,
  I32EnumAttrCase<"GeluAux", 2, "gelu_aux">, I32EnumAttrCase<"GeluAuxBias", 3, "gelu_aux_bias">,
  I32EnumAttrCase<"GeluBias", 4, "gelu_bias">, I32EnumAttrCase<"DRelu", 5, "drelu">,
  I32EnumAttrCase<"DReluBgrad", 6, "drelu_bgrad">, I32EnumAttrCase<"DGelu", 7, "dgelu">,
  I32EnumAttrCase<"DGeluBgrad", 8, "dgelu_bgrad">, I32EnumAttrCase<"BgradA", 9, "bgrad_a">,
  I32EnumAttrCase<"BgradB", 10, "bgrad_b">]>;
def Amp_GemmEpilogueKindAttr : Amp_EnumAttr<Amp_GemmEpilogueKind, "gemm_epilogue_kind">;

// amp.precision, an op's compute precision (and the module's low-precision dtype). The IR spells
// it as a string, {amp.precision = "bf16"}, because users write it in models as a per-op
// override; C++ reads and writes it typed (ir/Precision.h), and the dialect verifier accepts only
// these spellings.
def Amp_Precision : Amp_I32Enum<"Precision", "compute precision (f32, f16, bf16)", [
  I32EnumAttrCase<"F32", 0, "f32">, I32EnumAttrCase<"F16", 1, "f16">, I32EnumAttrCase<"BF16", 2, "bf16">]>;

// amp.origin, the training pass that inserted an op. Like amp.precision it is a string in the IR
// ({amp.origin = "optimizer"}) and typed in C++ (ir/Origin.h). Later stages read it, never the
// op's location: the plan builder ends the forward phase at the model's loss, below the window
// mean of accumulation and the mean over ranks, and ampc counts what amp-remat recomputed.
def Amp_Origin : Amp_I32Enum<"Origin", "the training pass that inserted an op", [
  I32EnumAttrCase<"LossScaling", 0, "loss_scaling">, I32EnumAttrCase<"Optimizer", 1, "optimizer">,
  I32EnumAttrCase<"Accumulate", 2, "accumulate">, I32EnumAttrCase<"DataParallel", 3, "data_parallel">,
  I32EnumAttrCase<"ShardOptimizer", 4, "shard_optimizer">, I32EnumAttrCase<"Remat", 5, "remat">]>;

// The optimizer on the f32 master weights (amp-optimizer's `kind`, ampc's --optimizer): also a
// parameter of the #amp.optimizer recipe the pass stamps on the module.
def Amp_OptimizerKind : Amp_I32Enum<"OptimizerKind", "optimizer on the f32 master weights", [
  I32EnumAttrCase<"Sgd", 0, "sgd">, I32EnumAttrCase<"Adam", 1, "adam">,
  I32EnumAttrCase<"AdamW", 2, "adamw">]>;

// The loss scaling amp-loss-scaling decided (its mode `auto` resolved by precision): a parameter
// of the #amp.loss_scaling recipe.
def Amp_ScalingKind : Amp_I32Enum<"ScalingKind", "the loss scaling a training step uses", [
  I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Static", 1, "static">,
  I32EnumAttrCase<"Dynamic", 2, "dynamic">]>;

// What decided an op's precision (the kind of an #amp.reason). No attribute wraps it: it is a
// parameter of Amp_ReasonAttr.
def Amp_ReasonKind : Amp_I32Enum<"ReasonKind", "what decided an op's precision", [
  I32EnumAttrCase<"Policy", 0, "policy">, I32EnumAttrCase<"Override", 1, "override">,
  I32EnumAttrCase<"Off", 2, "off">, I32EnumAttrCase<"Backward", 3, "backward">,
  I32EnumAttrCase<"Pass", 4, "pass">]>;

#endif // AMP_ENUMS_TD
