// --loss: which graph output the model's loss (its first result, docs/model-convention.md) is
// made of, and how.
//   --loss=OUTPUT                        OUTPUT is already the scalar loss
//   --loss=cross_entropy:OUTPUT[,label=NAME]   softmax cross-entropy of logits [N, C] against
//                                        integer labels [N] (a new "label" argument NAME)
//   --loss=mse:OUTPUT[,target=NAME]      mean squared error against a target of OUTPUT's type
#ifndef AMP_IMPORT_ONNX_LOSSSPEC_H
#define AMP_IMPORT_ONNX_LOSSSPEC_H

#include <optional>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::amp::onnx_import {

struct LossSpec {
  enum class Kind { Scalar, CrossEntropy, Mse };
  Kind kind = Kind::Scalar;
  std::string output;  // the graph output it reads
  std::string label;   // the amp.name of the label/target argument (not for Scalar)
};

// nullopt with `error` set when `text` is not one of the forms above.
std::optional<LossSpec> parseLossSpec(llvm::StringRef text, std::string* error);

// The type of the label argument the loss reads, for an output of type `outputType`; null with
// `error` set when the output cannot carry this loss.
Type labelType(const LossSpec& spec, Type outputType, std::string* error);

// The scalar f32 loss; `label` is null for Kind::Scalar. Errors are reported at `loc`.
FailureOr<Value> buildLoss(const LossSpec& spec, Value output, Value label, OpBuilder& builder, Location loc);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_LOSSSPEC_H
