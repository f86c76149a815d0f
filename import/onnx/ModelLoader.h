// Reading an ONNX file into a checked ModelProto of a supported opset whose graph inputs are all
// statically shaped and whose every value has ONNX's inferred type: the ground the translator
// stands on. Everything that can throw in libonnx is called here and nowhere else.
#ifndef AMP_IMPORT_ONNX_MODELLOADER_H
#define AMP_IMPORT_ONNX_MODELLOADER_H

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "import/onnx/OnnxImport.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

// The opsets the translator implements; older models are converted up to kTargetOpset.
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kTargetOpset = 17;

// The default domain's opset version of `model` (0 when it imports none).
int64_t defaultOpsetVersion(const onnx::ModelProto& model);

// "node 'NAME' (op_type OP, domain D)" for node `index` of the graph: every refusal of a node
// starts with it (the name is "#INDEX" when the node has none).
std::string describeNode(const onnx::NodeProto& node, int index);

// A refusal of the loader: a sentence for the user, and the node it is about (its index in the
// graph; -1 for the model as a whole), so the importer can locate it as MODEL.onnx:K:0.
struct LoadError {
  std::string message;
  int node = -1;
  // Screening tries every node: the refused ones after the first (index, message), and a line
  // summing all of them up by reason, when there are several.
  std::vector<std::pair<int, std::string>> moreNodes;
  std::string summary;
};

// Parses the model and screens it as hostile input before any of libonnx sees more than its
// bytes (docs/onnx-import.md, "Hostile input"): model-local functions, ops of other domains, ops
// ampc does not import, subgraph and sparse attributes and out-of-range conv/pool attributes are
// refused, and external data is read, confined to the folder of `filename`. Then checks,
// converts (opset < 13), binds symbolic input dims from `options` and runs ONNX shape inference
// with data propagation. On failure returns nullopt and fills `error`.
std::optional<onnx::ModelProto> loadOnnxModel(llvm::StringRef bytes, llvm::StringRef filename,
                                              const ImportOptions& options, LoadError* error);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_MODELLOADER_H
