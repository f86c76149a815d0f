// Small helpers shared by amp-autodiff, amp-loss-scaling, amp-optimizer and amp-verify to read and edit the
// training entries of docs/training-ir.md (argument roles and names, named results).
#ifndef AMP_PASSES_TRAINSTEP_H
#define AMP_PASSES_TRAINSTEP_H

#include <optional>
#include <string>

#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "runtime/schema/StateNames.h"

namespace mlir::amp::train {

inline constexpr llvm::StringLiteral kTrainStep = "train_step";
inline constexpr llvm::StringLiteral kAccumulate = "accumulate";
inline constexpr llvm::StringLiteral kGrads = "grads";
inline constexpr llvm::StringLiteral kGradSeed = "amp.grad_seed";
// The state's names are the runtime's too (runtime/schema/StateNames.h).
inline constexpr llvm::StringLiteral kLossScale = ::amp::schema::kLossScaleState;
inline constexpr llvm::StringLiteral kGrowthTracker = ::amp::schema::kGrowthTrackerState;
inline constexpr llvm::StringLiteral kStep = ::amp::schema::kStepState;
inline constexpr llvm::StringLiteral kSkippedSteps = ::amp::schema::kSkippedStepsState;
// With accumulation: the sum of the window's micro-batch losses (@train_step returns their mean).
inline constexpr llvm::StringLiteral kLossSum = ::amp::schema::kLossSumState;

// The function with `amp.entry = entry`, or null.
inline func::FuncOp findEntry(ModuleOp module, llvm::StringRef entry) {
  for (auto f : module.getOps<func::FuncOp>())
    if (auto e = f->getAttrOfType<StringAttr>(AmpDialect::kEntryAttr); e && e.getValue() == entry)
      return f;
  return {};
}

inline llvm::StringRef argName(func::FuncOp f, unsigned i) {
  auto n = f.getArgAttrOfType<StringAttr>(i, AmpDialect::kNameAttr);
  return n ? n.getValue() : llvm::StringRef();
}
inline llvm::StringRef argRole(func::FuncOp f, unsigned i) {
  auto r = f.getArgAttrOfType<StringAttr>(i, AmpDialect::kRoleAttr);
  return r ? r.getValue() : llvm::StringRef();
}

// Index of the argument named `name`.
inline std::optional<unsigned> findArg(func::FuncOp f, llvm::StringRef name) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (argName(f, i) == name) return i;
  return std::nullopt;
}

// Index of the first result carrying `attr = value`.
inline std::optional<unsigned> findResult(func::FuncOp f, llvm::StringRef attr, llvm::StringRef value) {
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (auto s = f.getResultAttrOfType<StringAttr>(i, attr); s && s.getValue() == value) return i;
  return std::nullopt;
}

inline DictionaryAttr stateAttrs(MLIRContext* ctx, llvm::StringRef name, Attribute init) {
  Builder b(ctx);
  llvm::SmallVector<NamedAttribute, 3> attrs = {
      b.getNamedAttr(AmpDialect::kRoleAttr, b.getStringAttr("state")),
      b.getNamedAttr(AmpDialect::kNameAttr, b.getStringAttr(name))};
  if (init) attrs.push_back(b.getNamedAttr(AmpDialect::kInitAttr, init));
  return b.getDictionaryAttr(attrs);
}

inline InitAttr zerosInit(MLIRContext* ctx) { return InitAttr::get(ctx, "zeros", llvm::APFloat(1.0), 0); }
inline InitAttr constantInit(MLIRContext* ctx, double v) {
  return InitAttr::get(ctx, "constant", llvm::APFloat(v), 0);
}

// Appends a state argument and returns it.
inline BlockArgument addStateArg(func::FuncOp f, Type type, llvm::StringRef name, Attribute init) {
  unsigned idx = f.getNumArguments();
  f.insertArgument(idx, type, stateAttrs(f.getContext(), name, init), f.getLoc());
  return f.getArgument(idx);
}

// The results of a function as (value, attributes) pairs, editable and written back at once.
struct Results {
  llvm::SmallVector<Value> values;
  llvm::SmallVector<DictionaryAttr> attrs;

  static Results read(func::FuncOp f) {
    Results r;
    auto ret = cast<func::ReturnOp>(f.front().getTerminator());
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      r.values.push_back(ret.getOperand(i));
      DictionaryAttr d = f.getResultAttrDict(i);
      r.attrs.push_back(d ? d : DictionaryAttr::get(f.getContext()));
    }
    return r;
  }
  void add(Value v, llvm::StringRef attr, llvm::StringRef value) {
    Builder b(v.getContext());
    values.push_back(v);
    attrs.push_back(b.getDictionaryAttr({b.getNamedAttr(attr, b.getStringAttr(value))}));
  }
  void write(func::FuncOp f) const {
    auto ret = cast<func::ReturnOp>(f.front().getTerminator());
    ret->setOperands(values);
    llvm::SmallVector<Type> types;
    for (Value v : values) types.push_back(v.getType());
    f.setFunctionType(FunctionType::get(f.getContext(), f.getArgumentTypes(), types));
    f.setAllResultAttrs(attrs);
  }
};

// Bytes of a statically shaped tensor (an i1 element takes a byte, as the runtime stores it); 0 for
// any other type.
inline int64_t tensorBytes(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type || !type.hasStaticShape()) return 0;
  return type.getNumElements() * static_cast<int64_t>((type.getElementTypeBitWidth() + 7) / 8);
}

inline bool isLowFloat(Type t) {
  if (auto st = dyn_cast<ShapedType>(t)) t = st.getElementType();
  return isa<Float16Type, BFloat16Type>(t);
}
inline bool isF16(Type t) {
  if (auto st = dyn_cast<ShapedType>(t)) t = st.getElementType();
  return isa<Float16Type>(t);
}

// Zeros of `type` as a scalar constant broadcast to its shape. A splat constant of the full shape
// is materialised element by element by codegen: in ampc's memory and in the bundle, a param-sized
// block of zeros (found by fuzz/pipeline.cpp: compiling a model with an 8 GiB param and
// --accumulate=2 allocated 8 GiB for the accumulator's reset value).
inline Value zerosLike(OpBuilder& b, Location loc, RankedTensorType type) {
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value zero = b.create<ConstantOp>(loc, DenseElementsAttr::get(scalar, b.getFloatAttr(type.getElementType(), 0.0)));
  return type.getRank() == 0 ? zero : b.create<BroadcastToOp>(loc, type, zero).getResult();
}

}  // namespace mlir::amp::train

#endif  // AMP_PASSES_TRAINSTEP_H
