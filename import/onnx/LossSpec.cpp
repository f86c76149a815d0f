#include "import/onnx/LossSpec.h"

#include "ir/AmpOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {

namespace {
constexpr const char* kForms =
    "--loss=OUTPUT (a scalar output), --loss=cross_entropy:OUTPUT[,label=NAME] or "
    "--loss=mse:OUTPUT[,target=NAME]";
}

std::optional<LossSpec> parseLossSpec(llvm::StringRef text, std::string* error) {
  LossSpec spec;
  llvm::StringRef rest = text;
  llvm::StringRef labelKey;
  if (rest.consume_front("cross_entropy:")) {
    spec.kind = LossSpec::Kind::CrossEntropy;
    spec.label = "label";
    labelKey = "label";
  } else if (rest.consume_front("mse:")) {
    spec.kind = LossSpec::Kind::Mse;
    spec.label = "target";
    labelKey = "target";
  }
  auto [output, options] = rest.split(',');
  spec.output = output.str();
  if (spec.output.empty()) {
    *error = "--loss='" + text.str() + "' names no output; the forms are " + kForms;
    return std::nullopt;
  }
  while (!options.empty()) {
    auto [option, tail] = options.split(',');
    options = tail;
    auto [key, value] = option.split('=');
    if (labelKey.empty() || key != labelKey || value.empty()) {
      *error = "--loss='" + text.str() + "': unexpected '" + option.str() + "'; the forms are " + kForms;
      return std::nullopt;
    }
    spec.label = value.str();
  }
  return spec;
}

Type labelType(const LossSpec& spec, Type outputType, std::string* error) {
  auto type = dyn_cast<RankedTensorType>(outputType);
  if (!type) {
    *error = "the loss output is not a ranked tensor";
    return {};
  }
  switch (spec.kind) {
    case LossSpec::Kind::Scalar:
      return {};
    case LossSpec::Kind::CrossEntropy:
      if (type.getRank() < 2) {
        *error = "cross_entropy needs logits [N, C] or [N, ..., C]; output '" + spec.output + "' has rank " +
                 std::to_string(type.getRank());
        return {};
      }
      // A class index per row: [N] for [N, C], [B, T] for a sequence model's [B, T, C].
      return RankedTensorType::get(type.getShape().drop_back(), IntegerType::get(type.getContext(), 64));
    case LossSpec::Kind::Mse:
      return type;
  }
  return {};
}

FailureOr<Value> buildLoss(const LossSpec& spec, Value output, Value label, OpBuilder& builder, Location loc) {
  auto type = cast<RankedTensorType>(output.getType());
  if (!type.getElementType().isF32())
    return emitError(loc) << "the loss output '" << spec.output << "' is " << type
                          << "; the loss is computed in f32 (export the model in float32)";
  switch (spec.kind) {
    case LossSpec::Kind::Scalar: {
      if (type.getNumElements() != 1)
        return emitError(loc) << "--loss=" << spec.output << " takes that output as the loss, but it is " << type
                              << ", not a scalar; use --loss=cross_entropy:" << spec.output << " or --loss=mse:"
                              << spec.output << " to attach a loss to it";
      if (type.getRank() == 0) return output;
      return builder.create<ReshapeOp>(loc, RankedTensorType::get({}, type.getElementType()), output)->getResult(0);
    }
    case LossSpec::Kind::CrossEntropy: {
      if (type.getRank() == 2) return builder.create<CrossEntropyOp>(loc, ValueRange{output, label})->getResult(0);
      // [B, ..., C]: the mean over every position, as PyTorch's loss of logits.view(-1, C) and
      // labels.view(-1).
      const int64_t classes = type.getShape().back(), rows = type.getNumElements() / classes;
      auto labelType = cast<RankedTensorType>(label.getType());
      Value logits2d =
          builder.create<ReshapeOp>(loc, RankedTensorType::get({rows, classes}, type.getElementType()), output)->getResult(0);
      Value labels1d =
          builder.create<ReshapeOp>(loc, RankedTensorType::get({rows}, labelType.getElementType()), label)->getResult(0);
      return builder.create<CrossEntropyOp>(loc, ValueRange{logits2d, labels1d})->getResult(0);
    }
    case LossSpec::Kind::Mse:
      return builder.create<MseLossOp>(loc, ValueRange{output, label})->getResult(0);
  }
  return failure();
}

}  // namespace mlir::amp::onnx_import
