// amp-verify: the mixed-precision correctness rules of docs/design.md as located diagnostics on the
// training entries (and the model, for the loss and policy rules).
#include <string>

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "ir/Precision.h"
#include "passes/Passes.h"
#include "passes/PrecisionPolicy.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPVERIFYPASS
#include "passes/Passes.h.inc"

namespace {
using namespace train;

std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto st = dyn_cast<ShapedType>(t)) t = st.getElementType();
  os << t;
  return s;
}

bool isF32(Type t) {
  if (auto st = dyn_cast<ShapedType>(t)) t = st.getElementType();
  return t.isF32();
}

// True when `v` depends on the loss scale (or the backward seed) along a path that does not pass
// through an amp.unscale_check or amp.grad_stats: a scaled gradient.
bool dependsOnScaleUnguarded(Value v, const llvm::DenseSet<Value>& scaleArgs) {
  llvm::SmallVector<Value> work = {v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (!seen.insert(cur).second) continue;
    if (scaleArgs.contains(cur)) return true;
    Operation* def = cur.getDefiningOp();
    if (!def || isa<UnscaleCheckOp, GradStatsOp>(def)) continue;
    for (Value operand : def->getOperands()) work.push_back(operand);
  }
  return false;
}

// Whether `found` is the found_inf of an amp.unscale_check (or of the amp.grad_stats that
// amp-fuse-grad-pipeline makes of it): directly, or through the amp.all_reduce max of a
// data-parallel step (the shared skip decision).
bool checkOfFoundInf(Value found) {
  auto r = dyn_cast_or_null<OpResult>(found);
  if (!r) return false;
  if (auto reduce = dyn_cast<AllReduceOp>(r.getOwner());
      reduce && reduce.getKind() == ReduceKind::Max && reduce.getValues().size() == 1)
    r = dyn_cast<OpResult>(reduce.getValues()[0]);
  if (!r) return false;
  if (auto check = dyn_cast<UnscaleCheckOp>(r.getOwner())) return check.getFoundInf() == r;
  if (auto stats = dyn_cast<GradStatsOp>(r.getOwner())) return stats.getFoundInf() == r;
  return false;
}

// Whether an amp.grad_stats reads `grad`: the update reading it then widens each element to f32
// and unscales it itself (amp-fuse-grad-pipeline), so the gradient is stored as computed.
bool readAsStored(Value grad) {
  return llvm::any_of(grad.getUsers(), [](Operation* user) { return isa<GradStatsOp>(user); });
}

// A rule amp-verify enforces. Its id is stable, like a compiler warning code: docs/design.md
// lists them, scripts may match them, and a retired id is never reused.
struct Rule {
  const char* id;
  int designRule;  // the numbered rule of docs/design.md it enforces
  bool isWarning = false;
};
constexpr Rule kMasterWeightNotF32{"AMP001", 1};
constexpr Rule kLowPrecisionGradient{"AMP002", 1};
constexpr Rule kPolicyDeniedLowPrecision{"AMP003", 2};
constexpr Rule kLossNotF32{"AMP004", 3};
constexpr Rule kF16WithoutLossScaling{"AMP005", 3, /*isWarning=*/true};
constexpr Rule kClipOnScaledGradients{"AMP006", 4};
constexpr Rule kStepOnScaledGradients{"AMP007", 4};
constexpr Rule kScaleUpdateNotOncePerStep{"AMP008", 4};
constexpr Rule kUnguardedUpdate{"AMP009", 5};
constexpr Rule kUnreducedUpdate{"AMP010", 9};

// "amp-verify: [AMPnnn] <message> (docs/design.md rule N)": the reference is appended as the
// diagnostic is reported, so no message can cite a rule other than its id's.
class RuleDiagnostic {
 public:
  RuleDiagnostic(InFlightDiagnostic diag, const Rule& rule) : diag(std::move(diag)), rule(rule) {
    this->diag << "amp-verify: [" << rule.id << "] ";
  }
  ~RuleDiagnostic() { diag << " (docs/design.md rule " << rule.designRule << ")"; }

  template <typename T>
  RuleDiagnostic& operator<<(T&& value) {
    diag << std::forward<T>(value);
    return *this;
  }

 private:
  InFlightDiagnostic diag;
  Rule rule;
};

struct AmpVerifyPass : impl::AmpVerifyPassBase<AmpVerifyPass> {
  using AmpVerifyPassBase::AmpVerifyPassBase;

  bool failedAny = false;
  std::optional<PrecisionPolicy> policyData;

  RuleDiagnostic report(Location loc, const Rule& rule) {
    if (rule.isWarning) return RuleDiagnostic(emitWarning(loc), rule);
    failedAny = true;
    return RuleDiagnostic(emitError(loc), rule);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    failedAny = false;
    if (failed(loadPolicy(module))) return signalPassFailure();
    for (auto f : module.getOps<func::FuncOp>()) {
      auto entry = f->getAttrOfType<StringAttr>(AmpDialect::kEntryAttr);
      if (!entry && !f.isPublic()) continue;  // private helpers are not models
      checkMasterWeights(f);
      checkLoss(f, static_cast<bool>(entry));
      checkPolicy(f);
      if (!entry) continue;
      checkOptimizerInputs(f);
      checkClipping(f);
      checkScaleUpdate(f, entry.getValue());
      if (entry.getValue() == kTrainStep) checkF16WithoutScaling(f);
    }
    checkDataParallel(module);
    if (failedAny) signalPassFailure();
    markAllAnalysesPreserved();
  }

  LogicalResult loadPolicy(ModuleOp module) {
    bool bf16 = getPrecision(module) == Precision::BF16;
    std::string err;
    auto loaded = PrecisionPolicy::load(module.getContext(), policy, bf16, err);
    if (failed(loaded)) {
      module.emitError("amp-verify: cannot load precision policy '") << policy << "': " << err;
      return failure();
    }
    policyData = std::move(*loaded);
    return success();
  }

  // Rule 1: params are f32 master weights.
  void checkMasterWeights(func::FuncOp f) {
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (argRole(f, i) == "param" && !isF32(f.getArgument(i).getType()))
        report(f.getArgument(i).getLoc(), kMasterWeightNotF32)
            << "param '" << argName(f, i) << "' is a " << typeStr(f.getArgument(i).getType())
            << " master weight; master weights must be f32: only compute runs in low precision";
  }

  // Rule 3: the loss is computed in f32.
  void checkLoss(func::FuncOp f, bool isEntry) {
    std::optional<unsigned> lossIdx =
        isEntry ? findResult(f, AmpDialect::kNameAttr, "loss")
                : (f.getNumResults() ? std::optional<unsigned>(0) : std::nullopt);
    if (lossIdx) {
      Value loss = f.front().getTerminator()->getOperand(*lossIdx);
      if (!isF32(loss.getType())) {
        report(loss.getLoc(), kLossNotF32) << "the loss (result #" << *lossIdx << ") is "
                                           << typeStr(loss.getType())
                                           << "; the loss must be computed in f32";
      } else if (auto cast = loss.getDefiningOp<CastOp>(); cast && !isF32(cast.getInput().getType())) {
        report(cast.getLoc(), kLossNotF32) << "the loss is computed in "
                                           << typeStr(cast.getInput().getType())
                                           << " and only then cast to f32; the loss must be "
                                              "computed in f32";
      }
    }
    f.walk([&](Operation* op) {
      if (!isa<CrossEntropyOp, MseLossOp>(op)) return;
      Type t = op->getResult(0).getType();
      if (!isF32(t))
        report(op->getLoc(), kLossNotF32) << "loss op '" << op->getName() << "' runs in "
                                          << typeStr(t) << "; every loss runs in f32";
    });
  }

  // Rule 1 (second half) and rule 5: gradients reaching the optimizer are f32 and unscaled,
  // and every update is guarded by the found_inf of an unscale check.
  void checkOptimizerInputs(func::FuncOp f) {
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      auto of = f.getResultAttrOfType<StringAttr>(i, AmpDialect::kGradOfAttr);
      Value g = f.front().getTerminator()->getOperand(i);
      if (of && !isF32(g.getType()))
        report(g.getLoc(), kLowPrecisionGradient)
            << "the gradient of '" << of.getValue() << "' (result #" << i << ") is "
            << typeStr(g.getType()) << "; the optimizer computes in f32: a gradient reaches it as f32, or as "
            << "stored by its GEMM and widened exactly by the update itself (amp-fuse-grad-pipeline)";
    }
    llvm::DenseSet<Value> scaleArgs = scaleArguments(f);
    f.walk([&](Operation* op) {
      Value grad, found;
      bool unscales = false;
      if (auto s = dyn_cast<SgdUpdateOp>(op)) {
        grad = s.getGrad();
        found = s.getFoundInf();
        unscales = static_cast<bool>(s.getScale());
      } else if (auto a = dyn_cast<AdamUpdateOp>(op)) {
        grad = a.getGrad();
        found = a.getFoundInf();
        unscales = static_cast<bool>(a.getScale());
      } else if (auto c = dyn_cast<StepCountersOp>(op)) {
        found = c.getFoundInf();
      } else {
        return;
      }
      if (grad && !isF32(grad.getType()) && !readAsStored(grad))
        report(op->getLoc(), kLowPrecisionGradient)
            << "a " << typeStr(grad.getType())
            << " gradient reaches the optimizer update; the optimizer computes in f32: a gradient reaches it as "
               "f32, or as stored by its GEMM and widened exactly by the update itself (amp-fuse-grad-pipeline)";
      if (grad && !unscales && dependsOnScaleUnguarded(grad, scaleArgs))
        report(op->getLoc(), kStepOnScaledGradients)
            << "the optimizer steps on scaled gradients (the gradient depends on the loss scale "
               "without passing through amp.unscale_check); step after unscaling";
      if (!checkOfFoundInf(found))
        report(op->getLoc(), kUnguardedUpdate)
            << "'" << op->getName()
            << "' is not guarded by the found_inf of an amp.unscale_check; a step with a non-finite "
               "gradient must change no state";
    });
  }

  static llvm::DenseSet<Value> scaleArguments(func::FuncOp f) {
    llvm::DenseSet<Value> s;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (argName(f, i) == kLossScale || argName(f, i) == kGradSeed) s.insert(f.getArgument(i));
    return s;
  }

  // Rule 9: in a data-parallel step, every param and state update depends on this rank's data only
  // through amp.all_reduce results (else the replicas diverge). Rank-local values: the inputs,
  // the labels, and the state @accumulate updates (each rank's gradient sums of the window).
  void checkDataParallel(ModuleOp module) {
    if (!module->hasAttr(AmpDialect::kDataParallelAttr)) return;
    func::FuncOp step = findEntry(module, kTrainStep);
    if (!step) return;
    llvm::DenseSet<StringRef> accumulated;
    if (func::FuncOp acc = findEntry(module, kAccumulate))
      for (unsigned i = 0; i < acc.getNumResults(); ++i)
        if (auto u = acc.getResultAttrOfType<StringAttr>(i, AmpDialect::kUpdatesAttr)) accumulated.insert(u.getValue());
    llvm::DenseSet<Value> local;
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (argRole(step, i) == "input" || argRole(step, i) == "label" || accumulated.contains(argName(step, i)))
        local.insert(step.getArgument(i));
    auto isLocal = [&](Value v) { return local.contains(v); };
    for (Operation& op : step.front()) {
      if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op)) continue;
      if (auto check = dyn_cast<UnscaleCheckOp>(op)) {
        // Each unscaled gradient depends on its own gradient and the scale; found_inf on all.
        bool scaleLocal = check.getScale() && isLocal(check.getScale());
        for (auto [g, u] : llvm::zip(check.getGrads(), check.getUnscaled()))
          if (scaleLocal || isLocal(g)) local.insert(u);
        if (llvm::any_of(op.getOperands(), isLocal)) local.insert(check.getFoundInf());
        continue;
      }
      if (llvm::any_of(op.getOperands(), isLocal))
        for (Value r : op.getResults()) local.insert(r);
    }
    Operation* ret = step.front().getTerminator();
    for (unsigned i = 0; i < step.getNumResults(); ++i) {
      auto updates = step.getResultAttrOfType<StringAttr>(i, AmpDialect::kUpdatesAttr);
      Value v = ret->getOperand(i);
      if (!updates || !local.contains(v)) continue;
      Operation* def = v.getDefiningOp();
      report(def ? def->getLoc() : ret->getLoc(), kUnreducedUpdate)
          << "in a data-parallel step the update of '" << updates.getValue() << "' (result #" << i
          << ") depends on this rank's data without passing through amp.all_reduce (a gradient or "
             "found_inf that was not reduced); the replicas would diverge";
    }
  }

  // Rule 4: clipping sees unscaled gradients.
  void checkClipping(func::FuncOp f) {
    llvm::DenseSet<Value> scaleArgs = scaleArguments(f);
    if (scaleArgs.empty()) return;
    f.walk([&](Operation* op) {
      if (!isa<GlobalNormOp, ClipGradsOp>(op)) return;
      for (auto [k, v] : llvm::enumerate(op->getOperands())) {
        if (!dependsOnScaleUnguarded(v, scaleArgs)) continue;
        report(op->getLoc(), kClipOnScaledGradients)
            << "clipping sees scaled gradients (operand #" << k
            << " depends on the loss scale without passing through amp.unscale_check); clip after "
               "unscaling";
        return;
      }
    });
  }

  // Rule 4: the scale update runs exactly once per optimizer step, and never in @accumulate.
  void checkScaleUpdate(func::FuncOp f, StringRef entry) {
    SmallVector<UpdateScaleOp> updates(f.getOps<UpdateScaleOp>());
    if (entry == kAccumulate) {
      for (UpdateScaleOp u : updates)
        report(u.getLoc(), kScaleUpdateNotOncePerStep)
            << "the scale update runs in @accumulate; the scale must stay fixed over the "
               "accumulation window and be updated once, at its end";
      return;
    }
    if (entry != kTrainStep) return;
    for (size_t i = 1; i < updates.size(); ++i)
      report(updates[i].getLoc(), kScaleUpdateNotOncePerStep)
          << "the scale update runs " << updates.size()
          << " times per step; it must run exactly once, across all optimizers";
    std::optional<unsigned> tracker = findArg(f, kGrowthTracker);
    if (tracker && updates.empty()) {
      report(f.getArgument(*tracker).getLoc(), kScaleUpdateNotOncePerStep)
          << "dynamic loss scaling (state '" << kGrowthTracker
          << "') but no amp.update_scale: the scale update is missing";
      return;
    }
    if (updates.size() != 1) return;
    UpdateScaleOp u = updates.front();
    auto writtenBack = [&](Value v, StringRef name) {
      Operation* ret = f.front().getTerminator();
      for (OpOperand& use : v.getUses())
        if (use.getOwner() == ret)
          if (auto s = f.getResultAttrOfType<StringAttr>(use.getOperandNumber(), AmpDialect::kUpdatesAttr);
              s && s.getValue() == name)
            return true;
      return false;
    };
    if (!writtenBack(u.getNewScale(), kLossScale) || !writtenBack(u.getNewGrowthTracker(), kGrowthTracker))
      report(u.getLoc(), kScaleUpdateNotOncePerStep)
          << "the scale update's results are not returned with amp.updates = \"" << kLossScale
          << "\" and \"" << kGrowthTracker << "\": the scale update is lost";
    if (!checkOfFoundInf(u.getFoundInf()))
      report(u.getLoc(), kScaleUpdateNotOncePerStep)
          << "the scale update does not read the found_inf of an amp.unscale_check; it must follow "
             "the unscale and inf check";
  }

  // Rule 3: fp16 training uses loss scaling (a warning: the user may have chosen none).
  void checkF16WithoutScaling(func::FuncOp f) {
    bool f16 = false, scaled = false;
    f.walk([&](Operation* op) {
      for (Type t : op->getResultTypes()) f16 |= isF16(t);
      if (auto c = dyn_cast<UnscaleCheckOp>(op)) scaled |= static_cast<bool>(c.getScale());
      if (auto c = dyn_cast<GradStatsOp>(op)) scaled |= static_cast<bool>(c.getScale());
    });
    if (f16 && !scaled)
      report(f.getLoc(), kF16WithoutLossScaling)
          << "f16 training without loss scaling: small gradients flush to zero in f16; run "
             "amp-loss-scaling with mode=dynamic";
  }

  // Rule 2: no op runs in low precision when the policy denies it (user overrides exempt).
  static bool isUserForced(Operation* op) {
    auto reason = op->getAttrOfType<ReasonAttr>(AmpDialect::kReasonAttr);
    return reason ? reason.getKind() == ReasonKind::Override : static_cast<bool>(op->getAttr(AmpDialect::kPrecisionAttr));
  }

  void checkPolicy(func::FuncOp f) {
    if (!policyData) return;
    // A backward op inherits its forward op's precision (amp-autodiff): when the user forced that
    // op, its backward ops carry the override too. The backward reason names only the forward
    // op's name, so an op name forced anywhere in the function exempts its backward ops; a forward
    // op of that name that runs low without an override is still reported on its own.
    llvm::StringSet<> forcedOps;
    f.walk([&](Operation* op) {
      if (isUserForced(op)) forcedOps.insert(op->getName().getStringRef());
    });
    f.walk([&](Operation* op) {
      if (!isa_and_nonnull<AmpDialect>(op->getDialect()) || isa<CastOp, ConstantOp>(op)) return;
      Type low;
      for (Type t : op->getResultTypes())
        if (isLowFloat(t)) low = t;
      if (!low) return;
      auto reason = op->getAttrOfType<ReasonAttr>(AmpDialect::kReasonAttr);
      if (isUserForced(op)) return;
      if (reason && reason.getKind() == ReasonKind::Backward && forcedOps.contains(reason.getSource())) return;
      StringRef name = op->getName().getStringRef();
      // A backward op runs in the precision of the forward op it differentiates
      // (docs/training-ir.md), so the policy's decision for that op is the one to check: the bias
      // gradient of a bf16 amp.linear is a bf16 reduce_sum (f32 accumulation, like PyTorch's
      // addmm backward), not a forward sum that autocast should have run in f32.
      StringRef judged = name;
      if (reason && reason.getKind() == ReasonKind::Backward &&
          RegisteredOperationName::lookup(reason.getSource(), op->getContext()))
        judged = reason.getSource();
      if (!policyData->isListed(judged)) return;
      Category c = policyData->categoryOf(judged);
      bool denied = c == Category::Fp32 || c == Category::Fp32SetOptDtype ||
                    c == Category::Fp32AppendDtype || c == Category::Banned || c == Category::Deny;
      if (!denied) return;
      if (judged != name)
        report(op->getLoc(), kPolicyDeniedLowPrecision)
            << "'" << name << "' (backward of '" << judged << "') runs in " << typeStr(low)
            << " but the '" << policyData->name() << "' policy puts '" << judged << "' in "
            << categoryName(c) << " (f32); numerically sensitive ops run in f32";
      else
        report(op->getLoc(), kPolicyDeniedLowPrecision)
            << "'" << name << "' runs in " << typeStr(low) << " but the '" << policyData->name()
            << "' policy puts it in " << categoryName(c)
            << " (f32); numerically sensitive ops run in f32; force it with an override if intended";
    });
  }
};

}  // namespace
}  // namespace mlir::amp
