// Lowers a verified amp model (func.func) to the runtime's execution plan (runtime/plan/Plan.h).
#ifndef AMP_CODEGEN_PLANBUILDER_H
#define AMP_CODEGEN_PLANBUILDER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "runtime/plan/Plan.h"

namespace mlir::amp {

// Builds a plan with one entry point per public function: the model (no amp.entry attribute) is
// "eval", every function with amp.entry = NAME is entry NAME. Arguments bind buffers by amp.name,
// shared by all entries (a param is one buffer whoever reads it). Results are named by their
// amp.name ("loss", "found_inf"), "grad:<param>" for amp.grad_of, else "loss"/"output<i>";
// results with amp.updates = NAME become write-backs into that param/state buffer.
// Reports unsupported constructs as located errors and returns failure.
// eraseLoweredFunctions: erase each public function once lowered (and give the freed memory back
// to the system), so that a large model's training IR and its plan are never both held whole;
// for callers (ampc) that need the functions no more.
FailureOr<::amp::rt::Plan> buildPlan(ModuleOp module, bool eraseLoweredFunctions = false);

}  // namespace mlir::amp

#endif  // AMP_CODEGEN_PLANBUILDER_H
