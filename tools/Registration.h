// The one place that says which dialects and passes the ampc tools know. amp-opt and ampc both
// include it, so the two never drift apart.
#ifndef AMP_TOOLS_REGISTRATION_H
#define AMP_TOOLS_REGISTRATION_H

#include "ir/AmpDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

namespace mlir::amp {

inline void registerAmpDialects(DialectRegistry& registry) {
  registry.insert<AmpDialect, func::FuncDialect>();
}

inline void registerAmpToolPasses() {
  registerAmpPasses();
  registerAmpPipelines();
  // Upstream passes the pipelines use and tests exercise.
  registerCanonicalizerPass();
  registerCSEPass();
}

}  // namespace mlir::amp

#endif  // AMP_TOOLS_REGISTRATION_H
