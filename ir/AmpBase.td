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
    "::mlir::amp::DataParallelRecipeAttr":$data_parallel,
    "::mlir::StringAttr":$shard_of,
    "::mlir::UnitAttr":$autocast_inserted,
    "::mlir::StringAttr":$origin,
    "::mlir::amp::LossScalingRecipeAttr":$loss_scaling,
    "::mlir::amp::OptimizerRecipeAttr":$optimizer
  );
  let extraClassDeclaration = [{
    // The discardable attributes' names, defined from the ODS helpers in AmpDialect.h.
    static const ::llvm::StringLiteral kRoleAttr, kNameAttr, kInitAttr, kPrecisionAttr,
        kReasonAttr, kTargetAttr, kAutocastAttr, kEntryAttr, kGradOfAttr, kUpdatesAttr,
        kDataParallelAttr, kShardOfAttr, kAutocastInsertedAttr, kOriginAttr, kLossScalingAttr,
        kOptimizerAttr;
  }];
}

// Element types.
//===----------------------------------------------------------------------===//
// How the runtime runs an op (runtime/plan/Plan.h, StepKind). The op catalogue generator
// (tools/op-catalog/gen_op_catalog.py) reads these traits into the runtime's schema; an op with
// none runs as a single elementwise or shape step.
//===----------------------------------------------------------------------===//

class Amp_StepKindTrait<string name> : NativeOpTrait<name> { let cppNamespace = "::mlir::amp"; }
// A library call: GEMM, convolution, pooling, softmax, norms, losses, reductions, embedding.
def Amp_LibraryStep : Amp_StepKindTrait<"LibraryStep">;
// A multi-tensor loss-scaling, clipping or optimizer kernel.
def Amp_MultiTensorStep : Amp_StepKindTrait<"MultiTensorStep">;
// A generated fused kernel.
def Amp_FusedStep : Amp_StepKindTrait<"FusedStep">;
// A view of the operand: no work.
def Amp_AliasStep : Amp_StepKindTrait<"AliasStep">;

//===----------------------------------------------------------------------===//
// Bounded attributes
//===----------------------------------------------------------------------===//

// A numeric attribute confined to an interval, which the IR verifier checks and, through the
// decoder generated from these fields (tools/op-catalog/gen_op_catalog.py), the runtime checks in
// every plan: one declaration, no hand-written range checks. Bounds are C++ literals ("1.0",
// "INFINITY"); an empty bound is none; an open bound excludes its value. A float bound also refuses
// NaN.
class Amp_BoundedAttr<Attr attr, string lo, string hi, bit loOpen = 0, bit hiOpen = 0>
    : ConfinedAttr<attr, [AttrConstraint<
          CPred<"::mlir::amp::attrWithin($_self, " # !if(!empty(lo), "-INFINITY", lo) # ", " #
                !if(!empty(hi), "INFINITY", hi) # ", " # !if(loOpen, "true", "false") # ", " #
                !if(hiOpen, "true", "false") # ")">,
          "in " # !if(!or(loOpen, !empty(lo)), "(", "[") # !if(!empty(lo), "-inf", lo) # ", " #
                !if(!empty(hi), "inf", !subst("INFINITY", "inf", hi)) # !if(!or(hiOpen, !empty(hi)), ")", "]")>]> {
  string ampLo = lo;
  string ampHi = hi;
  bit ampLoOpen = loOpen;
  bit ampHiOpen = hiOpen;
}

// The bounded attributes the ops share.
def Amp_PositiveF64Attr : Amp_BoundedAttr<F64Attr, "0.0", "INFINITY", 1, 1>;      // finite, > 0
def Amp_NonNegativeF64Attr : Amp_BoundedAttr<F64Attr, "0.0", "INFINITY", 0, 1>;   // finite, >= 0
def Amp_UnitIntervalF64Attr : Amp_BoundedAttr<F64Attr, "0.0", "1.0", 0, 1>;       // [0, 1)
def Amp_NonNegativeI64Attr : Amp_BoundedAttr<I64Attr, "0", "">;

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
