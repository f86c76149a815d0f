// The ONNX importer on arbitrary bytes: loadOnnxModel (protobuf parse, the hostile-input
// screening, external data read from the model's folder, libonnx's checker, version converter and
// shape inference), the translation into the amp dialect and its verifier, then the pipeline
// `ampc MODEL.onnx --train` runs on it (amp-verify-model, autocast in f32 or f16, the training
// stage with AdamW, fusion). What follows (buildPlan, the emitter, sessions) sees ordinary amp IR
// and is the `pipeline` target's; leaving it out keeps this target off the runtime's libraries.
//
// The model's path is MODEL.onnx in a folder of its own holding one file, data.bin (64 bytes), so
// external-data locations are resolved there and a valid one can be read. The loss is
// --loss=mse:FIRST_OUTPUT and --batch=2 binds a symbolic batch dim.
// Mutations are structure-aware (fuzz/OnnxMutator.h) four times in five.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz/MlirCommon.h"
#include "fuzz/OnnxMutator.h"
#include "import/onnx/OnnxImport.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "passes/Pipeline.h"

namespace {

amp::fuzz::FuzzContext contexts(200);

// The model's folder, made once per process.
const std::string& modelPath() {
  static const std::string path = [] {
    char dir[] = "/tmp/amp-fuzz-onnx-XXXXXX";
    if (!mkdtemp(dir)) std::abort();
    std::ofstream(std::string(dir) + "/data.bin", std::ios::binary) << std::string(64, '\x01');
    return std::string(dir) + "/model.onnx";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlir::MLIRContext& ctx = contexts.get();
  llvm::StringRef bytes(reinterpret_cast<const char*>(data), size);
  mlir::amp::onnx_import::ImportOptions options;
  options.batch = 2;
  {
    onnx::ModelProto model;
    if (size > static_cast<size_t>(INT32_MAX) || !model.ParseFromArray(data, static_cast<int>(size)) ||
        model.graph().output_size() == 0)
      options.loss = "y";  // the importer refuses it, after loading
    else
      options.loss = "mse:" + model.graph().output(0).name();
  }
  auto imported = mlir::amp::onnx_import::importOnnxModel(bytes, modelPath(), options, &ctx);
  if (!imported) return 0;
  mlir::amp::AmpPipelineOptions pipeline;
  pipeline.target = "cpu:generic";
  pipeline.train = true;
  pipeline.precision = size % 2 ? mlir::amp::AutocastDtype::F16 : mlir::amp::AutocastDtype::F32;
  mlir::PassManager pm(&ctx);
  mlir::amp::buildAmpPipeline(pm, pipeline);
  (void)pm.run(*imported->module);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  return amp::fuzz::mutateOnnxModel(data, size, maxSize, seed);
}
