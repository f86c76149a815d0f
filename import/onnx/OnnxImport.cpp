#include "import/onnx/OnnxImport.h"

#include "import/onnx/GraphTranslator.h"
#include "import/onnx/ModelLoader.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

namespace mlir::amp::onnx_import {

bool looksLikeOnnx(llvm::StringRef filename, llvm::StringRef bytes) {
  if (filename.ends_with(".onnx")) return true;
  if (filename.ends_with(".mlir") || bytes.empty()) return false;
  // No extension to go by: serializers write ModelProto's ir_version (field 1, a varint, tag
  // 0x08) first, a byte no MLIR text starts with; then it must parse, with a graph.
  if (bytes.front() != '\x08') return false;
  onnx::ModelProto model;
  return bytes.size() <= static_cast<size_t>(INT32_MAX) &&
         model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) && model.has_graph();
}

std::optional<ImportedModel> importOnnxModel(llvm::StringRef bytes, llvm::StringRef filename,
                                             const ImportOptions& options, MLIRContext* context) {
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  LoadError error;
  auto model = loadOnnxModel(bytes, filename, options, &error);
  if (!model) {
    // A refused node is located as the translator locates it: MODEL.onnx:K:0 for node K-1.
    auto nodeLoc = [&](int node) { return node >= 0 ? FileLineColLoc::get(context, filename, node + 1, 0) : fileLoc; };
    emitError(nodeLoc(error.node)) << error.message;
    for (const auto& [node, message] : error.moreNodes) emitError(nodeLoc(node)) << message;
    if (!error.summary.empty()) emitError(fileLoc) << error.summary;
    return std::nullopt;
  }
  GraphTranslator translator(*model, filename, context);
  auto imported = translator.translate(options);
  if (!imported || failed(verify(*imported->module))) return std::nullopt;
  return imported;
}

}  // namespace mlir::amp::onnx_import
