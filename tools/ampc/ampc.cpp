// ampc: the ampc compiler driver. Parses and verifies a model, runs the compilation pipeline and
// emits the requested stage. Flag spellings follow the interface contract in docs/cli.md.
#include "codegen/PlanBuilder.h"
#include "ir/AmpDialect.h"
#include "runtime/io/Json.h"
#include "runtime/plan/Bundle.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "tools/Registration.h"

namespace cl = llvm::cl;
using namespace mlir;

static cl::OptionCategory ampcCategory("ampc options");

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                                          cl::cat(ampcCategory));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                           cl::value_desc("file"), cl::init("-"),
                                           cl::cat(ampcCategory));

enum class Emit { IR, Plan, Bundle };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to produce (default: bundle when -o names a .ampx file, else ir)"),
    cl::init(Emit::IR),
    cl::values(clEnumValN(Emit::IR, "ir", "the parsed, verified model IR"),
               clEnumValN(Emit::Plan, "plan", "the execution plan as JSON (docs/plan-format.md)"),
               clEnumValN(Emit::Bundle, "bundle", "a bundle file for amp-run (needs -o FILE.ampx)")),
    cl::cat(ampcCategory));

int main(int argc, char** argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&ampcCategory, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(argc, argv,
                              "ampc: compiles amp models (mixed-precision training graphs)\n");

  DialectRegistry registry;
  mlir::amp::registerAmpDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  auto file = openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << "ampc: cannot read '" << inputFilename << "': " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module) return 1;  // the parser has reported a located diagnostic

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm))) return 1;
  pm.addPass(mlir::amp::createAmpVerifyModelPass());
  if (failed(pm.run(*module))) return 1;

  Emit stage = emit;
  if (emit.getNumOccurrences() == 0 && llvm::StringRef(outputFilename).ends_with(".ampx"))
    stage = Emit::Bundle;
  if (stage == Emit::Plan || stage == Emit::Bundle) {
    auto plan = mlir::amp::buildForwardPlan(*module);
    if (failed(plan)) return 1;
    if (stage == Emit::Bundle) {
      if (outputFilename == "-") {
        llvm::errs() << "ampc: --emit=bundle needs -o FILE.ampx\n";
        return 1;
      }
      if (auto status = ::amp::rt::writeBundle(outputFilename, *plan); !status.ok()) {
        llvm::errs() << "ampc: " << std::string(status.message()) << "\n";
        return 1;
      }
      return 0;
    }
    auto output = openOutputFile(outputFilename, &error);
    if (!output) {
      llvm::errs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
      return 1;
    }
    std::vector<::amp::rt::NamedTensorRef> tensors;
    output->os() << ::amp::rt::writeJson(::amp::rt::planToJson(*plan, &tensors), 2) << "\n";
    output->keep();
    return 0;
  }

  auto output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
