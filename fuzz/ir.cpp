// The MLIR parser (with the amp dialect's custom syntax, attributes and verifiers) and
// amp-verify-model on arbitrary text; a module that parses must print and parse again (custom
// printers and parsers agree). Mutations are structure-aware (fuzz/ModelMutator.h) three times
// in four.
#include <cstdlib>
#include <random>

#include "fuzz/MlirCommon.h"
#include "fuzz/ModelMutator.h"
#include "ir/ParseModel.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

namespace {
amp::fuzz::FuzzContext contexts(2000);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlir::MLIRContext& ctx = contexts.get();
  // MLIR's lexer reads up to a terminating NUL, as every MemoryBuffer it parses has: a copy.
  const std::string source(reinterpret_cast<const char*>(data), size);
  llvm::StringRef text(source);
  if (amp::fuzz::hitsKnownMlirBug(text)) return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::amp::parseModel(text, "fuzz.mlir", &ctx);
  if (!module) return 0;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  os.flush();
  if (!mlir::parseSourceString<mlir::ModuleOp>(printed, &ctx, "printed.mlir")) {
    llvm::errs() << "a module that parsed does not parse after printing:\n" << printed << "\n";
    std::abort();
  }
  mlir::PassManager pm(&ctx);
  pm.addPass(mlir::amp::createAmpVerifyModelPass());
  (void)pm.run(*module);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  static const std::vector<std::string> ops = amp::fuzz::ampOpNames(contexts.get());
  if (seed % 4 == 0) return LLVMFuzzerMutate(data, size, maxSize);
  return amp::fuzz::mutateModel(data, size, maxSize, seed / 4, ops);
}
