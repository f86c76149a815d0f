// ampc's model loading: an amp-dialect .mlir file is parsed, an ONNX model imported
// (import/onnx/, docs/onnx-import.md) with the options only ONNX models take.
#ifndef AMP_TOOLS_AMPC_IMPORTONNX_H
#define AMP_TOOLS_AMPC_IMPORTONNX_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "import/onnx/OnnxImport.h"

namespace mlir::amp {

// --loss, --input-shape and --batch.
llvm::cl::OptionCategory& onnxImportCategory();

// The model in the source manager's main buffer, parsed or imported; null after a located
// diagnostic. An imported model's initializer values are its params' amp.init.
OwningOpRef<ModuleOp> loadModel(llvm::SourceMgr& sources, MLIRContext* context);

}  // namespace mlir::amp

#endif  // AMP_TOOLS_AMPC_IMPORTONNX_H
