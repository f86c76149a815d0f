// ONNX import: translates an ONNX model into an amp-dialect model that follows the model
// convention (docs/model-convention.md), so the rest of ampc treats it like a hand-written one.
// What is supported and what is refused: docs/onnx-import.md.
#ifndef AMP_IMPORT_ONNX_ONNXIMPORT_H
#define AMP_IMPORT_ONNX_ONNXIMPORT_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::amp::onnx_import {

struct ImportOptions {
  // --input-shape NAME=D0xD1x...: the static shape of a graph input with symbolic dims.
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputShapes;
  // --batch=N: dim 0 of every graph input whose dim 0 is symbolic (after inputShapes).
  std::optional<int64_t> batch;
  // --loss=...: how the model's first result, the scalar loss, is made (LossSpec.h).
  std::string loss;
};

// The imported model; each initializer's values are its param's amp.init, so the bundle ampc
// writes carries them as the initial params.
struct ImportedModel {
  OwningOpRef<ModuleOp> module;
};

// Whether `bytes` (a file's contents, named `filename`) is an ONNX model: by extension, or by
// parsing as a ModelProto with a graph when the file is not MLIR text.
bool looksLikeOnnx(llvm::StringRef filename, llvm::StringRef bytes);

// Null after located errors (through the context's diagnostic handler).
std::optional<ImportedModel> importOnnxModel(llvm::StringRef bytes, llvm::StringRef filename,
                                             const ImportOptions& options, MLIRContext* context);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_ONNXIMPORT_H
