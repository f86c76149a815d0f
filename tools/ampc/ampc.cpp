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
#include "passes/PrecisionReport.h"
#include "tools/Registration.h"

namespace cl = llvm::cl;
using namespace mlir;

static cl::OptionCategory ampcCategory("ampc options");

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                                          cl::cat(ampcCategory));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                           cl::value_desc("file"), cl::init("-"),
                                           cl::cat(ampcCategory));

enum class Emit { IR, Plan, Bundle, AutocastIR, PrecisionReport, Dot };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to produce (default: bundle when -o names a .ampx file, else ir)"),
    cl::init(Emit::IR),
    cl::values(clEnumValN(Emit::IR, "ir", "the parsed, verified model IR"),
               clEnumValN(Emit::Plan, "plan", "the execution plan as JSON (docs/plan-format.md)"),
               clEnumValN(Emit::Bundle, "bundle", "a bundle file for amp-run (needs -o FILE.ampx)"),
               clEnumValN(Emit::AutocastIR, "autocast-ir",
                          "the IR after amp-autocast and amp-cast-cleanup"),
               clEnumValN(Emit::PrecisionReport, "precision-report",
                          "a per-op table of precisions, reasons and casts, with counts and "
                          "the FLOP share per precision"),
               clEnumValN(Emit::Dot, "dot", "the graph coloured by precision (Graphviz)")),
    cl::cat(ampcCategory));

//===----------------------------------------------------------------------===//
// Mixed precision (amp-autocast; docs/precision-policy.md)
//===----------------------------------------------------------------------===//

static cl::opt<std::string> precisionFlag(
    "precision", cl::desc("Low-precision dtype: f32 (autocast off), f16, bf16 or auto (bf16 "
                          "where the target supports it, else f16)"),
    cl::value_desc("f32|f16|bf16|auto"), cl::init("auto"), cl::cat(ampcCategory));
static cl::opt<std::string> policyFlag(
    "policy", cl::desc("Precision policy: pytorch, tensorflow or a POLICY.json file"),
    cl::value_desc("pytorch|tensorflow|FILE.json"), cl::init("pytorch"), cl::cat(ampcCategory));
static cl::opt<std::string> targetFlag(
    "target",
    cl::desc("Target; sets the module attribute amp.target (default: the model's, else cpu). "
             "cpu asks the compiling machine's CPU for avx512_bf16/amx_bf16; cpu:FEATURES "
             "(e.g. cpu:avx512_bf16, cpu:generic) says it explicitly"),
    cl::value_desc("cpu|cpu:FEATURES|cuda:sm_80|cuda:sm_90|reference"), cl::init(""),
    cl::cat(ampcCategory));
static cl::list<std::string> precisionOverrides(
    "precision-override",
    cl::desc("Override the precision of ops by pattern: LOC_GLOB=P or op:OP_GLOB=P, P one of "
             "f32, f16, bf16, low, off (repeatable)"),
    cl::value_desc("PATTERN=PRECISION"), cl::cat(ampcCategory));
static cl::opt<std::string> explainFlag(
    "explain",
    cl::desc("Explain the precision of the ops matching a location name or glob, an op name, "
             "FILE:LINE or #N from the precision report, instead of emitting"),
    cl::value_desc("NAME_OR_LOC"), cl::init(""), cl::cat(ampcCategory));
static cl::opt<bool> reportJson("report-json",
                                cl::desc("Print --emit=precision-report as JSON"),
                                cl::init(false), cl::cat(ampcCategory));

// Sets amp.target and runs amp-autocast + amp-cast-cleanup with the flags above.
static LogicalResult runAutocast(ModuleOp module) {
  MLIRContext* ctx = module.getContext();
  if (!targetFlag.empty())
    module->setAttr(mlir::amp::AmpDialect::kTargetAttr, StringAttr::get(ctx, targetFlag));
  else if (!module->hasAttr(mlir::amp::AmpDialect::kTargetAttr))
    module->setAttr(mlir::amp::AmpDialect::kTargetAttr, StringAttr::get(ctx, "cpu"));
  PassManager pm(ctx);
  if (failed(applyPassManagerCLOptions(pm))) return failure();
  mlir::amp::AmpAutocastPassOptions options;
  options.dtype = precisionFlag;
  options.policy = policyFlag;
  std::vector<std::string> overrides(precisionOverrides.begin(), precisionOverrides.end());
  options.overrides = overrides;
  pm.addPass(mlir::amp::createAmpAutocastPass(options));
  pm.addPass(mlir::amp::createAmpCastCleanupPass());
  return pm.run(module);
}

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
  if (stage == Emit::AutocastIR || stage == Emit::PrecisionReport || stage == Emit::Dot ||
      !explainFlag.empty()) {
    if (failed(runAutocast(*module))) return 1;
    auto output = openOutputFile(outputFilename, &error);
    if (!output) {
      llvm::errs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
      return 1;
    }
    if (!explainFlag.empty()) {
      if (failed(mlir::amp::printExplanation(*module, explainFlag, output->os()))) return 1;
    } else if (stage == Emit::PrecisionReport) {
      mlir::amp::printPrecisionReport(*module, output->os(), reportJson);
    } else if (stage == Emit::Dot) {
      mlir::amp::printPrecisionDot(*module, output->os());
    } else {
      module->print(output->os());
      output->os() << "\n";
    }
    output->keep();
    return 0;
  }
  if (emit.getNumOccurrences() == 0 && llvm::StringRef(outputFilename).ends_with(".ampx"))
    stage = Emit::Bundle;
  if (stage == Emit::Plan || stage == Emit::Bundle) {
    auto plan = mlir::amp::buildPlan(*module);
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
