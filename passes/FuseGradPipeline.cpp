// amp-fuse-grad-pipeline: unscale_check, global_norm, clip_grads, the optimizer updates and the
// weight-copy casts after them become amp.grad_stats and fused updates (Passes.td). A rewrite of
// memory traffic only: every value keeps the bits of the unfused ops.
#include <string>

#include "ir/AmpOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "passes/Passes.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPFUSEGRADPIPELINEPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;

namespace {

Type elementOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }
bool isHalf(Type t) { return t.isBF16() || t.isF16(); }

// The update reading `use` as its gradient, when it is a plain (not yet fused) update.
Operation* plainUpdateReading(OpOperand& use) {
  Operation* owner = use.getOwner();
  if (use.getOperandNumber() != 1) return nullptr;
  if (auto s = dyn_cast<SgdUpdateOp>(owner); s && !s.getScale() && !s.getNorm() && !s.getWeightCopy()) return owner;
  if (auto a = dyn_cast<AdamUpdateOp>(owner); a && !a.getScale() && !a.getNorm() && !a.getWeightCopy()) return owner;
  return nullptr;
}

// The new param of an update.
Value newParamOf(Operation* update) { return update->getResult(0); }

// The cast of `param` (an update's new master) to its 16-bit copy, if one reads it.
CastOp weightCopyCast(Value param) {
  for (Operation* user : param.getUsers())
    if (auto c = dyn_cast<CastOp>(user); c && isHalf(elementOf(c.getResult())) && c.getOperand() == param) return c;
  return {};
}

class GradPipeline {
 public:
  explicit GradPipeline(UnscaleCheckOp check) : check_(check) {}

  // Finds who reads each unscaled gradient; false when anything but the norm, the clip and one
  // update per gradient does (a caller-visible or twice-read intermediate must stay stored).
  bool match() {
    const size_t n = check_.getGrads().size();
    updateOf_.assign(n, nullptr);
    for (auto [i, u] : llvm::enumerate(check_.getUnscaled())) {
      if (!elementOf(u).isF32()) return false;  // unscaled in 16 bits: the updates could not redo it
      for (OpOperand& use : u.getUses()) {
        Operation* owner = use.getOwner();
        if (auto norm = dyn_cast<GlobalNormOp>(owner)) {
          if (use.getOperandNumber() != i || (norm_ && norm_ != norm)) return false;
          norm_ = norm;
        } else if (auto clip = dyn_cast<ClipGradsOp>(owner)) {
          if (use.getOperandNumber() != i || (clip_ && clip_ != clip)) return false;
          clip_ = clip;
        } else if (Operation* update = plainUpdateReading(use); update && !updateOf_[i]) {
          updateOf_[i] = update;
        } else {
          return false;
        }
      }
    }
    if (norm_ && norm_.getGrads().size() != n) return false;
    if (clip_) {
      if (!norm_ || clip_.getGrads().size() != n || clip_.getNorm() != norm_.getNorm()) return false;
      for (auto [i, c] : llvm::enumerate(clip_.getClipped())) {
        if (updateOf_[i]) return false;  // the update must read the clipped gradient
        for (OpOperand& use : c.getUses()) {
          Operation* update = plainUpdateReading(use);
          if (!update || updateOf_[i]) return false;
          updateOf_[i] = update;
        }
      }
    }
    return llvm::all_of(updateOf_, [](Operation* u) { return u != nullptr; });
  }

  void rewrite() {
    OpBuilder b(check_);
    // Each gradient as stored: a 16-bit gradient the step widened only to check it is read as is.
    SmallVector<Value> sources;
    SmallVector<Operation*> widenings;
    for (Value g : check_.getGrads()) {
      auto widen = g.getDefiningOp<CastOp>();
      if (widen && g.hasOneUse() && isHalf(elementOf(widen.getOperand()))) {
        sources.push_back(widen.getOperand());
        widenings.push_back(widen);
      } else {
        sources.push_back(g);
      }
    }
    SmallVector<Location> locs = {check_.getLoc()};
    if (norm_) locs.push_back(norm_.getLoc());
    if (clip_) locs.push_back(clip_.getLoc());
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto stats = b.create<GradStatsOp>(b.getFusedLoc(locs), scalar, norm_ ? Type(scalar) : Type(), sources,
                                       check_.getScale());
    check_.getFoundInf().replaceAllUsesWith(stats.getFoundInf());
    if (norm_) norm_.getNorm().replaceAllUsesWith(stats.getNorm());

    SmallVector<Operation*> updates;
    for (auto [i, update] : llvm::enumerate(updateOf_)) updates.push_back(fuseUpdate(update, sources[i], stats.getNorm()));
    group(updates);
    // Users before what they read: the updates were replaced already.
    if (clip_) clip_->erase();
    if (norm_) norm_->erase();
    check_->erase();
    for (Operation* widen : widenings) widen->erase();
  }

 private:
  // Replaces `update` by the same update reading `source` scaled, clipped by `norm` and writing
  // the copy the cast after it wrote; the replaced update and the absorbed cast are erased.
  Operation* fuseUpdate(Operation* update, Value source, Value norm) {
    OpBuilder b(update);
    Value scale = check_.getScale();
    Value clipNorm = clip_ ? norm : Value();
    FloatAttr maxNorm = clip_ ? clip_.getMaxNormAttr() : FloatAttr();
    CastOp copy = weightCopyCast(newParamOf(update));
    TypeAttr copyType = copy ? TypeAttr::get(elementOf(copy.getResult())) : TypeAttr();
    Operation* fused;
    Value newCopy;
    if (auto s = dyn_cast<SgdUpdateOp>(update)) {
      auto f = b.create<SgdUpdateOp>(s.getLoc(), s.getParam(), source, s.getLr(), s.getFoundInf(), s.getMomentumBuffer(),
                                     scale, clipNorm, s.getMomentumAttr(), s.getNesterovAttr(), s.getWeightDecayAttr(),
                                     maxNorm, copyType);
      s.getNewParam().replaceAllUsesWith(f.getNewParam());
      if (Value buf = s.getNewMomentumBuffer()) buf.replaceAllUsesWith(f.getNewMomentumBuffer());
      newCopy = f.getNewWeightCopy();
      fused = f;
    } else {
      auto a = cast<AdamUpdateOp>(update);
      auto f = b.create<AdamUpdateOp>(a.getLoc(), a.getParam(), source, a.getExpAvg(), a.getExpAvgSq(), a.getStep(),
                                      a.getLr(), a.getFoundInf(), scale, clipNorm, a.getBeta1Attr(), a.getBeta2Attr(),
                                      a.getEpsAttr(), a.getWeightDecayAttr(), a.getDecoupledAttr(), maxNorm, copyType,
                                      a.getRoundingSeedAttr());
      for (unsigned r = 0; r < 3; ++r) a->getResult(r).replaceAllUsesWith(f->getResult(r));
      newCopy = f.getNewWeightCopy();
      fused = f;
    }
    if (copy) {
      copy.getResult().replaceAllUsesWith(newCopy);
      copy->erase();
    }
    update->erase();
    return fused;
  }

  // Updates of one kernel become adjacent, at the first update's place, when every operand they
  // read is defined before it. Moving an update earlier keeps every use after its definition.
  static void group(SmallVector<Operation*>& updates) {
    Operation* first = *llvm::min_element(updates, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    for (Operation* u : updates)
      for (Value v : u->getOperands())
        if (Operation* def = v.getDefiningOp(); def && def->getBlock() == first->getBlock() && !def->isBeforeInBlock(first))
          return;
    auto key = [](Operation* u) {
      std::string k = u->getName().getStringRef().str();
      llvm::raw_string_ostream os(k);
      os << ' ' << elementOf(u->getOperand(1));
      if (u->getNumResults() > 0) os << ' ' << elementOf(u->getResults().back());
      return k;
    };
    SmallVector<Operation*> order(updates);
    llvm::stable_sort(order, [&](Operation* a, Operation* b) { return key(a) < key(b); });
    Operation* prev = nullptr;
    for (Operation* u : order) {
      if (!prev) {
        if (u != first) u->moveBefore(first);
      } else {
        u->moveAfter(prev);
      }
      prev = u;
    }
  }

  UnscaleCheckOp check_;
  GlobalNormOp norm_;
  ClipGradsOp clip_;
  SmallVector<Operation*> updateOf_;
};

struct AmpFuseGradPipelinePass : mlir::amp::impl::AmpFuseGradPipelinePassBase<AmpFuseGradPipelinePass> {
  void runOnOperation() override {
    SmallVector<UnscaleCheckOp> checks(getOperation().getOps<UnscaleCheckOp>());
    if (checks.size() != 1) return;  // one pipeline per step, or none
    GradPipeline pipeline(checks.front());
    if (pipeline.match()) pipeline.rewrite();
  }
};

}  // namespace
