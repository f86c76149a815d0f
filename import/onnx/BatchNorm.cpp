// BatchNormalization -> amp.batch_norm. Opset 14/15 (training_mode): with training_mode = 1 the
// batch statistics normalise and the running statistics are updated; with 0 the running
// statistics normalise. Running statistics that are initializers become the model's buffers
// (docs/model-convention.md), so `ampc --train` updates them every step, the eval entry uses
// them, and checkpoints carry them; any other per-channel input is taken as it is.
#include <cstdio>
#include <cstdlib>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"

namespace mlir::amp::onnx_import {
namespace {

// The per-channel input i as f32 (amp.batch_norm keeps them f32 whatever x's type); an
// initializer of the running statistics is turned from a param into a buffer.
FailureOr<Value> perChannel(GraphTranslator& t, unsigned i, int64_t channels, bool runningStatistic) {
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  auto v = floatInput(t, i);
  if (failed(v)) return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (type.getShape() != llvm::ArrayRef<int64_t>{channels})
    return t.refuse() << kNames[i] << " must have one value per channel, [" << channels << "]; got " << type,
           failure();
  Value f32 = *v;
  if (!type.getElementType().isF32())
    f32 = t.create<CastOp>(RankedTensorType::get({channels}, Float32Type::get(t.context())), *v);
  if (auto arg = dyn_cast<BlockArgument>(f32); arg && runningStatistic) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto role = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), AmpDialect::kRoleAttr);
    // An initializer (a param until here): not trained, updated by the step.
    if (role && role.getValue() == "param")
      func.setArgAttr(arg.getArgNumber(), AmpDialect::kRoleAttr, t.builder().getStringAttr("buffer"));
  }
  return f32;
}

// ONNX stores epsilon and momentum as float32; the exporter wrote a decimal (torch: eps 1e-5,
// momentum 1 - 0.1). The shortest decimal that rounds to the stored float recovers it, so the
// step computes with the exporter's 0.1 and 1e-5 rather than 0.10000002 and 9.9999997e-6.
double exportedDecimal(float stored) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, static_cast<double>(stored));
    if (std::strtof(text, nullptr) == stored) return std::strtod(text, nullptr);
  }
  return stored;
}

LogicalResult convertBatchNormalization(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"epsilon", "momentum", "training_mode"}))) return failure();
  const bool training = t.intAttribute("training_mode", 0) != 0;
  // Before opset 14 outputs 1-4 were the training outputs mean, var, saved_mean, saved_var.
  if (t.outputUsed(3) || t.outputUsed(4))
    return t.refuse() << "the saved_mean/saved_var outputs (BatchNormalization before opset 14) are not supported; "
                         "re-export with opset_version >= 14";
  if (!training && (t.outputUsed(1) || t.outputUsed(2)))
    return t.refuse() << "outputs running_mean and running_var exist in training mode only (training_mode=1)";
  // ONNX's reference updates the running variance with the biased batch variance; ampc, as
  // PyTorch (whose exports these models are), with the unbiased one. Refuse rather than differ.
  if (training && t.outputUsed(2))
    return t.refuse() << "the running_var output is not supported: ampc updates the running variance with the "
                         "unbiased batch variance as PyTorch does, ONNX's reference with the biased one";
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() < 2) return t.refuse() << "X must be [N, C, ...] (rank >= 2); got " << type;
  const int64_t channels = type.getDimSize(1);
  const double momentum = exportedDecimal(t.floatAttribute("momentum", 0.9f));
  const double eps = exportedDecimal(t.floatAttribute("epsilon", 1e-5f));
  if (!(momentum >= 0.0 && momentum <= 1.0)) return t.refuse() << "momentum " << momentum << " is outside [0, 1]";
  if (!(eps > 0.0)) return t.refuse() << "epsilon " << eps << " must be positive";
  if (training && type.getNumElements() / channels < 2)
    return t.refuse() << "training needs more than one value per channel; got " << type;
  llvm::SmallVector<Value, 5> operands{*x};
  for (unsigned i = 1; i <= 4; ++i) {
    if (!t.hasInput(i)) return t.refuse() << "all five inputs are required";
    auto v = perChannel(t, i, channels, /*runningStatistic=*/i >= 3);
    if (failed(v)) return failure();
    operands.push_back(*v);
  }
  // ONNX weighs the old running value by `momentum` (default 0.9); amp.batch_norm, as PyTorch,
  // weighs the batch's by it.
  auto bn = t.builder().create<BatchNormOp>(t.loc(), operands[0], operands[1], operands[2], operands[3], operands[4],
                                            llvm::APFloat(eps),
                                            llvm::APFloat(exportedDecimal(static_cast<float>(1.0 - momentum))),
                                            training);
  if (failed(t.setOutput(0, bn.getResult()))) return failure();
  if (t.outputUsed(1) && failed(t.setOutput(1, bn.getNewRunningMean()))) return failure();
  return success();
}

}  // namespace

void addBatchNormConverter(llvm::StringMap<Converter>& converters) {
  converters.insert({"BatchNormalization", convertBatchNormalization});
}

}  // namespace mlir::amp::onnx_import
