// amp-autodiff: builds @train_step (forward + reverse-mode backward) from the model function, in
// the shape docs/training-ir.md ("After amp-autodiff") fixes.
#include "ir/AmpOps.h"
#include "ir/ModelConvention.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "ir/Precision.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPAUTODIFFPASS
#include "passes/Passes.h.inc"

namespace {

constexpr StringLiteral kTrainStep = "train_step";
constexpr StringLiteral kSeedName = "amp.grad_seed";

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

// Records the ops a VJP rule creates, to annotate them afterwards.
struct CreatedOps : OpBuilder::Listener {
  SmallVector<Operation*> ops;
  void notifyOperationInserted(Operation* op, OpBuilder::InsertPoint) override { ops.push_back(op); }
};

struct AmpAutodiffPass : impl::AmpAutodiffPassBase<AmpAutodiffPass> {
  void runOnOperation() override;
  LogicalResult differentiate(func::FuncOp model);
};

void AmpAutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  func::FuncOp model;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (auto entry = f->getAttrOfType<StringAttr>(AmpDialect::kEntryAttr)) {
      if (entry.getValue() == kTrainStep) {
        f.emitError("amp-autodiff: the module already has a train_step entry ('@")
            << f.getSymName() << "'); run amp-autodiff once, on the model alone";
        return signalPassFailure();
      }
      continue;
    }
    if (!f.isPublic()) continue;
    if (model) {
      f.emitError("amp-autodiff: more than one model function ('@")
          << model.getSymName() << "' and '@" << f.getSymName()
          << "'); a module holds one model (the public function without amp.entry)";
      return signalPassFailure();
    }
    model = f;
  }
  if (!model) {
    module.emitError("amp-autodiff: the module has no model function (a public func.func without "
                     "amp.entry)");
    return signalPassFailure();
  }
  if (SymbolTable::lookupSymbolIn(module, kTrainStep)) {
    model.emitError("amp-autodiff: the symbol @train_step is taken; rename that function");
    return signalPassFailure();
  }
  if (failed(verifyModel(model)) || failed(differentiate(model))) signalPassFailure();
}

// The model's buffers (docs/model-convention.md): each training-mode amp.batch_norm of the step
// returns its new running statistics with amp.updates, so the runtime writes them back after the
// step, as PyTorch's forward does in train mode (also on a step the loss scaler skips: the
// statistics come from the forward, not from the gradients). The model function is the eval
// entry, which normalises with the running statistics: its batch_norms over buffers lose
// `training` (model.eval()). A batch_norm over other values (constants) is left as written.
void returnBufferUpdates(func::FuncOp model, func::FuncOp train, ArrayRef<Operation*> forward) {
  auto bufferName = [](func::FuncOp f, Value v) -> StringRef {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner()->getParentOp() != f.getOperation() ||
        getArgRole(f, arg.getArgNumber()) != ArgRole::Buffer)
      return {};
    return getArgName(f, arg.getArgNumber());
  };
  train::Results results = train::Results::read(train);
  for (Operation* op : forward) {
    auto bn = dyn_cast<BatchNormOp>(op);
    if (!bn || !bn.getTraining()) continue;
    StringRef mean = bufferName(train, bn.getRunningMean()), var = bufferName(train, bn.getRunningVar());
    if (!mean.empty()) results.add(bn.getNewRunningMean(), AmpDialect::kUpdatesAttr, mean);
    if (!var.empty()) results.add(bn.getNewRunningVar(), AmpDialect::kUpdatesAttr, var);
  }
  results.write(train);
  model.walk([&](BatchNormOp bn) {
    if (!bufferName(model, bn.getRunningMean()).empty() || !bufferName(model, bn.getRunningVar()).empty())
      bn.setTraining(false);
  });
}

LogicalResult AmpAutodiffPass::differentiate(func::FuncOp model) {
  MLIRContext* ctx = &getContext();
  OpBuilder b(ctx);
  Location loc = model.getLoc();
  auto seedType = RankedTensorType::get({}, Float32Type::get(ctx));

  // Signature: every model argument, then the seed; loss, then one gradient per param.
  SmallVector<Type> argTypes(model.getArgumentTypes());
  argTypes.push_back(seedType);
  SmallVector<Type> resultTypes{model.getResultTypes().front()};
  SmallVector<unsigned> params;
  for (unsigned i = 0; i < model.getNumArguments(); ++i)
    if (getArgRole(model, i) == ArgRole::Param) {
      params.push_back(i);
      resultTypes.push_back(model.getArgument(i).getType());
    }

  b.setInsertionPointAfter(model);
  auto train = b.create<func::FuncOp>(loc, kTrainStep, FunctionType::get(ctx, argTypes, resultTypes));
  train->setAttr(AmpDialect::kEntryAttr, b.getStringAttr(kTrainStep));
  for (unsigned i = 0; i < model.getNumArguments(); ++i)
    train.setArgAttrs(i, model.getArgAttrDict(i));
  unsigned seedIndex = model.getNumArguments();
  train.setArgAttr(seedIndex, AmpDialect::kRoleAttr, b.getStringAttr("state"));
  train.setArgAttr(seedIndex, AmpDialect::kNameAttr, b.getStringAttr(kSeedName));
  // A seed of 1 unless loss scaling rebinds it, so a bare train_step yields true gradients.
  train.setArgAttr(seedIndex, AmpDialect::kInitAttr,
                   InitAttr::get(b.getContext(), "ones", APFloat(1.0), 0));
  train.setResultAttr(0, AmpDialect::kNameAttr, b.getStringAttr("loss"));
  for (auto [r, i] : llvm::enumerate(params))
    train.setResultAttr(r + 1, AmpDialect::kGradOfAttr, b.getStringAttr(getArgName(model, i)));

  // Forward: a copy of the model body.
  Block* body = train.addEntryBlock();
  IRMapping map;
  for (unsigned i = 0; i < model.getNumArguments(); ++i) map.map(model.getArgument(i), body->getArgument(i));
  b.setInsertionPointToEnd(body);
  SmallVector<Operation*> forward;
  for (Operation& op : model.getBody().front().without_terminator()) forward.push_back(b.clone(op, map));
  auto modelReturn = cast<func::ReturnOp>(model.getBody().front().getTerminator());
  Value loss = map.lookup(modelReturn.getOperand(0));

  // Activity: float values that depend on a param (varied) and that the loss depends on (useful).
  llvm::DenseSet<Value> varied, useful;
  for (unsigned i : params) varied.insert(body->getArgument(i));
  for (Operation* op : forward)
    if (llvm::any_of(op->getOperands(), [&](Value v) { return varied.contains(v); }))
      for (Value r : op->getResults())
        if (isFloatTensor(r)) varied.insert(r);
  useful.insert(loss);
  for (Operation* op : llvm::reverse(forward))
    if (llvm::any_of(op->getResults(), [&](Value r) { return useful.contains(r); }))
      for (Value v : op->getOperands()) useful.insert(v);
  auto active = [&](Value v) { return isFloatTensor(v) && varied.contains(v) && useful.contains(v); };

  bool autocast = llvm::any_of(forward, [](Operation* op) { return op->hasAttr(AmpDialect::kPrecisionAttr); });

  // Reverse sweep. Cotangents of values with several users are summed with amp.add in the
  // value's type, in the order the users' VJPs are built (last user first).
  llvm::DenseMap<Value, Value> grads;
  grads[loss] = body->getArgument(seedIndex);
  auto accumulate = [&](Operation* user, Value v, Value g) -> LogicalResult {
    if (g.getType() != v.getType())
      return user->emitError("amp-autodiff: internal error: the VJP of '")
             << user->getName() << "' produced a cotangent of type " << g.getType()
             << " for an operand of type " << v.getType();
    Value& slot = grads[v];
    if (!slot) {
      slot = g;
      return success();
    }
    auto add = b.create<AddOp>(user->getLoc(), slot, g);
    if (autocast) {
      if (auto p = precisionOfType(cast<RankedTensorType>(v.getType()).getElementType())) setPrecision(add, *p);
      add->setAttr(AmpDialect::kReasonAttr,
                   ReasonAttr::pass(b.getContext(), "", "gradient accumulation of a value with several users"));
    }
    slot = add;
    return success();
  };

  CreatedOps created;
  b.setListener(&created);
  for (Operation* op : llvm::reverse(forward)) {
    SmallVector<Value> dys;
    bool any = false;
    for (Value r : op->getResults()) {
      dys.push_back(grads.lookup(r));
      any |= static_cast<bool>(dys.back());
    }
    if (!any) continue;
    SmallVector<bool> need;
    for (Value v : op->getOperands()) need.push_back(active(v));
    if (!llvm::is_contained(need, true)) continue;

    created.ops.clear();
    SmallVector<Value> operandGrads;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable) {
      op->emitError("amp-autodiff: no VJP rule for '")
          << op->getName() << "', which lies on the path from a param to the loss (it is not a model op)";
      b.setListener(nullptr);
      train.erase();
      return failure();
    }
    if (failed(differentiable.buildVjp(b, dys, need, operandGrads))) {
      b.setListener(nullptr);
      train.erase();
      return failure();
    }
    if (auto precision = getPrecision(op)) {
      auto reason = ReasonAttr::backward(b.getContext(), op->getName().getStringRef());
      for (Operation* c : created.ops) {
        setPrecision(c, *precision);
        c->setAttr(AmpDialect::kReasonAttr, reason);
      }
    }
    for (auto [i, g] : llvm::enumerate(operandGrads))
      if (g && failed(accumulate(op, op->getOperand(i), g))) {
        b.setListener(nullptr);
        train.erase();
        return failure();
      }
  }
  b.setListener(nullptr);

  // Results: the loss, then each param's gradient (zeros for a param the loss does not read).
  SmallVector<Value> results{loss};
  for (unsigned i : params) {
    Value arg = body->getArgument(i);
    Value g = grads.lookup(arg);
    if (!g) g = train::zerosLike(b, loc, cast<RankedTensorType>(arg.getType()));
    results.push_back(g);
  }
  b.create<func::ReturnOp>(loc, results);
  returnBufferUpdates(model, train, forward);

  // Drop what the step does not need (the model's extra outputs, unused VJP pieces).
  SmallVector<Operation*> ops;
  for (Operation& op : body->without_terminator()) ops.push_back(&op);
  for (Operation* op : llvm::reverse(ops))
    if (op->use_empty() && isa<AmpDialect>(op->getDialect())) op->erase();
  return success();
}

}  // namespace
}  // namespace mlir::amp
