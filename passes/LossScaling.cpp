// amp-loss-scaling: seeds @train_step's backward with the loss scale and inserts the fused
// unscale + non-finite check and (dynamic) the scale update (docs/training-ir.md).
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/Origin.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPLOSSSCALINGPASS
#include "passes/Passes.h.inc"

namespace {
using namespace train;

struct AmpLossScalingPass : impl::AmpLossScalingPassBase<AmpLossScalingPass> {
  using AmpLossScalingPassBase::AmpLossScalingPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp f = findEntry(module, kTrainStep);
    if (!f) {
      module.emitError("amp-loss-scaling: no function with amp.entry = \"train_step\"; run "
                       "amp-autodiff first");
      return signalPassFailure();
    }
    if (failed(checkOptions(f)) || failed(rewrite(f))) return signalPassFailure();
  }

  LogicalResult checkOptions(func::FuncOp f) {
    if (!(initScale > 0.0) || !std::isfinite(static_cast<float>(initScale)))
      return f.emitError("amp-loss-scaling: init-scale must be positive and finite in f32, got ")
             << initScale;
    if (!(growthFactor > 1.0) || !std::isfinite(growthFactor))
      return f.emitError("amp-loss-scaling: growth-factor must be finite and > 1, got ") << growthFactor;
    if (!(backoffFactor > 0.0 && backoffFactor < 1.0))
      return f.emitError("amp-loss-scaling: backoff-factor must be in (0, 1), got ") << backoffFactor;
    if (growthInterval < 1 || growthInterval > std::numeric_limits<int32_t>::max())
      return f.emitError("amp-loss-scaling: growth-interval must be in [1, 2^31 - 1], got ")
             << growthInterval;
    return success();
  }

  // auto: dynamic when the step computes anything in f16 (bf16 and f32 need no scaling).
  static bool computesInF16(func::FuncOp f) {
    bool found = false;
    f.walk([&](Operation* op) {
      for (Type t : op->getResultTypes()) found |= isF16(t);
      for (Type t : op->getOperandTypes()) found |= isF16(t);
    });
    for (Type t : f.getArgumentTypes()) found |= isF16(t);
    return found;
  }

  LogicalResult rewrite(func::FuncOp f) {
    MLIRContext* ctx = f.getContext();
    if (!f.getOps<UnscaleCheckOp>().empty() || findArg(f, kLossScale))
      return f.emitError("amp-loss-scaling: @train_step already has loss scaling (an "
                         "amp.unscale_check or an amp.loss_scale state); run the pass once");
    std::optional<unsigned> seedIdx = findArg(f, kGradSeed);
    if (!seedIdx)
      return f.emitError("amp-loss-scaling: @train_step has no '") << kGradSeed
             << "' argument (the backward seed amp-autodiff adds)";
    BlockArgument seed = f.getArgument(*seedIdx);
    auto scalarF32 = RankedTensorType::get({}, Float32Type::get(ctx));
    if (seed.getType() != scalarF32)
      return f.emitError("amp-loss-scaling: the backward seed must be tensor<f32>, got ")
             << seed.getType();

    LossScalingMode m = mode;
    if (m == LossScalingMode::Auto) m = computesInF16(f) ? LossScalingMode::Dynamic : LossScalingMode::None;

    Results results = Results::read(f);
    SmallVector<unsigned> gradIdx;
    SmallVector<Value> grads;
    for (unsigned i = 0; i < results.values.size(); ++i)
      if (results.attrs[i].get(AmpDialect::kGradOfAttr)) {
        gradIdx.push_back(i);
        grads.push_back(results.values[i]);
      }
    if (grads.empty())
      return f.emitError("amp-loss-scaling: @train_step returns no amp.grad_of gradients");

    auto ret = cast<func::ReturnOp>(f.front().getTerminator());
    OriginStamp stamp(Origin::LossScaling);
    OpBuilder b(ret);
    b.setListener(&stamp);
    Location loc = NameLoc::get(StringAttr::get(ctx, "amp.loss_scaling"), ret.getLoc());
    Value scale;
    if (m == LossScalingMode::None) {
      // Seed 1.0: the backward is unscaled; the check still guards the step.
      OpBuilder eb = OpBuilder::atBlockBegin(&f.front());
      eb.setListener(&stamp);
      Value one = eb.create<ConstantOp>(
          loc, DenseElementsAttr::get(scalarF32, llvm::ArrayRef<float>{1.0f}));
      seed.replaceAllUsesWith(one);
      f.eraseArgument(*seedIdx);
    } else {
      f.setArgAttrs(*seedIdx, stateAttrs(ctx, kLossScale, constantInit(ctx, initScale)));
      scale = seed;
    }
    auto check = b.create<UnscaleCheckOp>(loc, grads, scale);
    for (auto [k, i] : llvm::enumerate(gradIdx)) results.values[i] = check.getUnscaled()[k];
    results.add(check.getFoundInf(), AmpDialect::kNameAttr, "found_inf");

    if (m == LossScalingMode::Dynamic) {
      BlockArgument tracker = addStateArg(f, RankedTensorType::get({}, IntegerType::get(ctx, 32)),
                                          kGrowthTracker, zerosInit(ctx));
      auto upd = b.create<UpdateScaleOp>(loc, scalarF32, tracker.getType(), scale, tracker, check.getFoundInf(),
                                         b.getF64FloatAttr(growthFactor),
                                         b.getF64FloatAttr(backoffFactor),
                                         b.getI64IntegerAttr(growthInterval));
      results.add(upd.getNewScale(), AmpDialect::kUpdatesAttr, kLossScale);
      results.add(upd.getNewGrowthTracker(), AmpDialect::kUpdatesAttr, kGrowthTracker);
    }
    results.write(f);
    return success();
  }
};

}  // namespace
}  // namespace mlir::amp
