// Vector-Jacobian products of the amp ops: one rule per differentiable op (passes/VjpRules.cpp
// lists them with the formula each builds). amp-autodiff calls buildVjp for every op on the path
// from the params to the loss, in reverse order.
#ifndef AMP_PASSES_VJPRULES_H
#define AMP_PASSES_VJPRULES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace mlir::amp {

// Builds the VJP of `op` at `b`'s insertion point, with `op`'s location.
// `resultGrads[i]` is the cotangent of result i (same type as the result; null = zero).
// `needGrad[i]` says whether operand i needs a cotangent. On success `operandGrads` has one entry
// per operand: the cotangent, with exactly the operand's type, or null (operand not needed, not
// differentiable, or an integer/i1 operand). Without a rule for the op, emits an error at the op
// ("amp-autodiff: no VJP rule for 'amp.foo'") and fails.
LogicalResult buildVjp(OpBuilder& b, Operation* op, ArrayRef<Value> resultGrads,
                       ArrayRef<bool> needGrad, SmallVectorImpl<Value>& operandGrads);

// True when `opName` (e.g. "amp.matmul") has a VJP rule.
bool hasVjpRule(StringRef opName);
// Every op name with a rule, sorted.
SmallVector<StringRef> vjpRuleNames();

// Undoes numpy broadcasting: sums `grad` (the shape of a broadcast result) over the dimensions
// `target` was broadcast along (amp.reduce_sum) and reshapes to `target` (amp.reshape). Returns
// `grad` itself when the shapes already agree.
Value reduceToShape(OpBuilder& b, Location loc, Value grad, RankedTensorType target);

}  // namespace mlir::amp

#endif  // AMP_PASSES_VJPRULES_H
