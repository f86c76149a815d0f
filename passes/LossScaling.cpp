// amp-loss-scaling: seeds @train_step's backward with the loss scale and inserts the fused
// unscale + non-finite check and (dynamic) the scale update (docs/training-ir.md).
#include <cstdint>

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

  // The recipe the options ask for, checked by #amp.loss_scaling's verifier (the one statement of
  // the ranges). Dynamic settings are checked whenever the mode may use them (dynamic, auto).
  FailureOr<LossScalingRecipeAttr> recipe(func::FuncOp f, ScalingKind kind) {
    Builder b(f.getContext());
    auto emitError = [&] { return f.emitError("amp-loss-scaling: "); };
    const bool dynamic = kind == ScalingKind::Dynamic, scaled = kind != ScalingKind::None;
    auto attr = LossScalingRecipeAttr::getChecked(
        emitError, f.getContext(), kind, scaled ? b.getF64FloatAttr(initScale) : FloatAttr(),
        dynamic ? b.getF64FloatAttr(growthFactor) : FloatAttr(), dynamic ? b.getF64FloatAttr(backoffFactor) : FloatAttr(),
        dynamic ? static_cast<int64_t>(growthInterval) : 0);
    if (!attr) return failure();
    return attr;
  }

  LogicalResult checkOptions(func::FuncOp f) {
    if (mode == LossScalingMode::Static) return recipe(f, ScalingKind::Static);
    if (mode != LossScalingMode::None) return recipe(f, ScalingKind::Dynamic);
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
    // The decided recipe, for the plan's training metadata.
    const ScalingKind kind = m == LossScalingMode::Dynamic ? ScalingKind::Dynamic
                             : m == LossScalingMode::Static ? ScalingKind::Static
                                                            : ScalingKind::None;
    FailureOr<LossScalingRecipeAttr> decided = recipe(f, kind);
    if (failed(decided)) return failure();
    f->getParentOp()->setAttr(AmpDialect::kLossScalingAttr, *decided);
    return success();
  }
};

}  // namespace
}  // namespace mlir::amp
