// amp-autocast: decides the precision of every op from a policy (PyTorch per-op cast policies or
// TensorFlow allow/infer/deny/clear painting), applies overrides, rewrites op types and inserts
// the minimal casts: one per (value, type), only where the two ends of an edge differ.
#include <functional>

#include "ir/AmpOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "ir/Precision.h"
#include "passes/Passes.h"
#include "passes/PrecisionPolicy.h"
#include "runtime/schema/Target.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPAUTOCASTPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;

namespace {


bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}
Type elementOf(Type t) { return cast<ShapedType>(t).getElementType(); }
Type withElement(Type t, Type elem) { return cast<RankedTensorType>(t).clone(elem); }

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string describeOp(Operation* op) {
  return "'" + op->getName().getStringRef().str() + "' at " + locationName(op->getLoc());
}

// Ops whose precision the pass decides: amp compute ops (not casts, not constants).
bool isComputeOp(Operation* op) {
  return isa_and_nonnull<AmpDialect>(op->getDialect()) && !isa<CastOp, ConstantOp>(op);
}

// Whether autocast retypes float operand/result `index` of `op`: every one, except the per-channel
// values amp.batch_norm keeps in f32 whatever its input's precision (scale, bias and the running
// statistics, as PyTorch's cuDNN path and TensorFlow's FusedBatchNormV3 with U = float do).
bool followsPrecision(Operation* op, unsigned index) { return !isa<BatchNormOp>(op) || index == 0; }

bool hasFloatValues(Operation* op) {
  return llvm::any_of(op->getOperandTypes(), isFloatTensor) ||
         llvm::any_of(op->getResultTypes(), isFloatTensor);
}

// An annotation written by an earlier run of this pass (not a user's request).
bool isPassAnnotation(Operation* op) {
  auto reason = op->getAttrOfType<ReasonAttr>(AmpDialect::kReasonAttr);
  return reason && reason.getKind() != ReasonKind::Override;
}

struct Decision {
  Type compute;  // element type of the op's float operands and results; null: as declared
  ReasonAttr reason;
};

// A resolved override for one op.
struct Override {
  ForcedPrecision forced;
  std::string why;
};

struct AmpAutocastPass : mlir::amp::impl::AmpAutocastPassBase<AmpAutocastPass> {
  using AmpAutocastPassBase::AmpAutocastPassBase;

  Statistic numCasts{this, "casts-inserted", "Casts inserted"};
  Statistic numLowOps{this, "low-precision-ops", "Ops running in f16 or bf16"};

  // Per-run state.
  std::optional<PrecisionPolicy> policyData;
  Type low;          // f16 or bf16; f32 when autocast is off
  bool off = false;  // dtype=f32
  SmallVector<PatternOverride> patterns;
  DenseMap<Operation*, SmallVector<Type>> origOperands, origResults;
  DenseMap<Operation*, std::optional<Override>> overrideOf;

  void runOnOperation() override;
  LogicalResult resolveLowType(ModuleOp module, std::string& why);
  FailureOr<std::optional<Override>> resolveOverride(Operation* op);
  Type forcedType(ForcedPrecision f) {
    MLIRContext* ctx = &getContext();
    switch (f) {
      case ForcedPrecision::F32: return Float32Type::get(ctx);
      case ForcedPrecision::F16: return Float16Type::get(ctx);
      case ForcedPrecision::BF16: return BFloat16Type::get(ctx);
      case ForcedPrecision::Low: return low;
      case ForcedPrecision::Off: return Type();
    }
    return Type();
  }
  ReasonAttr overrideReason(const Override& o, Type t) {
    return ReasonAttr::override(&getContext(), o.why + "; runs " + (t ? "in " + typeName(t) : std::string("as declared")));
  }
  ReasonAttr autocastOff() { return ReasonAttr::off(&getContext(), "runs as declared"); }
  FailureOr<Decision> decidePyTorch(Operation* op);
  LogicalResult paintTensorFlow(func::FuncOp func, DenseMap<Operation*, Decision>& out);
  LogicalResult rewrite(func::FuncOp func, function_ref<FailureOr<Decision>(Operation*)> decide);
};

//===----------------------------------------------------------------------===//
// dtype and overrides
//===----------------------------------------------------------------------===//

LogicalResult AmpAutocastPass::resolveLowType(ModuleOp module, std::string& why) {
  MLIRContext* ctx = &getContext();
  // auto reads the target below; the others name the type.
  switch (dtype) {
    case AutocastDtype::F16:
      low = Float16Type::get(ctx);
      why = "dtype=f16";
      return success();
    case AutocastDtype::BF16:
      low = BFloat16Type::get(ctx);
      why = "dtype=bf16";
      return success();
    case AutocastDtype::F32:
      low = Float32Type::get(ctx);
      off = true;
      why = "dtype=f32: autocast off";
      return success();
    case AutocastDtype::Auto:
      break;
  }
  std::string tgt = target;
  if (tgt.empty())
    if (auto attr = module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr))
      tgt = attr.getValue().str();
  // No target named: the compiling machine's cpu, as ampc defaults it, so amp-opt and ampc
  // decide alike; recorded, since the decision depends on it.
  if (tgt.empty()) {
    tgt = "cpu";
    module->setAttr(AmpDialect::kTargetAttr, StringAttr::get(ctx, tgt));
  }
  std::string error, reason;
  auto parsed = ::amp::rt::Target::parse(tgt, error);
  if (!parsed) return module.emitError("amp-autocast: ") << error;
  const ::amp::rt::AutoDtype picked = ::amp::rt::autoDtypeFor(*parsed, reason);
  if (picked == ::amp::rt::AutoDtype::F32) {
    low = Float32Type::get(ctx);
    off = true;
    why = "dtype=auto -> f32: autocast off (" + reason + ")";
  } else {
    low = picked == ::amp::rt::AutoDtype::BF16 ? Type(BFloat16Type::get(ctx)) : Type(Float16Type::get(ctx));
    why = "dtype=auto -> " + typeName(low) + " (" + reason + ")";
  }
  return success();
}

FailureOr<std::optional<Override>> AmpAutocastPass::resolveOverride(Operation* op) {
  // 1. Attributes on the op itself.
  std::optional<Precision> prec = getPrecision(op);
  if (prec && isPassAnnotation(op)) prec.reset();
  auto enabled = op->getAttrOfType<BoolAttr>(AmpDialect::kAutocastAttr);
  if (prec && enabled && !enabled.getValue())
    return op->emitError("conflicting overrides: amp.precision = \"")
           << stringifyPrecision(*prec) << "\" asks for " << stringifyPrecision(*prec)
           << " but amp.autocast = false disables autocast for this op";
  if (prec)
    return std::optional<Override>(
        Override{*parseForced(stringifyPrecision(*prec)),
                 ("amp.precision = \"" + stringifyPrecision(*prec) + "\" on the op").str()});
  if (enabled && !enabled.getValue())
    return std::optional<Override>(Override{ForcedPrecision::Off, "amp.autocast = false on the op"});

  // 2. Pattern overrides (policy file and pass options). Matches must agree.
  const PatternOverride* match = nullptr;
  for (const PatternOverride& p : patterns) {
    if (!p.matches(op)) continue;
    if (match && match->precision != p.precision)
      return op->emitError("conflicting overrides for ")
             << describeOp(op) << ": " << match->describe() << " and " << p.describe();
    if (!match) match = &p;
  }
  if (match) return std::optional<Override>(Override{match->precision, match->describe()});

  // 3. Scopes: the nearest enclosing op with amp.autocast (function, module), unless the op
  // re-enables autocast for itself.
  if (enabled && enabled.getValue()) return std::optional<Override>();
  for (Operation* p = op->getParentOp(); p; p = p->getParentOp()) {
    auto scope = p->getAttrOfType<BoolAttr>(AmpDialect::kAutocastAttr);
    if (!scope) continue;
    if (scope.getValue()) break;
    std::string where = "the module";
    if (auto f = dyn_cast<func::FuncOp>(p)) where = ("func @" + f.getSymName()).str();
    return std::optional<Override>(
        Override{ForcedPrecision::Off, "amp.autocast = false on " + where + " (autocast disabled)"});
  }
  return std::optional<Override>();
}

//===----------------------------------------------------------------------===//
// PyTorch: per op, from the op's category and its current input types
//===----------------------------------------------------------------------===//

FailureOr<Decision> AmpAutocastPass::decidePyTorch(Operation* op) {
  MLIRContext* ctx = &getContext();
  Type f32 = Float32Type::get(ctx);
  StringRef name = op->getName().getStringRef();
  Category cat = policyData->categoryOf(name);
  auto because = [&](const std::string& detail) {
    return ReasonAttr::get(ctx, "pytorch", categoryName(cat), "", detail);
  };
  std::string lowName = typeName(low);

  SmallVector<Value> floats;
  for (OpOperand& operand : op->getOpOperands())
    if (isFloatTensor(operand.get().getType()) && followsPrecision(op, operand.getOperandNumber()))
      floats.push_back(operand.get());

  switch (cat) {
    case Category::LowerPrecisionFp:
      return Decision{low, because("matmul/conv class, runs in " + lowName + " (float inputs cast to " + lowName + ")")};
    case Category::Fp32:
      return Decision{f32, because("numerically sensitive, runs in f32 (inputs cast to f32)")};
    case Category::Fp32SetOptDtype:
    case Category::Fp32AppendDtype:
      return Decision{f32, because("computes in f32 and returns f32 (PyTorch passes dtype=float32)")};
    case Category::Banned:
      return op->emitError("'") << name << "' is banned under autocast by policy '"
                                << policyData->name() << "'";
    case Category::Promote: {
      // at::autocast::prioritize: start from the low dtype; f32 wins; another low dtype is an
      // error.
      Type t = low;
      for (Value v : floats) {
        Type e = elementOf(v.getType());
        if (e == f32 || t == f32) {
          t = f32;
        } else if (e != t) {
          return op->emitError("'")
                 << name << "' (promote) mixes " << typeName(e) << " and " << typeName(t)
                 << " inputs under " << lowName
                 << " autocast; PyTorch rejects this too (insert an explicit amp.cast)";
        }
      }
      return Decision{t, because("widest input type is " + typeName(t))};
    }
    default: break;
  }
  // Fall-through: the op's own (native) type promotion. Dimensioned tensors outrank rank-0
  // tensors of the same category, as in PyTorch's result_type.
  if (floats.empty()) return Decision{Type(), because("no float inputs, runs as declared")};
  bool anyDimensioned =
      llvm::any_of(floats, [](Value v) { return cast<ShapedType>(v.getType()).getRank() > 0; });
  Type t;
  SmallVector<Type> seen;
  bool ignoredScalar = false;
  for (Value v : floats) {
    Type e = elementOf(v.getType());
    if (anyDimensioned && cast<ShapedType>(v.getType()).getRank() == 0) continue;
    if (!llvm::is_contained(seen, e)) seen.push_back(e);
    // f16 with f32, bf16 with f32, or f16 with bf16: all promote to f32.
    t = !t ? e : (t == e ? t : f32);
  }
  for (Value v : floats)
    if (cast<ShapedType>(v.getType()).getRank() == 0 && anyDimensioned && elementOf(v.getType()) != t)
      ignoredScalar = true;
  std::string detail;
  if (seen.size() > 1)
    detail = "inputs " + typeName(seen[0]) + " and " + typeName(seen[1]) + " promote to f32";
  else
    detail = "runs in its input dtype " + typeName(t);
  if (ignoredScalar) detail += " (rank-0 inputs follow the dimensioned ones, as in PyTorch)";
  return Decision{t, because("not autocast, " + detail)};
}

//===----------------------------------------------------------------------===//
// TensorFlow: grappler's painting (auto_mixed_precision.cc), over ops joined by float edges
//===----------------------------------------------------------------------===//

LogicalResult AmpAutocastPass::paintTensorFlow(func::FuncOp func,
                                               DenseMap<Operation*, Decision>& out) {
  MLIRContext* ctx = &getContext();
  Type f32 = Float32Type::get(ctx);
  std::string lowName = typeName(low);
  bool bf16Mode = low.isBF16();

  SmallVector<Operation*> nodes;
  DenseMap<Operation*, int> index;
  func.walk([&](Operation* op) {
    if (isa_and_nonnull<AmpDialect>(op->getDialect()) && hasFloatValues(op)) {
      index[op] = nodes.size();
      nodes.push_back(op);
    }
  });
  int n = nodes.size();
  SmallVector<SmallVector<int>> fanin(n), fanout(n);
  for (int i = 0; i < n; ++i)
    for (OpOperand& operand : nodes[i]->getOpOperands()) {
      Value v = operand.get();
      if (!isFloatTensor(v.getType()) || !followsPrecision(nodes[i], operand.getOperandNumber())) continue;
      auto it = index.find(v.getDefiningOp());
      if (it == index.end()) continue;
      fanin[i].push_back(it->second);
      fanout[it->second].push_back(i);
    }

  // Category of each vertex (with overrides) and whether it may be painted.
  SmallVector<Category> cat(n, Category::Unlisted);
  SmallVector<bool> processable(n, false);
  SmallVector<std::string> why(n);
  for (int i = 0; i < n; ++i) {
    Operation* op = nodes[i];
    if (!isComputeOp(op)) continue;
    cat[i] = policyData->categoryOf(op->getName().getStringRef());
    bool allF32 = llvm::all_of(origOperands[op], [&](Type t) {
                    return !isFloatTensor(t) || elementOf(t) == f32;
                  }) &&
                  llvm::all_of(origResults[op], [&](Type t) {
                    return !isFloatTensor(t) || elementOf(t) == f32;
                  });
    auto& ov = overrideOf[op];
    processable[i] = allF32 && !off;
    if (ov) {
      Type t = forcedType(ov->forced);
      if (t && t == low && !off) cat[i] = Category::Allow;
      else if (t == f32) cat[i] = Category::Deny;
      else processable[i] = false;
    }
  }
  auto isCat = [&](int i, Category c) { return cat[i] == c; };
  auto dfs = [&](int root, bool in, bool outs, function_ref<bool(int)> enter,
                 function_ref<void(int)> visit) {
    SmallVector<int> stack{root};
    llvm::DenseSet<int> seen{root};
    while (!stack.empty()) {
      int v = stack.pop_back_val();
      visit(v);
      auto push = [&](ArrayRef<int> next) {
        for (int m : next)
          if (!seen.count(m) && enter(m)) {
            seen.insert(m);
            stack.push_back(m);
          }
      };
      if (in) push(fanin[v]);
      if (outs) push(fanout[v]);
    }
  };

  llvm::DenseSet<int> allow, deny;
  // 1. Allow seeds.
  for (int i = 0; i < n; ++i)
    if (processable[i] && isCat(i, Category::Allow)) {
      allow.insert(i);
      why[i] = "allow-list op";
    }
  if (!allow.empty() && !off) {
    // 2a. Vertices upstream of deny/infer roots through clear ops.
    llvm::DenseSet<int> upstreamOfDenyOrInfer;
    for (int r = 0; r < n; ++r) {
      if (!isCat(r, Category::Deny) && !isCat(r, Category::Infer)) continue;
      dfs(r, true, false,
          [&](int i) { return !upstreamOfDenyOrInfer.count(i) && isCat(i, Category::Clear); },
          [&](int i) { upstreamOfDenyOrInfer.insert(i); });
    }
    // 2b. Deny spreads forward from deny roots through those vertices.
    for (int r = 0; r < n; ++r) {
      if (deny.count(r) || !isCat(r, Category::Deny)) continue;
      dfs(r, false, true,
          [&](int i) { return !deny.count(i) && upstreamOfDenyOrInfer.count(i); },
          [&](int i) {
            if (!deny.insert(i).second) return;
            if (i != r)
              why[i] = "downstream of deny op " + describeOp(nodes[r]) +
                       " on a path to an infer/deny op";
            else if (why[i].empty())
              why[i] = "deny-list op";
          });
    }
    // 4. Fill between allow ops: forward from allow ops through clear/infer ops, then back.
    llvm::DenseSet<int> downstreamOfAllow;
    DenseMap<int, int> reachedFrom;
    for (int r = 0; r < n; ++r) {
      if (!processable[r] || !isCat(r, Category::Allow)) continue;
      dfs(r, false, true,
          [&](int i) {
            return !downstreamOfAllow.count(i) && !isCat(i, Category::Allow) && !deny.count(i) &&
                   processable[i] && (isCat(i, Category::Clear) || isCat(i, Category::Infer));
          },
          [&](int i) {
            if (downstreamOfAllow.insert(i).second) reachedFrom.try_emplace(i, r);
          });
    }
    llvm::DenseSet<int> upstreamOfAllow;
    for (int r = 0; r < n; ++r) {
      if (!allow.count(r)) continue;
      dfs(r, true, false,
          [&](int i) { return !upstreamOfAllow.count(i) && downstreamOfAllow.count(i); },
          [&](int i) {
            if (!upstreamOfAllow.insert(i).second) return;
            if (allow.insert(i).second)
              why[i] = "between allow ops " + describeOp(nodes[reachedFrom.lookup(i)]) + " and " +
                       describeOp(nodes[r]);
          });
    }
    // 5. bf16 only: an infer op with an allow input and no deny input follows allow.
    if (bf16Mode)
      for (int i = 0; i < n; ++i) {
        if (!processable[i] || allow.count(i) || deny.count(i) || !isCat(i, Category::Infer))
          continue;
        int from = -1;
        for (int f : fanin[i]) {
          if (deny.count(f)) {
            from = -1;
            break;
          }
          if (allow.count(f) && from < 0) from = f;
        }
        if (from >= 0) {
          allow.insert(i);
          why[i] = "bf16 mode: an input comes from allow op " + describeOp(nodes[from]) +
                   " and none from a deny op";
        }
      }
    // 6. Allow spreads through connected clear ops (both directions).
    for (int r = 0; r < n; ++r) {
      if (!allow.count(r)) continue;
      dfs(r, true, true,
          [&](int i) {
            return !allow.count(i) && !deny.count(i) && processable[i] &&
                   isCat(i, Category::Clear);
          },
          [&](int i) {
            if (i != r && allow.insert(i).second)
              why[i] = "connected through clear ops to allow op " + describeOp(nodes[r]);
          });
    }
  }

  // Decisions.
  std::string style = "tensorflow";
  for (int i = 0; i < n; ++i) {
    Operation* op = nodes[i];
    if (!isComputeOp(op)) continue;
    auto& ov = overrideOf[op];
    Category listed = policyData->categoryOf(op->getName().getStringRef());
    auto because = [&](StringRef rule, const std::string& detail) {
      return ReasonAttr::get(ctx, style, categoryName(listed), rule, detail);
    };
    if (ov) {
      Type t = forcedType(ov->forced);
      out[op] = Decision{t, overrideReason(*ov, t)};
      continue;
    }
    if (off) {
      out[op] = Decision{Type(), autocastOff()};
      continue;
    }
    if (!processable[i]) {
      out[op] = Decision{Type(), because("", "its values are not f32 in the input (user-typed), runs as declared")};
      continue;
    }
    if (allow.count(i)) {
      StringRef painted = listed == Category::Allow ? "" : "painted allow";
      out[op] = Decision{low, because(painted, why[i] + "; runs in " + lowName)};
      continue;
    }
    if (deny.count(i)) {
      StringRef painted = listed == Category::Deny ? "" : "painted deny";
      out[op] = Decision{f32, because(painted, why[i] + "; runs in f32")};
      continue;
    }
    std::string detail;
    switch (listed) {
      case Category::Infer: detail = "not between allow ops, stays f32"; break;
      case Category::Clear: detail = "not connected to an allow op, stays f32"; break;
      case Category::Unlisted: detail = "on no list, never painted, stays f32"; break;
      case Category::Allow: detail = "no allow op to seed painting, stays f32"; break;
      default: detail = "stays f32"; break;
    }
    if (allow.empty() && listed != Category::Unlisted)
      detail = "no allow op in the function, nothing is painted; stays f32";
    out[op] = Decision{f32, because("", detail)};
  }

  // 9. Cast absorption: an explicit cast to f32 whose consumers all run low now casts to low.
  if (!off)
    for (int i = 0; i < n; ++i) {
      auto castOp = dyn_cast<CastOp>(nodes[i]);
      if (!castOp || !elementOf(castOp.getType()).isF32() || castOp->use_empty()) continue;
      bool allLow = llvm::all_of(castOp->getUsers(), [&](Operation* u) {
        auto it = index.find(u);
        return it != index.end() && allow.count(it->second) && !overrideOf[u];
      });
      if (!allLow) continue;
      castOp->getResult(0).setType(withElement(castOp.getType(), low));
      castOp->setAttr(AmpDialect::kReasonAttr,
                      ReasonAttr::get(ctx, "tensorflow", "", "explicit cast absorbed",
                                      "all its consumers run in " + lowName + ", so it casts to " + lowName));
    }
  return success();
}

//===----------------------------------------------------------------------===//
// Rewrite: apply decisions in program order, insert shared casts.
//===----------------------------------------------------------------------===//

LogicalResult AmpAutocastPass::rewrite(func::FuncOp func,
                                       function_ref<FailureOr<Decision>(Operation*)> decide) {
  MLIRContext* ctx = &getContext();
  // One cast per (value, type) in a block, placed before its first user in program order so it
  // dominates every later user: the weight-cast cache by construction.
  DenseMap<std::tuple<Value, Type, Block*>, Value> cache;
  auto castTo = [&](Value v, Type type, Operation* user) -> Value {
    auto key = std::make_tuple(v, type, user->getBlock());
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    OpBuilder b(user);
    auto c = b.create<CastOp>(v.getLoc(), type, v);
    c->setAttr(AmpDialect::kAutocastInsertedAttr, UnitAttr::get(ctx));
    ++numCasts;
    cache[key] = c.getResult();
    return c.getResult();
  };

  for (Block& block : func.getBody()) {
    for (Operation& op : llvm::make_early_inc_range(block)) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // Results keep their declared types (the loss stays f32).
        auto types = func.getFunctionType().getResults();
        for (OpOperand& operand : ret->getOpOperands()) {
          Type want = types[operand.getOperandNumber()];
          Type have = operand.get().getType();
          if (have != want && isFloatTensor(have) && isFloatTensor(want))
            operand.set(castTo(operand.get(), want, ret));
        }
        continue;
      }
      if (auto c = dyn_cast<CastOp>(op)) {
        // Explicit casts are kept; later users needing the same (value, type) share them.
        cache.try_emplace(std::make_tuple(c.getInput(), c.getType(), &block), c.getResult());
        continue;
      }
      if (!isComputeOp(&op)) continue;
      auto decision = decide(&op);
      if (failed(decision)) return failure();
      Type compute = decision->compute;
      auto& origIn = origOperands[&op];
      auto& origOut = origResults[&op];
      for (OpOperand& operand : op.getOpOperands()) {
        Type have = operand.get().getType();
        if (!isFloatTensor(have)) continue;  // integer and i1 values are never cast
        if (!followsPrecision(&op, operand.getOperandNumber())) continue;
        Type want = compute ? withElement(have, compute) : origIn[operand.getOperandNumber()];
        if (have != want) operand.set(castTo(operand.get(), want, &op));
      }
      Type precision = compute;
      for (OpResult r : op.getResults()) {
        if (!isFloatTensor(r.getType()) || !followsPrecision(&op, r.getResultNumber())) continue;
        Type t = compute ? withElement(r.getType(), compute) : origOut[r.getResultNumber()];
        r.setType(t);
        precision = elementOf(t);
      }
      if (!precision)
        for (Value v : op.getOperands())
          if (isFloatTensor(v.getType())) precision = elementOf(v.getType());
      if (precision) {
        setPrecision(&op, *precisionOfType(precision));
        if (!precision.isF32()) ++numLowOps;
      }
      // Ops with no float values are outside TensorFlow-style painting and get no reason.
      if (decision->reason) op.setAttr(AmpDialect::kReasonAttr, decision->reason);
    }
  }
  return success();
}

void AmpAutocastPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext* ctx = &getContext();
  origOperands.clear();
  origResults.clear();
  overrideOf.clear();
  patterns.clear();
  off = false;

  std::string dtypeWhy;
  if (failed(resolveLowType(module, dtypeWhy))) return signalPassFailure();
  std::string error;
  auto loaded = PrecisionPolicy::load(ctx, policy, low.isBF16(), error);
  if (failed(loaded)) {
    module.emitError("amp-autocast: ") << error;
    return signalPassFailure();
  }
  policyData = std::move(*loaded);
  for (const PatternOverride& p : policyData->overrides()) patterns.push_back(p);
  for (const std::string& spec : overrides) {
    auto p = parseOverrideSpec(spec, "option override=" + spec, error);
    if (failed(p)) {
      module.emitError("amp-autocast: ") << error;
      return signalPassFailure();
    }
    patterns.push_back(std::move(*p));
  }
  if (!target.empty())
    module->setAttr(AmpDialect::kTargetAttr, StringAttr::get(ctx, target));

  // Record declared types and resolve overrides before anything changes.
  bool ok = true;
  module.walk([&](Operation* op) {
    if (!isa_and_nonnull<AmpDialect>(op->getDialect())) return;
    if (!isComputeOp(op)) {
      if (getPrecision(op) && !isPassAnnotation(op)) {
        op->emitError("amp.precision has no effect on '")
            << op->getName() << "' (casts and constants keep their types; cast the value instead)";
        ok = false;
      }
      return;
    }
    origOperands[op] = llvm::to_vector(op->getOperandTypes());
    origResults[op] = llvm::to_vector(op->getResultTypes());
    auto ov = resolveOverride(op);
    if (failed(ov)) {
      ok = false;
      return;
    }
    overrideOf[op] = *ov;
  });
  if (!ok) return signalPassFailure();

  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal()) continue;
    LogicalResult result = success();
    if (policyData->style() == PolicyStyle::TensorFlow) {
      DenseMap<Operation*, Decision> decisions;
      if (failed(paintTensorFlow(func, decisions))) return signalPassFailure();
      result = rewrite(func, [&](Operation* op) -> FailureOr<Decision> { return decisions[op]; });
    } else {
      result = rewrite(func, [&](Operation* op) -> FailureOr<Decision> {
        auto& ov = overrideOf[op];
        if (ov) {
          Type t = forcedType(ov->forced);
          return Decision{t, overrideReason(*ov, t)};
        }
        if (off) return Decision{Type(), autocastOff()};
        return decidePyTorch(op);
      });
    }
    if (failed(result)) return signalPassFailure();
  }
  setPrecision(module, *precisionOfType(low));
  module->setAttr(AmpDialect::kReasonAttr,
                  ReasonAttr::pass(ctx, "autocast", ("policy " + policyData->name() + ", " + dtypeWhy).str()));
}

}  // namespace
