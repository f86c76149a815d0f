// The JSON precision-policy loader (passes/PrecisionPolicy.h) on arbitrary bytes. A policy that
// loads is validated, queried for every category and op, and then drives amp-autocast (through
// a policy file, as ampc --policy=FILE.json does) over a fixed model, examples/transformer_lm.mlir,
// so its lists and pattern overrides are applied to real ops.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz/MlirCommon.h"
#include "ir/ParseModel.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "passes/Pipeline.h"
#include "passes/PrecisionPolicy.h"

#ifndef AMP_EXAMPLES_DIR
#error "AMP_EXAMPLES_DIR must name examples/"
#endif

namespace {

amp::fuzz::FuzzContext contexts(2000);
std::string modelText, policyPath;

void removePolicy() { std::remove(policyPath.c_str()); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string path = std::string(AMP_EXAMPLES_DIR) + "/transformer_lm.mlir";
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::perror(path.c_str());
    std::exit(1);
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) modelText.append(buf, n);
  std::fclose(f);
  policyPath = "/dev/shm/amp-fuzz-policy-" + std::to_string(getpid()) + ".json";
  std::atexit(removePolicy);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlir::MLIRContext& ctx = contexts.get();
  llvm::StringRef text(reinterpret_cast<const char*>(data), size);
  const bool lowIsBF16 = size % 2;
  std::string error;
  auto policy = mlir::amp::PrecisionPolicy::parseJson(&ctx, text, "fuzz.json", lowIsBF16, error);
  if (mlir::failed(policy)) return 0;
  if (mlir::failed(policy->validate(&ctx, error))) return 0;
  for (mlir::amp::PolicyStyle style : {mlir::amp::PolicyStyle::PyTorch, mlir::amp::PolicyStyle::TensorFlow})
    for (mlir::amp::Category c : mlir::amp::listCategories(style)) (void)policy->opsIn(c);
  for (const std::string& op : mlir::amp::listableAmpOps(&ctx)) (void)policy->categoryOf(op);
  for (const mlir::amp::PatternOverride& o : policy->overrides()) (void)o.describe();

  FILE* f = std::fopen(policyPath.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::amp::parseModel(modelText, "model.mlir", &ctx);
  if (!module) std::abort();  // the fixed model is valid
  mlir::PassManager pm(&ctx);
  mlir::amp::AmpPipelineOptions options;
  options.target = "cpu:generic";
  options.precision = lowIsBF16 ? mlir::amp::AutocastDtype::BF16 : mlir::amp::AutocastDtype::F16;
  options.policy = policyPath;
  mlir::amp::buildAmpAutocastStage(pm, options);
  (void)pm.run(*module);
  return 0;
}
