// Operation classes of the amp dialect (generated from AmpOps.td).
#ifndef AMP_IR_AMPOPS_H
#define AMP_IR_AMPOPS_H

#include <cmath>
#include <optional>

#include "ir/AmpDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::amp {
// How the runtime runs an op (ir/AmpBase.td, Amp_StepKindTrait): markers, nothing to verify.
template <typename ConcreteType>
class LibraryStep : public OpTrait::TraitBase<ConcreteType, LibraryStep> {};
template <typename ConcreteType>
class MultiTensorStep : public OpTrait::TraitBase<ConcreteType, MultiTensorStep> {};
template <typename ConcreteType>
class FusedStep : public OpTrait::TraitBase<ConcreteType, FusedStep> {};
template <typename ConcreteType>
class AliasStep : public OpTrait::TraitBase<ConcreteType, AliasStep> {};

// An integer or float attribute within [lo, hi], each end open or closed (Amp_BoundedAttr,
// ir/AmpBase.td); NaN is within no interval.
bool attrWithin(Attribute attr, double lo, double hi, bool loOpen, bool hiOpen);

// amp.adam_update's custom<MomentTypes> directive (AmpTrainOps.cpp): `moments(bf16)` after the
// types when the moments are not f32 like the param.
ParseResult parseMomentTypes(OpAsmParser& parser, Type paramType, Type& expAvg, Type& expAvgSq);
void printMomentTypes(OpAsmPrinter& printer, Operation* op, Type paramType, Type expAvg, Type expAvgSq);
}  // namespace mlir::amp

// The interfaces every model op declares (ir/AmpInterfaces.td).
#include "ir/AutocastCategory.h"
#include "ir/AmpInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ir/AmpOps.h.inc"

namespace mlir::amp {
// Ops amp-fuse may place in an amp.fused region: elementwise math, compare, select, cast.
bool isFusibleElementwise(Operation* op);
// An amp.reduce_sum over every dim but the last (no keepdim): the column sums of a [..., N] value,
// which a fused region may end with (a bias gradient).
bool isRowReduction(Operation* op);
}  // namespace mlir::amp

#endif  // AMP_IR_AMPOPS_H
