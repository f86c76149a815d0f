// Declarations and registration of every ampc pass (generated from Passes.td).
#ifndef AMP_PASSES_PASSES_H
#define AMP_PASSES_PASSES_H

#include "ir/AmpDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/PassEnums.h"

namespace mlir::amp {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

}  // namespace mlir::amp

#endif  // AMP_PASSES_PASSES_H
