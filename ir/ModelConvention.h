// The model convention: what a func.func must look like to be compiled as a model.
#ifndef AMP_IR_MODELCONVENTION_H
#define AMP_IR_MODELCONVENTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::amp {

enum class ArgRole { Param, Input, Label, State };

// Verifies `func` against the model convention (docs/model-convention.md) and reports every
// violation as a located error:
//  - every argument has amp.role ("param" | "input" | "label" | "state") and a unique amp.name;
//  - params are f32 tensors (master weights); amp.init appears on params and state only;
//  - the first result is the scalar loss, tensor<f32>;
//  - the body holds only amp ops and func.return.
LogicalResult verifyModel(func::FuncOp func);

// Role and name of argument `index`; callers must have verified the model first.
ArgRole getArgRole(func::FuncOp func, unsigned index);
StringRef getArgName(func::FuncOp func, unsigned index);

}  // namespace mlir::amp

#endif  // AMP_IR_MODELCONVENTION_H
