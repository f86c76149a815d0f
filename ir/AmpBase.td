//===- AmpBase.td - the amp dialect, its types and constraints -----------===//
#ifndef AMP_BASE_TD
#define AMP_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Amp_Dialect : Dialect {
  let name = "amp";
  let cppNamespace = "::mlir::amp";
  let summary = "A small dataflow IR for mixed-precision training";
  let description = [{
    The `amp` dialect describes a model as a `func.func` over statically shaped tensors.
    Arguments carry `amp.role = "param" | "input" | "label" | "state"` and a stable `amp.name`;
    params and state may carry an initialiser (`amp.init = #amp.init<kaiming_uniform, seed = 1>`). The first result is
    the scalar f32 loss; further results (logits) are allowed.

    Element types: `f32`, `f16`, `bf16` for compute; `f8E4M3FN` and `f8E5M2` only through
    `amp.cast`; `i32`/`i64` for ids and labels; `i1` for masks.

    Numeric contract: an op with f16/bf16 operands computes internally in f32 (matmul, conv and
    reductions accumulate in f32) and rounds each result element to the result type with
    round-to-nearest-even.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  // The attributes the dialect owns on ops, function arguments and results. ODS generates a typed
  // helper per attribute (e.g. `RoleAttrHelper`); AmpDialect.h derives the k*Attr names from them,
  // and AmpDialect.cpp verifies the values.
  let discardableAttrs = (ins
    "::mlir::StringAttr":$role,
    "::mlir::StringAttr":$name,
    "::mlir::Attribute":$init,  // #amp.init<...> or the stored f32 values
    "::mlir::StringAttr":$precision,
    "::mlir::amp::ReasonAttr":$reason,
    "::mlir::StringAttr":$target,
    "::mlir::BoolAttr":$autocast,
    "::mlir::StringAttr":$entry,
    "::mlir::StringAttr":$grad_of,
    "::mlir::StringAttr":$updates,
    "::mlir::UnitAttr":$data_parallel,
    "::mlir::StringAttr":$shard_of,
    "::mlir::UnitAttr":$autocast_inserted
  );
  let extraClassDeclaration = [{
    // The discardable attributes' names, defined from the ODS helpers in AmpDialect.h.
    static const ::llvm::StringLiteral kRoleAttr, kNameAttr, kInitAttr, kPrecisionAttr,
        kReasonAttr, kTargetAttr, kAutocastAttr, kEntryAttr, kGradOfAttr, kUpdatesAttr,
        kDataParallelAttr, kShardOfAttr, kAutocastInsertedAttr;
  }];
}

// Element types.
def Amp_ComputeFloat : AnyTypeOf<[F32, F16, BF16], "f32, f16 or bf16">;
def Amp_CastableFloat : AnyTypeOf<[F32, F16, BF16, F8E4M3FN, F8E5M2],
                                  "f32, f16, bf16, f8E4M3FN or f8E5M2">;
def Amp_IdType : AnyTypeOf<[I32, I64], "i32 or i64">;

// Tensors: statically shaped, row-major.
def Amp_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
def Amp_CastableTensor : StaticShapeTensorOf<[F32, F16, BF16, F8E4M3FN, F8E5M2]>;
def Amp_IdTensor : StaticShapeTensorOf<[I32, I64]>;
def Amp_MaskTensor : StaticShapeTensorOf<[I1]>;
def Amp_AnyTensor : StaticShapeTensorOf<[F32, F16, BF16, I32, I64, I1]>;
def Amp_LossTensor : 0DTensorOf<[F32, F16, BF16]>;

#endif // AMP_BASE_TD
