// ampc's model loading: an amp-dialect .mlir file is parsed, an ONNX model imported
// (import/onnx/, docs/onnx-import.md) with the options only ONNX models take.
#ifndef AMP_TOOLS_AMPC_IMPORTONNX_H
#define AMP_TOOLS_AMPC_IMPORTONNX_H

#include <string>

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "import/onnx/OnnxImport.h"

namespace mlir::amp {

// --loss, --input-shape and --batch.
llvm::cl::OptionCategory& onnxImportCategory();

// The model in the source manager's main buffer, parsed or imported; null after a located
// diagnostic. An imported model's initializer values go to `initialParams`.
OwningOpRef<ModuleOp> loadModel(llvm::SourceMgr& sources, MLIRContext* context,
                                std::vector<onnx_import::InitialParam>* initialParams);

// The path of the initial parameter file written beside bundle `bundlePath`.
std::string initialParamsPath(const std::string& bundlePath);

// Writes `initialParams` (when there are any) to initialParamsPath(bundlePath) as safetensors,
// the file amp-run takes with --params; false after an error message.
bool writeInitialParams(const std::string& bundlePath, const std::vector<onnx_import::InitialParam>& initialParams);

}  // namespace mlir::amp

#endif  // AMP_TOOLS_AMPC_IMPORTONNX_H
