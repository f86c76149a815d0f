#include "tools/ampc/ImportOnnx.h"

#include "ir/ParseModel.h"
#include "llvm/ADT/StringExtras.h"
#include "tools/ampc/DriverErrors.h"

namespace cl = llvm::cl;

namespace mlir::amp {

cl::OptionCategory& onnxImportCategory() {
  static cl::OptionCategory category("ampc options for ONNX models (docs/onnx-import.md)");
  return category;
}

static cl::opt<std::string> lossFlag(
    "loss",
    cl::desc("ONNX: the loss, the model's first result: OUTPUT (a scalar output), "
             "cross_entropy:OUTPUT[,label=NAME] or mse:OUTPUT[,target=NAME]"),
    cl::value_desc("spec"), cl::init(""), cl::cat(onnxImportCategory()));
static cl::list<std::string> inputShapeFlag(
    "input-shape", cl::desc("ONNX: the static shape of a graph input with symbolic dims (repeatable)"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(onnxImportCategory()));
static cl::opt<int64_t> batchFlag("batch", cl::desc("ONNX: dim 0 of every graph input whose dim 0 is symbolic"),
                                  cl::value_desc("N"), cl::init(0), cl::cat(onnxImportCategory()));

static bool parseInputShape(llvm::StringRef text, onnx_import::ImportOptions& options) {
  auto [name, dims] = text.rsplit('=');
  std::vector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, 'x');
  bool ok = !name.empty() && !dims.empty();
  for (llvm::StringRef part : parts) {
    int64_t d = 0;
    ok = ok && !part.getAsInteger(10, d) && d > 0;
    shape.push_back(d);
  }
  if (!ok) {
    driverErrs() << "ampc: --input-shape='" << text << "' is not NAME=D0xD1x... with positive dims\n";
    return false;
  }
  options.inputShapes.emplace_back(name.str(), std::move(shape));
  return true;
}

OwningOpRef<ModuleOp> loadModel(llvm::SourceMgr& sources, MLIRContext* context) {
  const llvm::MemoryBuffer* buffer = sources.getMemoryBuffer(sources.getMainFileID());
  llvm::StringRef filename = buffer->getBufferIdentifier();
  if (!onnx_import::looksLikeOnnx(filename, buffer->getBuffer())) {
    if (lossFlag.getNumOccurrences() || inputShapeFlag.getNumOccurrences() || batchFlag.getNumOccurrences()) {
      driverErrs() << "ampc: --loss, --input-shape and --batch apply to ONNX models; '" << filename
                   << "' is an amp-dialect model, whose loss and shapes are in its IR\n";
      return nullptr;
    }
    return parseModel(sources, context);
  }
  onnx_import::ImportOptions options;
  options.loss = lossFlag;
  for (const std::string& shape : inputShapeFlag)
    if (!parseInputShape(shape, options)) return nullptr;
  if (batchFlag.getNumOccurrences()) {
    if (batchFlag <= 0) {
      driverErrs() << "ampc: --batch must be positive, got " << batchFlag << "\n";
      return nullptr;
    }
    options.batch = batchFlag;
  }
  auto imported = onnx_import::importOnnxModel(buffer->getBuffer(), filename, options, context);
  if (!imported) return nullptr;
  return std::move(imported->module);
}

}  // namespace mlir::amp
