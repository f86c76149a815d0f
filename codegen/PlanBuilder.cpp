#include "codegen/PlanBuilder.h"

#include "ir/AmpOps.h"
#include "ir/ModelConvention.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "runtime/numerics/Convert.h"

using namespace mlir;
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

FailureOr<rt::Plan> mlir::amp::buildForwardPlan(ModuleOp module) {
  func::FuncOp model;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!f.isPublic()) continue;
    if (model) return module.emitError("codegen: the module has more than one public model function ('")
                      << model.getSymName() << "' and '" << f.getSymName() << "')";
    model = f;
  }
  if (!model) return module.emitError("codegen: the module has no public model function");
  if (failed(verifyModel(model))) return failure();

  rt::Plan plan;
  plan.metadata.emplace_back("model", model.getSymName().str());
  if (auto target = module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr))
    plan.metadata.emplace_back("target", target.getValue().str());

  llvm::DenseMap<Value, int32_t> ids;
  auto addBuffer = [&](Value v, rt::BufferDesc desc) -> FailureOr<int32_t> {
    auto type = cast<RankedTensorType>(v.getType());
    auto dtype = toDType(type.getElementType());
    if (!dtype) return mlir::emitError(v.getLoc(), "codegen: unsupported element type ") << type;
    desc.dtype = *dtype;
    desc.shape.assign(type.getShape().begin(), type.getShape().end());
    int32_t id = static_cast<int32_t>(plan.buffers.size());
    plan.buffers.push_back(std::move(desc));
    ids[v] = id;
    return id;
  };

  for (unsigned i = 0; i < model.getNumArguments(); ++i) {
    rt::BufferDesc desc;
    desc.name = getArgName(model, i).str();
    switch (getArgRole(model, i)) {
      case ArgRole::Param: desc.kind = rt::BufferKind::Param; break;
      case ArgRole::Input: desc.kind = rt::BufferKind::Input; break;
      case ArgRole::Label: desc.kind = rt::BufferKind::Label; break;
    }
    if (auto init = model.getArgAttrOfType<InitAttr>(i, AmpDialect::kInitAttr))
      desc.init = rt::InitSpec{init.getKind().str(), init.getScale().convertToDouble(), init.getSeed()};
    if (failed(addBuffer(model.getArgument(i), std::move(desc)))) return failure();
  }

  rt::EntryPoint entry;
  entry.name = "eval";
  for (Operation& op : model.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        entry.results.push_back(ids.lookup(v));
        entry.resultNames.push_back(i == 0 ? "loss" : "output" + std::to_string(i));
      }
      continue;
    }
    rt::PlanStep step;
    step.op = op.getName().getStringRef().str();
    step.loc = locString(op.getLoc());
    for (Value v : op.getOperands()) step.operands.push_back(ids.lookup(v));
    for (NamedAttribute named : op.getAttrDictionary())
      if (failed(convertAttr(&op, named, step.attrs))) return failure();
    if (auto ln = dyn_cast<LayerNormOp>(op)) {
      step.attrs.set("has_weight", static_cast<bool>(ln.getWeight()));
      step.attrs.set("has_bias", static_cast<bool>(ln.getBias()));
    } else if (auto rms = dyn_cast<RmsNormOp>(op)) {
      step.attrs.set("has_weight", static_cast<bool>(rms.getWeight()));
    }
    for (Value r : op.getResults()) {
      rt::BufferDesc desc;
      desc.name = "t" + std::to_string(plan.buffers.size());
      auto id = addBuffer(r, std::move(desc));
      if (failed(id)) return failure();
      step.results.push_back(*id);
    }
    entry.steps.push_back(std::move(step));
  }
  plan.entries.push_back(std::move(entry));
  return plan;
}
