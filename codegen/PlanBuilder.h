// Lowers a verified amp model (func.func) to the runtime's execution plan (runtime/plan/Plan.h).
#ifndef AMP_CODEGEN_PLANBUILDER_H
#define AMP_CODEGEN_PLANBUILDER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "runtime/plan/Plan.h"

namespace mlir::amp {

// Builds a plan whose "eval" entry point runs the model's forward function: params and inputs
// bound by amp.name, results named "loss", "output1", ... Reports unsupported constructs as
// located errors and returns failure.
FailureOr<::amp::rt::Plan> buildForwardPlan(ModuleOp module);

}  // namespace mlir::amp

#endif  // AMP_CODEGEN_PLANBUILDER_H
