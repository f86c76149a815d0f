//===- AmpInterfaces.td - op interfaces of the amp dialect ----------------===//
#ifndef AMP_INTERFACES_TD
#define AMP_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Amp_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::amp";
  let description = [{
    A model op's vector-Jacobian product, which amp-autodiff builds for every op on the path from
    the params to the loss, in reverse order. Every op a model may contain (ir/AmpOps.td's
    `Amp_ModelOp`) declares it, and its definition lives in ir/AmpVjp.cpp: a model op without a
    VJP does not link. Ops with no derivative (`amp.constant`, `amp.compare`) define it as
    producing no cotangents.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the VJP at `b`'s insertion point, with the op's location. `resultGrads[i]` is the
        cotangent of result i (same type as the result; null means zero). `needGrad[i]` says
        whether operand i needs a cotangent. On success `operandGrads` has one entry per operand:
        the cotangent, with exactly the operand's type, or null (not needed, not differentiable,
        or an integer/i1 operand).
      }],
      "::llvm::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder&":$b, "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::mlir::ArrayRef<bool>":$needGrad, "::llvm::SmallVectorImpl<::mlir::Value>&":$operandGrads)>,
  ];
}

def Amp_AutocastOpInterface : OpInterface<"AutocastOpInterface"> {
  let cppNamespace = "::mlir::amp";
  let description = [{
    A model op's category in the built-in precision policies (PyTorch autocast; TensorFlow's
    f16 and bf16 lists), which amp-autocast starts from (docs/precision-policy.md). Every model
    op declares it and defines it in ir/AmpAutocast.cpp, so a model op the policies do not place
    does not link. `amp.cast` and `amp.constant` are not policy-controlled (none).
  }];
  let methods = [
    StaticInterfaceMethod<"The op's built-in categories, or none for ops no policy lists.",
      "::std::optional<::mlir::amp::AutocastCategories>", "getAutocastCategories", (ins)>,
  ];
}

#endif  // AMP_INTERFACES_TD
