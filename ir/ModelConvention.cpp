#include "ir/ModelConvention.h"

#include "ir/AmpOps.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::amp;

ArgRole mlir::amp::getArgRole(func::FuncOp func, unsigned index) {
  auto role = func.getArgAttrOfType<StringAttr>(index, AmpDialect::kRoleAttr);
  if (role && role.getValue() == "param") return ArgRole::Param;
  if (role && role.getValue() == "label") return ArgRole::Label;
  if (role && role.getValue() == "state") return ArgRole::State;
  if (role && role.getValue() == "buffer") return ArgRole::Buffer;
  return ArgRole::Input;
}

StringRef mlir::amp::getArgName(func::FuncOp func, unsigned index) {
  auto name = func.getArgAttrOfType<StringAttr>(index, AmpDialect::kNameAttr);
  return name ? name.getValue() : StringRef();
}

namespace {
// The runtime refuses any buffer above 2^36 bytes (kMaxBufferBytes, runtime/plan/PlanValidation.h).
// A model tensor that large - or whose size does not even fit 64 bits - is refused here, before
// the passes and codegen compute with its element count.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;

bool tooLarge(RankedTensorType type) {
  Type e = type.getElementType();
  int64_t bytes = e.isIntOrFloat() ? (e.getIntOrFloatBitWidth() + 7) / 8 : 8;
  for (int64_t d : type.getShape()) {
    if (d <= 0) continue;  // dynamic or empty: refused by other rules where it matters
    if (bytes > kMaxTensorBytes / d) return true;
    bytes *= d;
  }
  return bytes > kMaxTensorBytes;
}

// A buffer (docs/model-convention.md, "Buffers") is f32, has its initial values, and is read by
// exactly one amp.batch_norm as its running mean or variance: that op's training step writes it
// back, so any other reader (or a second writer) would see a value the IR does not show.
template <typename Fail>
void verifyBuffer(func::FuncOp func, unsigned i, RankedTensorType type, Fail& fail) {
  BlockArgument arg = func.getArgument(i);
  StringRef name = getArgName(func, i);
  if (!type.getElementType().isF32())
    fail(arg.getLoc()) << "buffer '" << name << "' must be f32 (running statistics are kept in f32), got " << type;
  if (!func.getArgAttr(i, AmpDialect::kInitAttr))
    fail(arg.getLoc()) << "buffer '" << name
                       << "' needs amp.init (its initial value, e.g. #amp.init<zeros> for a running mean, "
                          "#amp.init<ones> for a running variance)";
  unsigned uses = 0;
  for (OpOperand& use : arg.getUses()) {
    ++uses;
    auto bn = dyn_cast<BatchNormOp>(use.getOwner());
    if (!bn || (use.get() != bn.getRunningMean() && use.get() != bn.getRunningVar()) ||
        bn.getRunningMean() == bn.getRunningVar())
      fail(use.getOwner()->getLoc()) << "buffer '" << name << "' is read by '" << use.getOwner()->getName()
                                     << "'; a buffer is only the running mean or variance of one amp.batch_norm";
  }
  if (uses > 1)
    fail(arg.getLoc()) << "buffer '" << name << "' is read by " << uses
                       << " ops; each amp.batch_norm needs its own running statistics";
}

}  // namespace

LogicalResult mlir::amp::verifyModel(func::FuncOp func) {
  bool ok = true;
  auto fail = [&](Location loc) {
    ok = false;
    return mlir::emitError(loc) << "model '" << func.getSymName() << "': ";
  };
  if (func.isExternal()) {
    fail(func.getLoc()) << "a model needs a body";
    return failure();
  }

  // State arguments (optimizer moments, the loss scale, step counters, weight copies) are created
  // by the training passes on the entries they build (amp.entry); a model written by a user has
  // none: nothing would update them, and their names could collide with the passes' own.
  const bool userModel = !func->hasAttr(AmpDialect::kEntryAttr);
  llvm::StringMap<unsigned> seen;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    BlockArgument arg = func.getArgument(i);
    auto role = func.getArgAttrOfType<StringAttr>(i, AmpDialect::kRoleAttr);
    auto name = func.getArgAttrOfType<StringAttr>(i, AmpDialect::kNameAttr);
    if (!role)
      fail(arg.getLoc()) << "argument #" << i << " has no amp.role ("
                         << (userModel ? "param, input, label or buffer" : "param, input, label, buffer or state")
                         << ")";
    else if (userModel && role.getValue() == "state")
      fail(arg.getLoc()) << "argument #" << i << " has amp.role \"state\", which only the training passes "
                         << "create (optimizer moments, the loss scale, step counters); a model's arguments "
                         << "are params, inputs or labels";
    if (!name) {
      fail(arg.getLoc()) << "argument #" << i
                         << " has no amp.name (names bind inputs, parameter files and checkpoints)";
    } else if (auto [it, inserted] = seen.try_emplace(name.getValue(), i); !inserted) {
      fail(arg.getLoc()) << "argument #" << i << " reuses the name '" << name.getValue()
                         << "' of argument #" << it->second;
    }
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape()) {
      fail(arg.getLoc()) << "argument #" << i << " must be a statically shaped tensor, got "
                         << arg.getType();
      continue;
    }
    // Empty tensors are not supported end to end (a batch of zero examples, an empty embedding
    // table): refused here, at the argument, rather than deep in a pass or at run time.
    if (llvm::is_contained(type.getShape(), 0))
      fail(arg.getLoc()) << "argument #" << i << " has a zero-sized dimension (" << type
                         << "); empty tensors are not supported";
    else if (tooLarge(type))
      fail(arg.getLoc()) << "argument #" << i << " (" << type << ") is larger than the runtime's limit of "
                         << kMaxTensorBytes << " bytes per tensor";
    bool isParam = role && role.getValue() == "param";
    if (isParam && !type.getElementType().isF32())
      fail(arg.getLoc()) << "param '" << (name ? name.getValue() : "?")
                         << "' must be f32 (master weights are f32; autocast derives the "
                            "low-precision copies), got "
                         << type;
    bool isState = role && role.getValue() == "state";
    if (auto init = func.getArgAttrOfType<InitAttr>(i, AmpDialect::kInitAttr); init && !init.getFrom().empty()) {
      // A derived copy: the source must be a param of the same shape, the copy a float state.
      std::optional<unsigned> source;
      for (unsigned j = 0; j < e; ++j)
        if (getArgName(func, j) == init.getFrom() && getArgRole(func, j) == ArgRole::Param) source = j;
      auto srcType = source ? dyn_cast<RankedTensorType>(func.getArgument(*source).getType()) : nullptr;
      if (!isState || !srcType || srcType.getShape() != type.getShape() ||
          !isa<FloatType>(type.getElementType()))
        fail(arg.getLoc()) << "argument #" << i << ": #amp.init<cast, from = \"" << init.getFrom()
                           << "\"> needs a float state argument shaped like the param '"
                           << init.getFrom() << "'";
    }
    bool isBuffer = role && role.getValue() == "buffer";
    // In the entries the passes build, the gradient op reads the running statistics too.
    if (isBuffer && userModel) verifyBuffer(func, i, type, fail);
    if (isa_and_nonnull<ElementsAttr>(func.getArgAttr(i, AmpDialect::kInitAttr)) && !isParam && !isBuffer)
      fail(arg.getLoc()) << "argument #" << i << " stores initial values, which only params and buffers take";
    if (!isParam && !isState && !isBuffer && func.getArgAttr(i, AmpDialect::kInitAttr))
      fail(arg.getLoc()) << "argument #" << i
                         << " has amp.init but only params, buffers and state are initialised";
  }

  auto results = func.getFunctionType().getResults();
  if (results.empty()) {
    fail(func.getLoc()) << "the first result must be the scalar f32 loss, but there are no results";
  } else {
    auto loss = dyn_cast<RankedTensorType>(results[0]);
    if (!loss || loss.getRank() != 0 || !loss.getElementType().isF32())
      fail(func.getLoc()) << "the first result must be the scalar loss tensor<f32>, got "
                          << results[0];
  }

  // Results are named by amp.name (outputs, summaries and errors use it); unnamed ones are
  // "loss" (#0) and "result<N>". Names must be unique so files written by name lose nothing.
  llvm::StringMap<unsigned> resultNames;
  for (unsigned r = 0; r < results.size(); ++r) {
    // The dialect's attribute verifier has checked the spelling of the name.
    auto name = func.getResultAttrOfType<StringAttr>(r, AmpDialect::kNameAttr);
    if (!name) continue;
    if (auto [it, inserted] = resultNames.try_emplace(name.getValue(), r); !inserted)
      fail(func.getLoc()) << "result #" << r << " reuses the name '" << name.getValue() << "' of result #"
                          << it->second;
  }

  func.walk([&](Operation* op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op)) return;
    // Unregistered ops (--allow-unregistered-dialect) have no dialect object.
    if (!isa_and_nonnull<AmpDialect>(op->getDialect()))
      fail(op->getLoc()) << "op '" << op->getName()
                         << "' is not an amp op; a model body holds only amp ops";
    for (Type t : op->getResultTypes())
      if (auto type = dyn_cast<RankedTensorType>(t); type && tooLarge(type))
        fail(op->getLoc()) << "op '" << op->getName() << "' produces " << type
                           << ", larger than the runtime's limit of " << kMaxTensorBytes << " bytes per tensor";
  });
  return success(ok);
}
