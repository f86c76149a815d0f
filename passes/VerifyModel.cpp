// amp-verify-model: the model convention as a pass (ampc runs it first).
#include "ir/ModelConvention.h"
#include "passes/Passes.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPVERIFYMODELPASS
#include "passes/Passes.h.inc"

namespace {
struct AmpVerifyModelPass : impl::AmpVerifyModelPassBase<AmpVerifyModelPass> {
  void runOnOperation() override {
    bool ok = true, anyModel = false;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic()) continue;
      anyModel = true;
      if (failed(verifyModel(func))) ok = false;
    }
    // An empty file (or one with only private helpers) would compile to nothing, silently.
    if (!anyModel) {
      getOperation().emitError("amp-verify-model: the module defines no model (a public func.func)");
      ok = false;
    }
    if (!ok) signalPassFailure();
    markAllAnalysesPreserved();
  }
};
}  // namespace
}  // namespace mlir::amp
