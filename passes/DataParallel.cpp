// amp-data-parallel: the collectives of a data-parallel training step (docs/data-parallel.md).
// Gradients are reduced before the unscale check, so the check, the clip norm and the updates
// see the same values on every rank; found_inf is reduced again as a max, so that the skip
// decision is shared even where a reduced gradient would not carry a rank's non-finite value
// (a bf16/f16 reduction that rounds, a backend that reduces in another order).
#include <algorithm>

#include "ir/Origin.h"
#include "ir/Precision.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPDATAPARALLELPASS
#include "passes/Passes.h.inc"

namespace {
using namespace train;

void describe(AllReduceOp op, Precision p, StringRef why) {
  setPrecision(op, p);
  op->setAttr(AmpDialect::kReasonAttr, ReasonAttr::pass(op.getContext(), "data-parallel", why));
}

struct AmpDataParallelPass : impl::AmpDataParallelPassBase<AmpDataParallelPass> {
  // Every op this pass inserts carries amp.origin (ir/Origin.h).
  OriginStamp stamp{Origin::DataParallel};

  using AmpDataParallelPassBase::AmpDataParallelPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketBytes < 1) {
      module.emitError("amp-data-parallel: bucket-bytes must be >= 1, got ") << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    func::FuncOp step = findEntry(module, kTrainStep);
    if (!step) {
      module.emitError("amp-data-parallel: no function with amp.entry = \"train_step\"; compile with --train");
      return signalPassFailure();
    }
    if (module->hasAttr(AmpDialect::kDataParallelAttr) || !step.getOps<AllReduceOp>().empty()) {
      step.emitError("amp-data-parallel: @train_step is already data-parallel");
      return signalPassFailure();
    }
    auto checks = llvm::to_vector(step.getOps<UnscaleCheckOp>());
    if (checks.size() != 1 || step.getOps<StepCountersOp>().empty()) {
      step.emitError("amp-data-parallel: @train_step needs one amp.unscale_check and the optimizer step; "
                     "run amp-loss-scaling and amp-optimizer first");
      return signalPassFailure();
    }
    UnscaleCheckOp check = checks.front();
    reduceGradients(check);
    reduceFoundInf(check);
    reduceLoss(step);
    module->setAttr(AmpDialect::kDataParallelAttr, DataParallelRecipeAttr::get(&getContext(), reducePrecision, 0));
  }

  // Buckets in the order the gradients become ready; each is reduced right after its last one.
  void reduceGradients(UnscaleCheckOp check) {
    Block* body = check->getBlock();
    SmallVector<unsigned> order;
    for (unsigned k = 0; k < check.getGrads().size(); ++k) order.push_back(k);
    auto position = [&](unsigned k) -> Operation* {
      Value g = check.getGrads()[k];
      return g.getDefiningOp() ? g.getDefiningOp() : &body->front();
    };
    std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
      Operation *pa = position(a), *pb = position(b);
      return pa != pb && pa->isBeforeInBlock(pb);
    });
    SmallVector<unsigned> bucket;
    int64_t bytes = 0;
    for (unsigned k : order) {
      if (!bucket.empty() && bytes + tensorBytes(check.getGrads()[k].getType()) > bucketBytes) {
        emitBucket(check, bucket);
        bucket.clear();
        bytes = 0;
      }
      bucket.push_back(k);
      bytes += tensorBytes(check.getGrads()[k].getType());
    }
    if (!bucket.empty()) emitBucket(check, bucket);
  }

  void emitBucket(UnscaleCheckOp check, ArrayRef<unsigned> bucket) {
    Operation* last = nullptr;
    for (unsigned k : bucket)
      if (Operation* def = check.getGrads()[k].getDefiningOp(); def && (!last || last->isBeforeInBlock(def))) last = def;
    OpBuilder b(check.getContext());
    b.setListener(&stamp);
    if (last) b.setInsertionPointAfter(last);
    else b.setInsertionPointToStart(check->getBlock());
    Location loc = NameLoc::get(StringAttr::get(check.getContext(), "amp.data_parallel"), check.getLoc());
    Type wire = typeOfPrecision(check.getContext(), reducePrecision);
    SmallVector<Value> values;
    for (unsigned k : bucket) {
      Value g = check.getGrads()[k];
      auto type = cast<RankedTensorType>(g.getType());
      values.push_back(type.getElementType() == wire ? g : b.create<CastOp>(loc, type.clone(wire), g).getResult());
    }
    auto reduce = b.create<AllReduceOp>(loc, ReduceKind::Mean, values);
    describe(reduce, reducePrecision,
             reducePrecision == Precision::F32
                 ? "gradient mean across ranks in f32, the master gradients' precision"
                 : "gradient mean across ranks, compressed (reduce-precision)");
    for (auto [i, k] : llvm::enumerate(bucket)) {
      Value g = check.getGrads()[k];
      Value r = reduce.getResult(i);
      if (r.getType() != g.getType()) r = b.create<CastOp>(loc, g.getType(), r);
      check->setOperand(k, r);
    }
  }

  void reduceFoundInf(UnscaleCheckOp check) {
    OpBuilder b(check.getContext());
    b.setListener(&stamp);
    b.setInsertionPointAfter(check);
    Location loc = NameLoc::get(StringAttr::get(check.getContext(), "amp.data_parallel"), check.getLoc());
    Value local = check.getFoundInf();
    auto reduce = b.create<AllReduceOp>(loc, ReduceKind::Max, ValueRange{local});
    describe(reduce, Precision::F32, "found_inf is the maximum over ranks, so every rank skips together");
    local.replaceAllUsesExcept(reduce.getResult(0), reduce);
  }

  void reduceLoss(func::FuncOp step) {
    Results out = Results::read(step);
    auto ret = cast<func::ReturnOp>(step.front().getTerminator());
    for (unsigned i = 0; i < out.values.size(); ++i) {
      auto n = out.attrs[i].getAs<StringAttr>(AmpDialect::kNameAttr);
      if (!n || n.getValue() != "loss") continue;
      OpBuilder b(ret);
      b.setListener(&stamp);
      Location loc = NameLoc::get(StringAttr::get(step.getContext(), "amp.data_parallel"), ret.getLoc());
      auto reduce = b.create<AllReduceOp>(loc, ReduceKind::Mean, ValueRange{out.values[i]});
      describe(reduce, Precision::F32, "the logged loss is the mean over ranks");
      out.values[i] = reduce.getResult(0);
    }
    out.write(step);
  }
};

}  // namespace
}  // namespace mlir::amp
