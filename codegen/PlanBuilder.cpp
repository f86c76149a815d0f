#include "codegen/PlanBuilder.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "runtime/plan/MemoryPlan.h"

#include "codegen/RecipeMetadata.h"
#include "ir/AmpOps.h"
#include "ir/ModelConvention.h"
#include "ir/Origin.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/MemoryPlan.h"

using namespace mlir;
using namespace mlir::amp;
namespace rt = ::amp::rt;

namespace {

std::optional<rt::DType> toDType(Type t) {
  if (t.isF32()) return rt::DType::F32;
  if (t.isF16()) return rt::DType::F16;
  if (t.isBF16()) return rt::DType::BF16;
  if (t.isFloat8E4M3FN()) return rt::DType::F8E4M3FN;
  if (t.isFloat8E5M2()) return rt::DType::F8E5M2;
  if (t.isInteger(64)) return rt::DType::I64;
  if (t.isInteger(32)) return rt::DType::I32;
  if (t.isInteger(1)) return rt::DType::Bool;
  return std::nullopt;
}

std::string locString(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
            std::to_string(file.getColumn()));
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto s = locString(inner); !s.empty()) return s;
  if (auto name = dyn_cast<NameLoc>(loc)) return locString(name.getChildLoc());
  return "";
}

FailureOr<rt::Tensor> toTensor(Operation* op, ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  auto dtype = toDType(type.getElementType());
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dtype || !dense)
    return op->emitError("codegen: only dense constants of f32/f16/bf16/i32/i64/i1 are supported");
  rt::Tensor t(*dtype, rt::Shape(type.getShape().begin(), type.getShape().end()));
  int64_t i = 0;
  if (isa<FloatType>(type.getElementType())) {
    for (APFloat v : dense.getValues<APFloat>())
      rt::storeFromF32(*dtype, t.data(), i++, static_cast<float>(v.convertToDouble()));
  } else {
    for (APInt v : dense.getValues<APInt>()) {
      int64_t x = type.getElementType().isInteger(1) ? v.getZExtValue() : v.getSExtValue();
      switch (*dtype) {
        case rt::DType::I64: t.as<int64_t>()[i] = x; break;
        case rt::DType::I32: t.as<int32_t>()[i] = static_cast<int32_t>(x); break;
        default: t.as<uint8_t>()[i] = x != 0; break;
      }
      ++i;
    }
  }
  return t;
}

// The plan spells an enum attribute as its keyword, the string the runtime reads ("gt", "tanh").
std::optional<StringRef> enumKeyword(Attribute a) {
  return llvm::TypeSwitch<Attribute, std::optional<StringRef>>(a)
      .Case<ComparePredicateAttr, GeluApproximationAttr, LinearActivationAttr, LrScheduleKindAttr, ReduceKindAttr,
            GemmEpilogueKindAttr>(
          [](auto e) { return stringifyEnum(e.getValue()); })
      .Default([](Attribute) { return std::nullopt; });
}

LogicalResult convertAttr(Operation* op, NamedAttribute named, rt::AttrMap& attrs) {
  StringRef name = named.getName().strref();
  Attribute a = named.getValue();
  if (name.starts_with("amp.") || name == "operandSegmentSizes") return success();
  if (auto i = dyn_cast<IntegerAttr>(a)) {
    if (i.getType().isInteger(1)) attrs.set(name.str(), i.getValue().getBoolValue());
    else attrs.set(name.str(), static_cast<int64_t>(i.getValue().getSExtValue()));
  } else if (auto f = dyn_cast<FloatAttr>(a)) {
    attrs.set(name.str(), f.getValueAsDouble());
  } else if (auto s = dyn_cast<StringAttr>(a)) {
    attrs.set(name.str(), s.getValue().str());
  } else if (auto keyword = enumKeyword(a)) {
    attrs.set(name.str(), keyword->str());
  } else if (auto t = dyn_cast<TypeAttr>(a)) {  // a fused update's weight_copy: "bf16"
    std::string spelled;
    llvm::raw_string_ostream os(spelled);
    os << t.getValue();
    attrs.set(name.str(), spelled);
  } else if (isa<UnitAttr>(a)) {
    attrs.set(name.str(), true);
  } else if (auto arr = dyn_cast<DenseI64ArrayAttr>(a)) {
    attrs.set(name.str(), std::vector<int64_t>(arr.asArrayRef().begin(), arr.asArrayRef().end()));
  } else if (auto e = dyn_cast<ElementsAttr>(a)) {
    auto t = toTensor(op, e);
    if (failed(t)) return failure();
    attrs.set(name.str(), std::move(*t));
  } else {
    return op->emitError("codegen: attribute '") << name << "' of kind " << a
                                                 << " has no plan encoding";
  }
  return success();
}

}  // namespace

namespace {

// Lowers one function into an entry point of `plan`, sharing argument buffers by name.
struct EntryLowering {
  rt::Plan& plan;
  llvm::StringMap<int32_t>& named;  // amp.name -> buffer id (arguments of every entry)

  FailureOr<int32_t> addBuffer(Value v, rt::BufferDesc desc) {
    auto type = cast<RankedTensorType>(v.getType());
    auto dtype = toDType(type.getElementType());
    if (!dtype) return mlir::emitError(v.getLoc(), "codegen: unsupported element type ") << type;
    desc.dtype = *dtype;
    desc.shape.assign(type.getShape().begin(), type.getShape().end());
    int32_t id = static_cast<int32_t>(plan.buffers.size());
    plan.buffers.push_back(std::move(desc));
    return id;
  }

  // An amp.init's stored values (dense or dense_resource, f32) as a runtime tensor.
  static std::shared_ptr<const rt::Tensor> storedValues(ElementsAttr values) {
    auto type = cast<ShapedType>(values.getType());
    auto tensor = std::make_shared<rt::Tensor>(rt::DType::F32, rt::Shape(type.getShape().begin(), type.getShape().end()));
    float* out = tensor->as<float>();
    if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(values)) {
      std::optional<ArrayRef<float>> data = resource.tryGetAsArrayRef();
      if (!data || static_cast<int64_t>(data->size()) != tensor->numel()) return nullptr;
      std::copy(data->begin(), data->end(), out);
      return tensor;
    }
    auto dense = dyn_cast<DenseElementsAttr>(values);
    if (!dense) return nullptr;
    int64_t k = 0;
    for (float v : dense.getValues<float>()) out[k++] = v;  // a splat repeats its value
    return tensor;
  }

  FailureOr<int32_t> bindArgument(func::FuncOp f, unsigned i) {
    rt::BufferDesc desc;
    desc.name = getArgName(f, i).str();
    switch (getArgRole(f, i)) {
      case ArgRole::Param: desc.kind = rt::BufferKind::Param; break;
      case ArgRole::Input: desc.kind = rt::BufferKind::Input; break;
      case ArgRole::Label: desc.kind = rt::BufferKind::Label; break;
      case ArgRole::State: desc.kind = rt::BufferKind::State; break;
      // A model's buffer (batch_norm's running statistics) is persistent state: every entry
      // shares it by name, the train step writes it back, checkpoints carry it.
      case ArgRole::Buffer: desc.kind = rt::BufferKind::State; break;
    }
    if (auto init = f.getArgAttrOfType<InitAttr>(i, AmpDialect::kInitAttr))
      desc.init = rt::InitSpec{init.getKind().str(), init.getScale().convertToDouble(), init.getSeed(),
                               init.getFrom().str()};
    if (auto values = f.getArgAttrOfType<ElementsAttr>(i, AmpDialect::kInitAttr)) {
      auto stored = storedValues(values);
      if (!stored)
        return mlir::emitError(f.getArgument(i).getLoc(), "codegen: the initial values of '")
               << desc.name << "' are not available (an elided dense_resource blob?)";
      desc.init = rt::InitSpec{"stored", 1.0, 0, "", std::move(stored)};
    }
    if (auto of = f.getArgAttrOfType<StringAttr>(i, AmpDialect::kShardOfAttr)) desc.shardOf = of.getValue().str();
    Value arg = f.getArgument(i);
    auto it = named.find(desc.name);
    if (it == named.end()) {
      std::string name = desc.name;
      auto id = addBuffer(arg, std::move(desc));
      if (failed(id)) return failure();
      named[name] = *id;
      return *id;
    }
    const rt::BufferDesc& existing = plan.buffers[it->second];
    auto type = cast<RankedTensorType>(arg.getType());
    if (existing.kind != desc.kind || toDType(type.getElementType()) != existing.dtype ||
        rt::Shape(type.getShape().begin(), type.getShape().end()) != existing.shape)
      return mlir::emitError(arg.getLoc(), "codegen: argument '")
             << desc.name << "' of '" << f.getSymName()
             << "' differs in role or type from the buffer of the same name in another entry";
    return it->second;
  }

  // The region of an amp.fused op as the step's body over local values (docs/plan-format.md).
  LogicalResult lowerBody(FusedOp fused, rt::PlanStep& step) {
    llvm::DenseMap<Value, int32_t> local;
    auto addLocal = [&](Value v) -> LogicalResult {
      auto type = cast<RankedTensorType>(v.getType());
      auto dtype = toDType(type.getElementType());
      if (!dtype) return mlir::emitError(v.getLoc(), "codegen: unsupported element type ") << type;
      local[v] = static_cast<int32_t>(step.locals.size());
      step.locals.push_back({*dtype, rt::Shape(type.getShape().begin(), type.getShape().end())});
      return success();
    };
    Block& block = fused.getBody().front();
    for (BlockArgument arg : block.getArguments())
      if (failed(addLocal(arg))) return failure();
    for (Operation& inner : block) {
      if (auto yield = dyn_cast<YieldOp>(inner)) {
        for (Value v : yield.getValues()) step.yields.push_back(local.lookup(v));
        continue;
      }
      rt::PlanStep b;
      b.op = inner.getName().getStringRef().str();
      b.code = rt::opCodeOf(b.op);
      b.kind = rt::stepKindOf(b.op);
      b.loc = locString(inner.getLoc());
      for (Value v : inner.getOperands()) b.operands.push_back(local.lookup(v));
      for (NamedAttribute attr : inner.getAttrDictionary())
        if (failed(convertAttr(&inner, attr, b.attrs))) return failure();
      for (Value r : inner.getResults()) {
        if (failed(addLocal(r))) return failure();
        b.results.push_back(local.lookup(r));
      }
      step.body.push_back(std::move(b));
    }
    return success();
  }

  LogicalResult lower(func::FuncOp f, StringRef entryName) {
    llvm::DenseMap<Value, int32_t> ids;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto id = bindArgument(f, i);
      if (failed(id)) return failure();
      ids[f.getArgument(i)] = *id;
    }
    rt::EntryPoint entry;
    entry.name = entryName.str();
    // Step phases for --check-numerics: a training entry's forward ends with the op computing its
    // loss; the backward follows (gradients and their unscale/check and clipping); the update
    // starts with the optimizer's step counters. The model itself (eval) is all forward.
    Operation* lossOp = nullptr;
    if (f->hasAttr(AmpDialect::kEntryAttr)) {
      auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
      unsigned lossIdx = 0;
      for (unsigned r = 0; r < f.getNumResults(); ++r)
        if (auto n = f.getResultAttrOfType<StringAttr>(r, AmpDialect::kNameAttr); n && n.getValue() == "loss")
          lossIdx = r;
      if (lossIdx < ret.getNumOperands()) lossOp = ret.getOperand(lossIdx).getDefiningOp();
      // The returned loss may be the model's loss seen through what the training passes put
      // after it: the window mean of accumulation ((loss_sum + loss) / K) and the mean over ranks,
      // known by their amp.origin. Those come after the backward pass; the forward ends at the
      // model's loss op.
      auto wrapsLoss = [](Operation* op) {
        std::optional<Origin> origin = getOrigin(op);
        return origin == Origin::Accumulate || origin == Origin::DataParallel;
      };
      while (lossOp && wrapsLoss(lossOp)) {
        Operation* inner = nullptr;
        for (Value operand : lossOp->getOperands())
          if (Operation* def = operand.getDefiningOp(); def && !isa<ConstantOp>(def)) inner = def;
        lossOp = inner;
      }
    }
    const char* phase = "forward";
    for (Operation& op : f.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          unsigned r = static_cast<unsigned>(i);
          if (auto target = f.getResultAttrOfType<StringAttr>(r, AmpDialect::kUpdatesAttr)) {
            auto it = named.find(target.getValue());
            if (it == named.end() || (plan.buffers[it->second].kind != rt::BufferKind::Param &&
                                      plan.buffers[it->second].kind != rt::BufferKind::State))
              return f.emitError("codegen: result #")
                     << r << " updates '" << target.getValue() << "', which is not a param or state argument";
            entry.updates.emplace_back(ids.lookup(v), it->second);
            continue;
          }
          std::string name = r == 0 ? "loss" : "result" + std::to_string(r);
          if (auto n = f.getResultAttrOfType<StringAttr>(r, AmpDialect::kNameAttr))
            name = n.getValue().str();
          else if (auto g = f.getResultAttrOfType<StringAttr>(r, AmpDialect::kGradOfAttr))
            name = "grad:" + g.getValue().str();
          entry.results.push_back(ids.lookup(v));
          entry.resultNames.push_back(name);
        }
        continue;
      }
      if (isa<StepCountersOp>(op)) phase = "update";
      rt::PlanStep step;
      step.op = op.getName().getStringRef().str();
      step.code = rt::opCodeOf(step.op);
      step.kind = rt::stepKindOf(step.op);
      step.loc = locString(op.getLoc());
      step.phase = phase;
      if (&op == lossOp) phase = "backward";
      for (Value v : op.getOperands()) step.operands.push_back(ids.lookup(v));
      if (auto fused = dyn_cast<FusedOp>(op))
        if (failed(lowerBody(fused, step))) return failure();
      for (NamedAttribute attr : op.getAttrDictionary())
        if (failed(convertAttr(&op, attr, step.attrs))) return failure();
      // The plan keeps no operand segment sizes: a fused update says whether it unscales (whether
      // it clips is whether it has max_norm), so runtime/plan/UpdateLayout.h can place operands.
      if (auto stats = dyn_cast<GradStatsOp>(op)) {
        step.attrs.set("unscales", static_cast<bool>(stats.getScale()));  // a scalar grad is no scale
      } else if (auto sgd = dyn_cast<SgdUpdateOp>(op)) {
        step.attrs.set("unscales", static_cast<bool>(sgd.getScale()));
      } else if (auto adam = dyn_cast<AdamUpdateOp>(op)) {
        step.attrs.set("unscales", static_cast<bool>(adam.getScale()));
      } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
        step.attrs.set("has_weight", static_cast<bool>(ln.getWeight()));
        step.attrs.set("has_bias", static_cast<bool>(ln.getBias()));
      } else if (auto rms = dyn_cast<RmsNormOp>(op)) {
        step.attrs.set("has_weight", static_cast<bool>(rms.getWeight()));
      } else if (isa<MaxPool2DOp, AvgPool2DOp>(op) && !step.attrs.has("stride")) {
        // The stride defaults to the kernel: write it out so executors need no op knowledge.
        if (auto kernel = op.getAttrOfType<DenseI64ArrayAttr>("kernel"))
          step.attrs.set("stride", std::vector<int64_t>(kernel.asArrayRef().begin(), kernel.asArrayRef().end()));
      }
      if (auto slice = dyn_cast<SliceOp>(op); slice && !step.attrs.has("strides"))
        step.attrs.set("strides", std::vector<int64_t>(slice.getStarts().size(), 1));
      for (Value r : op.getResults()) {
        rt::BufferDesc desc;
        desc.name = entryName.str() + ".t" + std::to_string(plan.buffers.size());
        auto id = addBuffer(r, std::move(desc));
        if (failed(id)) return failure();
        ids[r] = *id;
        step.results.push_back(*id);
      }
      entry.steps.push_back(std::move(step));
    }
    plan.entries.push_back(std::move(entry));
    return success();
  }
};

// The IR's operations were allocated by many threads (the pass manager's), so their memory goes
// back to those threads' malloc arenas, where the plan (built on this thread) cannot reuse it.
void releaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

FailureOr<rt::Plan> mlir::amp::buildPlan(ModuleOp module, bool eraseLoweredFunctions) {
  rt::Plan plan;
  llvm::StringMap<int32_t> named;
  EntryLowering lowering{plan, named};
  std::string modelName;
  llvm::StringSet<> entryNames;
  for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (!f.isPublic()) continue;
    if (failed(verifyModel(f))) return failure();
    auto entryAttr = f->getAttrOfType<StringAttr>(AmpDialect::kEntryAttr);
    StringRef entry = entryAttr ? entryAttr.getValue() : StringRef("eval");
    if (!entryAttr) {
      if (!modelName.empty())
        return module.emitError("codegen: the module has more than one model function ('")
               << modelName << "' and '" << f.getSymName() << "'); other entry points need an amp.entry attribute";
      modelName = f.getSymName().str();
    }
    if (!entryNames.insert(entry).second)
      return f.emitError("codegen: a second function for entry point '") << entry << "'";
    if (failed(lowering.lower(f, entry))) return failure();
    if (eraseLoweredFunctions) {
      f.erase();
      releaseFreedMemory();
    }
  }
  if (modelName.empty()) return module.emitError("codegen: the module has no public model function");
  plan.metadata.emplace_back("model", modelName);
  if (auto target = module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr))
    plan.metadata.emplace_back("target", target.getValue().str());
  for (auto& kv : recipeMetadata(module)) plan.metadata.push_back(std::move(kv));
  // amp-plan-memory: every entry's arena layout, from the one planner devices validate it against.
  for (rt::EntryPoint& entry : plan.entries)
    entry.memory = rt::layoutOf(rt::planMemory(plan, entry, rt::constantsOutsideArena(plan, entry)), entry);
  return plan;
}
