// The model convention: what a func.func must look like to be compiled as a model.
#ifndef AMP_IR_MODELCONVENTION_H
#define AMP_IR_MODELCONVENTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::amp {

// Buffer: persistent, not trained, updated by the training step (amp.batch_norm's running
// statistics); codegen keeps it as state, so checkpoints and --resume carry it.
enum class ArgRole { Param, Input, Label, State, Buffer };

// Verifies `func` against the model convention (docs/model-convention.md) and reports every
// violation as a located error:
//  - every argument has amp.role ("param" | "input" | "label" | "buffer"; "state" in entries the
//    training passes built) and a unique amp.name;
//  - params are f32 tensors (master weights); amp.init appears on params, buffers and state only;
//  - a buffer is f32, initialised, and read only as the running mean or variance of one
//    amp.batch_norm;
//  - the first result is the scalar loss, tensor<f32>;
//  - the body holds only amp ops and func.return.
LogicalResult verifyModel(func::FuncOp func);

// Role and name of argument `index`; callers must have verified the model first.
ArgRole getArgRole(func::FuncOp func, unsigned index);
StringRef getArgName(func::FuncOp func, unsigned index);

}  // namespace mlir::amp

#endif  // AMP_IR_MODELCONVENTION_H
