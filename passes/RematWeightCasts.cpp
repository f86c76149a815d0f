// amp-remat-weight-casts: one cast per use of a master weight's low-precision copy, placed just
// before the use, so no copy lives from the forward to the backward (recast weight copies).
#include "ir/AmpOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPREMATWEIGHTCASTSPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;
using mlir::amp::train::argRole;
using mlir::amp::train::isLowFloat;

namespace {

struct AmpRematWeightCastsPass : mlir::amp::impl::AmpRematWeightCastsPassBase<AmpRematWeightCastsPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal()) return;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      if (argRole(f, i) != "param") continue;
      for (Operation* user : llvm::make_early_inc_range(f.getArgument(i).getUsers()))
        if (auto cast = dyn_cast<CastOp>(user); cast && isLowFloat(cast.getResult().getType()))
          rematPerUser(cast);
    }
  }

  // The first user (in block order) keeps the cast; every later user gets a clone right before it.
  static void rematPerUser(CastOp cast) {
    Block* block = cast->getBlock();
    SmallVector<Operation*> users;  // the user ops as seen in the cast's block, once each
    for (OpOperand& use : cast.getResult().getUses()) {
      Operation* inBlock = block->findAncestorOpInBlock(*use.getOwner());
      if (inBlock && !llvm::is_contained(users, inBlock)) users.push_back(inBlock);
    }
    if (users.size() < 2) return;
    llvm::sort(users, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    OpBuilder b(cast.getContext());
    for (Operation* later : llvm::drop_begin(users)) {
      b.setInsertionPoint(later);
      Operation* clone = b.clone(*cast);
      cast.getResult().replaceUsesWithIf(clone->getResult(0), [&](OpOperand& use) {
        return block->findAncestorOpInBlock(*use.getOwner()) == later;
      });
    }
  }
};

}  // namespace
