// amp-optimizer: consumes @train_step's gradients with clipping, counters, an LR schedule and
// one SGD/Adam/AdamW update per param, all guarded by found_inf; optional gradient accumulation
// over K micro-batches with an @accumulate entry (docs/training-ir.md).
#include "llvm/ADT/SetVector.h"
#include <cmath>
#include <string>

#include "ir/Origin.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"
#include "runtime/schema/Target.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPOPTIMIZERPASS
#include "passes/Passes.h.inc"

namespace {
using namespace train;

struct GradInfo {
  unsigned resultIdx;       // in the results of @train_step
  std::string param;        // the param's amp.name
  BlockArgument paramArg;   // the f32 master weight
};

struct AmpOptimizerPass : impl::AmpOptimizerPassBase<AmpOptimizerPass> {
  using AmpOptimizerPassBase::AmpOptimizerPassBase;

  double wd = 0.0;
  OptimizerRecipeAttr recipe;  // checked with the options, stamped on the module

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp f = findEntry(module, kTrainStep);
    if (!f) {
      module.emitError("amp-optimizer: no function with amp.entry = \"train_step\"; run "
                       "amp-autodiff (and amp-loss-scaling) first");
      return signalPassFailure();
    }
    if (failed(checkOptions(f)) || failed(rewrite(module, f))) return signalPassFailure();
  }

  LogicalResult checkOptions(func::FuncOp f) {
    auto bad = [&](const Twine& what) {
      return f.emitError("amp-optimizer: ") << what;
    };
    if (!(lr >= 0.0) || !std::isfinite(lr)) return bad("lr must be finite and >= 0");
    if (!(momentum >= 0.0) || !std::isfinite(momentum)) return bad("momentum must be finite and >= 0");
    if (nesterov && (kind != OptimizerKind::Sgd || momentum == 0.0))
      return bad("nesterov needs kind=sgd and momentum > 0");
    if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
      return bad("beta1 and beta2 must be in [0, 1)");
    if (!(eps > 0.0) || !std::isfinite(eps)) return bad("eps must be finite and > 0");
    if (!(clipGradNorm >= 0.0) || !std::isfinite(clipGradNorm))
      return bad("clip-grad-norm must be finite and >= 0 (0 = off)");
    if (warmup < 0) return bad("warmup must be >= 0");
    if (stateType != OptimizerStateType::F32 && kind == OptimizerKind::Sgd)
      return bad("state=bf16 keeps Adam's moments in bf16: it needs kind=adam or adamw");
    if (schedule == LrScheduleKind::Cosine && (totalSteps <= warmup || !(minLr >= 0.0 && minLr <= lr)))
      return bad("cosine needs total-steps > warmup and 0 <= min-lr <= lr");
    // The recipe's verifier holds the accumulation window's bounds (ir/Recipe.cpp).
    recipe = OptimizerRecipeAttr::getChecked([&] { return f.emitError("amp-optimizer: "); }, f.getContext(),
                                             static_cast<OptimizerKind>(kind),
                                             Builder(f.getContext()).getF64FloatAttr(lr),
                                             static_cast<int64_t>(accumulate));
    if (!recipe) return failure();
    wd = weightDecay < 0.0 ? (kind == OptimizerKind::AdamW ? 0.01 : 0.0) : static_cast<double>(weightDecay);
    if (!std::isfinite(wd)) return bad("weight-decay must be finite");
    return success();
  }

  LogicalResult rewrite(ModuleOp module, func::FuncOp f) {
    MLIRContext* ctx = f.getContext();
    if (findArg(f, kStep) || !f.getOps<StepCountersOp>().empty())
      return f.emitError("amp-optimizer: @train_step already has an optimizer (amp.step state)");
    if (stateType == OptimizerStateType::BF16) {
      auto attr = module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr);
      std::string error;
      auto target = ::amp::rt::Target::parse(attr ? attr.getValue().str() : "cpu", error);
      if (target && target->isCuda())
        return f.emitError("amp-optimizer: state=bf16 runs on cpu targets; the cuda device's multi-tensor Adam "
                           "keeps f32 moments");
    }

    // The gradients and their params.
    Results results = Results::read(f);
    SmallVector<GradInfo> grads;
    for (unsigned i = 0; i < results.values.size(); ++i) {
      auto of = results.attrs[i].getAs<StringAttr>(AmpDialect::kGradOfAttr);
      if (!of) continue;
      std::optional<unsigned> argIdx = findArg(f, of.getValue());
      if (!argIdx || argRole(f, *argIdx) != "param")
        return f.emitError("amp-optimizer: result #") << i << " is the gradient of '" << of.getValue()
                                                      << "', which is not a param of @train_step";
      grads.push_back({i, of.getValue().str(), f.getArgument(*argIdx)});
    }
    if (grads.empty()) return f.emitError("amp-optimizer: @train_step returns no amp.grad_of gradients");

    auto ret = cast<func::ReturnOp>(f.front().getTerminator());
    Location loc = NameLoc::get(StringAttr::get(ctx, "amp.optimizer"), ret.getLoc());
    OriginStamp stamp(Origin::Optimizer);
    auto scalarF32 = RankedTensorType::get({}, Float32Type::get(ctx));
    auto scalarI64 = RankedTensorType::get({}, IntegerType::get(ctx, 64));

    // The check: amp-loss-scaling's, or a check-only one so that every update is guarded.
    SmallVector<UnscaleCheckOp> checks(f.getOps<UnscaleCheckOp>());
    if (checks.size() > 1)
      return checks[1].emitError("amp-optimizer: @train_step has more than one amp.unscale_check");
    UnscaleCheckOp check = checks.empty() ? UnscaleCheckOp() : checks.front();
    if (!check) {
      OpBuilder b(ret);
      b.setListener(&stamp);
      SmallVector<Value> gs;
      for (const GradInfo& g : grads) gs.push_back(results.values[g.resultIdx]);
      check = b.create<UnscaleCheckOp>(loc, gs, Value());
      for (auto [k, g] : llvm::enumerate(grads)) results.values[g.resultIdx] = check.getUnscaled()[k];
      results.add(check.getFoundInf(), AmpDialect::kNameAttr, "found_inf");
      results.write(f);
    }
    for (const GradInfo& g : grads) {
      auto r = dyn_cast<OpResult>(results.values[g.resultIdx]);
      if (!r || r.getOwner() != check.getOperation())
        return f.emitError("amp-optimizer: the gradient of '")
               << g.param << "' is not a result of the step's amp.unscale_check";
    }
    Value found = check.getFoundInf();

    if (accumulate > 1 && failed(addAccumulation(module, f, grads, check))) return failure();
    results = Results::read(f);

    // Everything goes after the check and before the scale update (the last op).
    SmallVector<UpdateScaleOp> updates(f.getOps<UpdateScaleOp>());
    OpBuilder b(updates.empty() ? ret.getOperation() : updates.front().getOperation());
    b.setListener(&stamp);

    SmallVector<Value> gs;
    for (const GradInfo& g : grads) gs.push_back(results.values[g.resultIdx]);
    Value norm;
    if (clipGradNorm > 0.0) {
      norm = b.create<GlobalNormOp>(loc, scalarF32, gs);
      auto clip = b.create<ClipGradsOp>(loc, gs, norm, b.getF64FloatAttr(clipGradNorm));
      gs.assign(clip.getClipped().begin(), clip.getClipped().end());
    }

    BlockArgument step = addStateArg(f, scalarI64, kStep, zerosInit(ctx));
    BlockArgument skipped = addStateArg(f, scalarI64, kSkippedSteps, zerosInit(ctx));
    auto counters = b.create<StepCountersOp>(loc, scalarI64, scalarI64, step, skipped, found);
    // total-steps and min-lr only shape a cosine schedule; a constant one leaves the op's defaults.
    bool cosine = schedule == LrScheduleKind::Cosine;
    Value lrValue = b.create<LrScheduleOp>(
        loc, scalarF32, counters.getNewStep(), b.getAttr<LrScheduleKindAttr>(schedule), b.getF64FloatAttr(lr),
        b.getI64IntegerAttr(warmup), cosine ? b.getI64IntegerAttr(totalSteps) : IntegerAttr(),
        cosine ? b.getF64FloatAttr(minLr) : FloatAttr());

    // New results: the non-gradient ones, then counters, then each param and its moments.
    Results out;
    for (unsigned i = 0; i < results.values.size(); ++i)
      if (!results.attrs[i].get(AmpDialect::kGradOfAttr)) {
        out.values.push_back(results.values[i]);
        out.attrs.push_back(results.attrs[i]);
      }
    // Observability: the step's learning rate and (when clipping computes it) the unscaled norm.
    out.add(lrValue, AmpDialect::kNameAttr, "lr");
    if (norm) out.add(norm, AmpDialect::kNameAttr, "grad_norm");
    out.add(counters.getNewStep(), AmpDialect::kUpdatesAttr, kStep);
    out.add(counters.getNewSkipped(), AmpDialect::kUpdatesAttr, kSkippedSteps);

    for (auto [k, g] : llvm::enumerate(grads)) {
      Type pt = g.paramArg.getType();
      if (kind == OptimizerKind::Sgd) {
        Value buf;
        std::string bufName = g.param + ".momentum_buffer";
        if (momentum != 0.0) buf = addStateArg(f, pt, bufName, zerosInit(ctx));
        auto upd = b.create<SgdUpdateOp>(loc, g.paramArg, gs[k], lrValue, found, buf, /*scale=*/Value(),
                                         /*norm=*/Value(), b.getF64FloatAttr(momentum), b.getBoolAttr(nesterov),
                                         b.getF64FloatAttr(wd), /*max_norm=*/FloatAttr(), /*weight_copy=*/TypeAttr());
        out.add(upd.getNewParam(), AmpDialect::kUpdatesAttr, g.param);
        if (buf) out.add(upd.getNewMomentumBuffer(), AmpDialect::kUpdatesAttr, bufName);
      } else {
        std::string mName = g.param + ".exp_avg", vName = g.param + ".exp_avg_sq";
        // bf16 moments round stochastically, each update with its own stream (rounding_seed).
        const bool bf16State = stateType == OptimizerStateType::BF16;
        Type momentType = bf16State ? cast<RankedTensorType>(pt).clone(b.getBF16Type()) : pt;
        BlockArgument m = addStateArg(f, momentType, mName, zerosInit(ctx));
        BlockArgument v = addStateArg(f, momentType, vName, zerosInit(ctx));
        auto upd = b.create<AdamUpdateOp>(loc, g.paramArg, gs[k], m, v, counters.getNewStep(), lrValue, found,
                                          /*scale=*/Value(), /*norm=*/Value(), b.getF64FloatAttr(beta1),
                                          b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps), b.getF64FloatAttr(wd),
                                          b.getBoolAttr(kind == OptimizerKind::AdamW), /*max_norm=*/FloatAttr(),
                                          /*weight_copy=*/TypeAttr(),
                                          /*rounding_seed=*/bf16State ? b.getI64IntegerAttr(int64_t(k)) : IntegerAttr());
        out.add(upd.getNewParam(), AmpDialect::kUpdatesAttr, g.param);
        out.add(upd.getNewExpAvg(), AmpDialect::kUpdatesAttr, mName);
        out.add(upd.getNewExpAvgSq(), AmpDialect::kUpdatesAttr, vName);
      }
    }
    FailureOr<WeightCopyMode> copies = resolveWeightCopies(module);
    if (failed(copies)) return failure();
    if (*copies == WeightCopyMode::Stored) addWeightCopies(module, f, grads, out, b, loc);
    out.write(f);
    module->setAttr(AmpDialect::kOptimizerAttr, recipe);  // for the plan's training metadata
    return success();
  }

  // auto: a cpu GEMM either widens its operands anyway (no native bf16) or packs them into its own
  // blocked layout, so a stored copy only costs memory there; a cuda tensor-core GEMM reads the
  // copy as it is, and recasting would add a kernel per weight and use (docs/training-ir.md).
  FailureOr<WeightCopyMode> resolveWeightCopies(ModuleOp module) {
    if (weightCopies != WeightCopyMode::Auto) return WeightCopyMode(weightCopies);
    auto attr = module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr);
    std::string error;
    auto target = ::amp::rt::Target::parse(attr ? attr.getValue().str() : "cpu", error);
    if (!target) return module.emitError("amp-optimizer: weight-copies=auto: ") << error;
    return target->isCuda() ? WeightCopyMode::Stored : WeightCopyMode::Recast;
  }

  // Each param that autocast casts down is read through a low-precision copy: state
  // `<param>.<dtype>` (#amp.init<cast, from = param>), written by this step as the cast of the
  // updated master, so no forward re-casts the masters. A skipped step leaves the master, hence
  // its copy, bitwise unchanged. @accumulate reads the same copy.
  void addWeightCopies(ModuleOp module, func::FuncOp f, ArrayRef<GradInfo> grads, Results& out,
                       OpBuilder& b, Location loc) {
    MLIRContext* ctx = f.getContext();
    func::FuncOp acc = findEntry(module, kAccumulate);
    auto castsOf = [](Value param, RankedTensorType type) {
      SmallVector<CastOp> casts;
      for (Operation* user : param.getUsers())
        if (auto c = dyn_cast<CastOp>(user); c && c.getResult().getType() == type) casts.push_back(c);
      return casts;
    };
    for (const GradInfo& g : grads) {
      llvm::SetVector<Type> lowTypes;
      for (Operation* user : g.paramArg.getUsers())
        if (auto c = dyn_cast<CastOp>(user); c && isLowFloat(c.getResult().getType().getElementType()))
          lowTypes.insert(c.getResult().getType());
      std::optional<unsigned> updated = findResultIn(out, AmpDialect::kUpdatesAttr, g.param);
      if (!updated) continue;
      for (Type t : lowTypes) {
        auto type = cast<RankedTensorType>(t);
        std::string dtype;
        llvm::raw_string_ostream(dtype) << type.getElementType();
        std::string name = g.param + "." + dtype;
        auto init = InitAttr::get(ctx, "cast", llvm::APFloat(1.0), 0, g.param);
        BlockArgument copy = addStateArg(f, type, name, init);
        for (CastOp c : castsOf(g.paramArg, type)) {
          c.getResult().replaceAllUsesWith(copy);
          c.erase();
        }
        out.add(b.create<CastOp>(loc, type, out.values[*updated]), AmpDialect::kUpdatesAttr, name);
        if (std::optional<unsigned> idx = acc ? findArg(acc, g.param) : std::nullopt) {
          BlockArgument accCopy = addStateArg(acc, type, name, init);
          for (CastOp c : castsOf(acc.getArgument(*idx), type)) {
            c.getResult().replaceAllUsesWith(accCopy);
            c.erase();
          }
        }
      }
    }
  }

  static std::optional<unsigned> findResultIn(const Results& r, StringRef attr, StringRef value) {
    for (unsigned i = 0; i < r.values.size(); ++i)
      if (auto s = r.attrs[i].getAs<StringAttr>(attr); s && s.getValue() == value) return i;
    return std::nullopt;
  }

  // Gradient accumulation over K micro-batches. @accumulate (a clone of the step up to the
  // check) adds each micro-batch's scaled gradients to `<param>.grad_accum`; @train_step adds
  // the last micro-batch's, divides by K, and feeds that to the (single) unscale/check; it
  // returns zeroed accumulators. The loss scale is only read in @accumulate, so one scale holds
  // for the whole window and the scale update runs once, at its end.
  LogicalResult addAccumulation(ModuleOp module, func::FuncOp f, ArrayRef<GradInfo> grads,
                                UnscaleCheckOp check) {
    MLIRContext* ctx = f.getContext();
    if (SymbolTable(module).lookup("accumulate"))
      return f.emitError("amp-optimizer: accumulate > 1 but the module already has @accumulate");
    Location loc = NameLoc::get(StringAttr::get(ctx, "amp.accumulate"), check.getLoc());
    OriginStamp stamp(Origin::Accumulate);

    // @accumulate.
    func::FuncOp acc = f.clone();
    acc.setName("accumulate");
    acc->setAttr(AmpDialect::kEntryAttr, StringAttr::get(ctx, kAccumulate));
    module.insert(std::next(Block::iterator(f.getOperation())), acc);
    UnscaleCheckOp accCheck = *acc.getOps<UnscaleCheckOp>().begin();
    Results accOut;
    {
      Results old = Results::read(acc);
      // Each micro-batch's forward also updates the running statistics (buffers), as every
      // PyTorch forward in train mode does.
      auto updatesBuffer = [&](DictionaryAttr attrs) {
        auto target = attrs.getAs<StringAttr>(AmpDialect::kUpdatesAttr);
        for (unsigned a = 0; target && a < acc.getNumArguments(); ++a)
          if (argRole(acc, a) == "buffer" && argName(acc, a) == target.getValue()) return true;
        return false;
      };
      Results bufferUpdates;
      for (unsigned i = 0; i < old.values.size(); ++i) {
        Results& into = updatesBuffer(old.attrs[i]) ? bufferUpdates : accOut;
        auto n = old.attrs[i].getAs<StringAttr>(AmpDialect::kNameAttr);
        if ((n && n.getValue() == "loss") || &into == &bufferUpdates) {
          into.values.push_back(old.values[i]);
          into.attrs.push_back(old.attrs[i]);
        }
      }
      OpBuilder b(accCheck);
      b.setListener(&stamp);
      // The window's loss: each micro-batch adds its loss, @train_step returns the mean.
      auto scalar = RankedTensorType::get({}, Float32Type::get(ctx));
      for (unsigned i = 0, n = accOut.values.size(); i < n; ++i) {
        Value lossSum = addStateArg(acc, scalar, kLossSum, zerosInit(ctx));
        OpBuilder atEnd = OpBuilder::atBlockTerminator(&acc.front());
        atEnd.setListener(&stamp);
        accOut.add(atEnd.create<AddOp>(loc, lossSum, accOut.values[i]), AmpDialect::kUpdatesAttr, kLossSum);
      }
      for (auto [k, g] : llvm::enumerate(grads)) {
        Value raw = accCheck.getGrads()[k];
        std::string name = g.param + ".grad_accum";
        BlockArgument a = addStateArg(acc, raw.getType(), name, zerosInit(ctx));
        accOut.add(b.create<AddOp>(loc, a, raw), AmpDialect::kUpdatesAttr, name);
      }
      accOut.values.append(bufferUpdates.values);
      accOut.attrs.append(bufferUpdates.attrs);
      accOut.write(acc);
      for (Operation& op : llvm::make_early_inc_range(llvm::reverse(acc.front())))
        if (isa<UpdateScaleOp, UnscaleCheckOp>(op) && op.use_empty()) op.erase();
    }

    // @train_step: accum + last gradients, / K, into the check; accumulators back to zero.
    Results out = Results::read(f);
    OpBuilder b(check);
    b.setListener(&stamp);
    auto scalarF32 = RankedTensorType::get({}, Float32Type::get(ctx));
    Value kConst = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(scalarF32, llvm::ArrayRef<float>{static_cast<float>(accumulate)}));
    for (auto [k, g] : llvm::enumerate(grads)) {
      Value raw = check.getGrads()[k];
      auto type = cast<RankedTensorType>(raw.getType());
      std::string name = g.param + ".grad_accum";
      BlockArgument a = addStateArg(f, type, name, zerosInit(ctx));
      Value sum = b.create<AddOp>(loc, a, raw);
      Value mean = b.create<DivOp>(loc, sum, kConst);
      check->setOperand(k, mean);
      out.add(train::zerosLike(b, loc, type), AmpDialect::kUpdatesAttr, name);
    }
    if (std::optional<unsigned> lossIdx = findResult(f, AmpDialect::kNameAttr, "loss")) {
      OpBuilder atEnd = OpBuilder::atBlockTerminator(&f.front());
      atEnd.setListener(&stamp);
      BlockArgument lossSum = addStateArg(f, scalarF32, kLossSum, zerosInit(ctx));
      Value sum = atEnd.create<AddOp>(loc, lossSum, out.values[*lossIdx]);
      out.values[*lossIdx] = atEnd.create<DivOp>(loc, sum, kConst);
      out.add(zerosLike(atEnd, loc, scalarF32), AmpDialect::kUpdatesAttr, kLossSum);
    }
    out.write(f);
    return success();
  }
};

}  // namespace
}  // namespace mlir::amp
