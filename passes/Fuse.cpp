// amp-fuse: elementwise producer/consumer chains become amp.fused regions (one generated kernel,
// one pass over memory). Each op keeps its precision inside the region, so fusion changes memory
// traffic, never numbers.
#include "ir/AmpOps.h"
#include "ir/Origin.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "passes/FusionGroups.h"
#include "passes/Passes.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPFUSEPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;

namespace {

// GEMM epilogue: a relu that is the only reader of a linear layer's result becomes the layer's
// activation (the relu VJP reads the relu's output, so training leaves the layer's result with no
// other reader). The layer computes the same bits (amp.linear's description).
void foldReluIntoLinear(Block& block) {
  SmallVector<LinearOp> layers;
  for (Operation& op : block)
    if (auto linear = dyn_cast<LinearOp>(&op)) layers.push_back(linear);
  for (LinearOp linear : layers) {
    Operation* relu = reluFoldableInto(linear);
    if (!relu) continue;
    linear.setActivation(LinearActivation::Relu);
    relu->getResult(0).replaceAllUsesWith(linear.getResult());
    relu->erase();
  }
}

struct AmpFusePass : mlir::amp::impl::AmpFusePassBase<AmpFusePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    Block& block = func.getBody().front();
    foldReluIntoLinear(block);
    FusionGroups plan = planFusionGroups(block);
    int64_t kernel = 0;
    for (FusionGroup& g : plan.groups)
      if (g.ops.size() >= 2) outline(func, g, kernel++);
  }

  static void outline(func::FuncOp func, const FusionGroup& g, int64_t kernel) {
    llvm::SmallPtrSet<Operation*, 16> members(g.ops.begin(), g.ops.end());
    SmallVector<Value> inputs, results;
    llvm::SmallPtrSet<Value, 16> seen;
    for (Operation* op : g.ops)
      for (Value v : op->getOperands())
        if (!members.contains(v.getDefiningOp()) && seen.insert(v).second) inputs.push_back(v);
    for (Operation* op : g.ops)
      for (OpOperand& use : op->getResult(0).getUses())
        if (!members.contains(use.getOwner())) {
          results.push_back(op->getResult(0));
          break;
        }
    // At the last elementwise op: a closing reduction may come after readers of the group's values
    // (a bias gradient after the weight gradient's GEMM), which must still see the region first.
    Operation* last = g.anchor();
    OpBuilder b(last);
    SmallVector<Type> resultTypes;
    for (Value v : results) resultTypes.push_back(v.getType());
    std::string name = (func.getSymName() + ".k" + Twine(kernel)).str();
    auto fused = b.create<FusedOp>(last->getLoc(), resultTypes, b.getStringAttr(name), inputs);
    // The kernel stands where its anchor stood, with its location and its amp.origin (the window
    // mean of accumulation stays recognisable to codegen once fused).
    if (std::optional<Origin> origin = getOrigin(last)) setOrigin(fused, *origin);
    Block* body = b.createBlock(&fused.getBody());
    IRMapping map;
    for (Value v : inputs) map.map(v, body->addArgument(v.getType(), v.getLoc()));
    b.setInsertionPointToStart(body);
    for (Operation* op : g.ops) b.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value v : results) yielded.push_back(map.lookup(v));
    b.create<YieldOp>(last->getLoc(), yielded);
    for (auto [old, now] : llvm::zip(results, fused.getResults())) old.replaceAllUsesWith(now);
    for (Operation* op : llvm::reverse(g.ops)) op->erase();
  }
};

}  // namespace
