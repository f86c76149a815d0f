// Helpers of the VJP rules (ir/AmpVjp.cpp), which define every model op's
// DifferentiableOpInterface::buildVjp (ir/AmpInterfaces.td). amp-autodiff calls buildVjp for every
// op on the path from the params to the loss, in reverse order.
#ifndef AMP_IR_AMPVJP_H
#define AMP_IR_AMPVJP_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp {

// Undoes numpy broadcasting: sums `grad` (the shape of a broadcast result) over the dimensions
// `target` was broadcast along (amp.reduce_sum) and reshapes to `target` (amp.reshape). Returns
// `grad` itself when the shapes already agree.
Value reduceToShape(OpBuilder& b, Location loc, Value grad, RankedTensorType target);

}  // namespace mlir::amp

#endif  // AMP_IR_AMPVJP_H
