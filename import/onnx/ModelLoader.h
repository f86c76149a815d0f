// Reading an ONNX file into a checked ModelProto of a supported opset whose graph inputs are all
// statically shaped and whose every value has ONNX's inferred type: the ground the translator
// stands on. Everything that can throw in libonnx is called here and nowhere else.
#ifndef AMP_IMPORT_ONNX_MODELLOADER_H
#define AMP_IMPORT_ONNX_MODELLOADER_H

#include <optional>
#include <string>

#include "import/onnx/OnnxImport.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

// The opsets the translator implements; older models are converted up to kTargetOpset.
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kTargetOpset = 17;

// The default domain's opset version of `model` (0 when it imports none).
int64_t defaultOpsetVersion(const onnx::ModelProto& model);

// Parses, converts (opset < 13), checks, binds symbolic input dims from `options` and runs ONNX
// shape inference with data propagation. On failure returns nullopt and sets `error` to a
// sentence for the user.
std::optional<onnx::ModelProto> loadOnnxModel(llvm::StringRef bytes, const ImportOptions& options,
                                              std::string* error);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_MODELLOADER_H
