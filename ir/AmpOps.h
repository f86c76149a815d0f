// Operation classes of the amp dialect (generated from AmpOps.td).
#ifndef AMP_IR_AMPOPS_H
#define AMP_IR_AMPOPS_H

#include <optional>

#include "ir/AmpDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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
