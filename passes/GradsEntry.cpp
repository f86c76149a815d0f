// amp-grads-entry: a @grads entry, cloned from @train_step before the optimizer consumes the
// gradients, that returns every param's unscaled f32 gradient and updates nothing.
#include "llvm/ADT/BitVector.h"

#include "passes/Passes.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPGRADSENTRYPASS
#include "passes/Passes.h.inc"

namespace {
using namespace train;

struct AmpGradsEntryPass : impl::AmpGradsEntryPassBase<AmpGradsEntryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp step = findEntry(module, kTrainStep);
    if (!step) {
      module.emitError("amp-grads-entry: no function with amp.entry = \"train_step\"; run amp-autodiff first");
      return signalPassFailure();
    }
    if (findEntry(module, kGrads) || module.lookupSymbol(kGrads)) {
      module.emitError("amp-grads-entry: the module already has a @grads function or entry");
      return signalPassFailure();
    }
    if (step.getOps<UnscaleCheckOp>().empty() || !findResult(step, AmpDialect::kNameAttr, "found_inf")) {
      step.emitError("amp-grads-entry: @train_step has no amp.unscale_check; run amp-loss-scaling first "
                     "(the gradients are returned unscaled)");
      return signalPassFailure();
    }
    if (!step.getOps<StepCountersOp>().empty()) {
      step.emitError("amp-grads-entry: @train_step already consumes its gradients (amp-optimizer ran); "
                     "run amp-grads-entry before amp-optimizer");
      return signalPassFailure();
    }
    func::FuncOp grads = step.clone();
    grads.setSymName(kGrads);
    grads->setAttr(AmpDialect::kEntryAttr, StringAttr::get(&getContext(), kGrads));
    module.insert(std::next(Block::iterator(step)), grads);
    keepOnlyGradients(grads);
  }

  // Results: the loss, found_inf and `<param>.grad` per gradient; no state updates.
  void keepOnlyGradients(func::FuncOp f) {
    Builder b(f.getContext());
    Results in = Results::read(f), out;
    for (auto [value, attrs] : llvm::zip(in.values, in.attrs)) {
      if (attrs.get(AmpDialect::kUpdatesAttr)) continue;
      if (auto of = attrs.getAs<StringAttr>(AmpDialect::kGradOfAttr)) {
        out.add(value, AmpDialect::kNameAttr, (of.getValue() + ".grad").str());
        continue;
      }
      out.values.push_back(value);
      out.attrs.push_back(attrs);
    }
    out.write(f);

    // What only the dropped updates read (the scale update) goes, then the state it alone read.
    Block& body = f.front();
    for (Operation& op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty()) op.erase();
    llvm::BitVector unused(f.getNumArguments());
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (argRole(f, i) == "state" && f.getArgument(i).use_empty()) unused.set(i);
    f.eraseArguments(unused);
  }
};

}  // namespace
}  // namespace mlir::amp
