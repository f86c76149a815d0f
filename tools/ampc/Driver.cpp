// The ampc compiler driver: parses and verifies a model, runs the compilation pipeline and emits
// the requested stage. Flag spellings follow the interface contract in docs/cli.md. The ampc tool
// and the Python package (python/) both call runAmpc, in process.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "codegen/PlanBuilder.h"
#include "codegen/CudaToolchain.h"
#include "codegen/Toolchain.h"
#include "codegen/emit/KernelEmitter.h"
#include "runtime/io/Sha256.h"
#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"
#include "ir/Origin.h"
#include "ir/Precision.h"
#include "runtime/io/Json.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/Provenance.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "passes/PrecisionReport.h"
#include "runtime/schema/Target.h"
#include "tools/Registration.h"
#include "ir/ParseModel.h"
#include "tools/ampc/ImportOnnx.h"
#include "tools/ampc/MemoryReport.h"
#include "tools/ampc/Driver.h"
#include "tools/ampc/DriverErrors.h"

namespace cl = llvm::cl;
using namespace mlir;

static cl::OptionCategory ampcCategory("ampc options");

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                                          cl::cat(ampcCategory));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                           cl::value_desc("file"), cl::init("-"),
                                           cl::cat(ampcCategory));

enum class Emit { IR, Plan, Bundle, AutocastIR, TrainIR, FusedIR, Kernels, Cuda, PrecisionReport, MemoryReport, Dot };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to produce (default: bundle when -o names a .ampx file, else ir)"),
    cl::init(Emit::IR),
    cl::values(clEnumValN(Emit::IR, "ir", "the parsed, verified model IR"),
               clEnumValN(Emit::IR, "mlir", "the same: the model in the amp dialect (an imported ONNX model, to keep)"),
               clEnumValN(Emit::Plan, "plan", "the execution plan as JSON (docs/plan-format.md)"),
               clEnumValN(Emit::Bundle, "bundle", "a bundle file for amp-run (needs -o FILE.ampx)"),
               clEnumValN(Emit::AutocastIR, "autocast-ir",
                          "the IR after amp-autocast and amp-cast-cleanup"),
               clEnumValN(Emit::TrainIR, "train-ir",
                          "the IR with the compiled training step (needs --train)"),
               clEnumValN(Emit::FusedIR, "fused-ir", "the final IR after amp-fuse (what codegen lowers)"),
               clEnumValN(Emit::Kernels, "kernels", "the C++ source generated for the fused kernels"),
               clEnumValN(Emit::Cuda, "cuda", "the CUDA source generated for the fused kernels"),
               clEnumValN(Emit::PrecisionReport, "precision-report",
                          "a per-op table of precisions, reasons and casts, with counts and "
                          "the FLOP share per precision"),
               clEnumValN(Emit::MemoryReport, "memory-report",
                          "bytes per buffer class, f32 vs the chosen precision (with --train: of "
                          "the training step)"),
               clEnumValN(Emit::Dot, "dot", "the graph coloured by precision (Graphviz)")),
    cl::cat(ampcCategory));

//===----------------------------------------------------------------------===//
// Mixed precision (amp-autocast; docs/precision-policy.md)
//===----------------------------------------------------------------------===//

static cl::opt<bool> fuseFlag("fuse", cl::desc("Fuse the gradient pipeline (amp-fuse-grad-pipeline) and elementwise chains into generated kernels (amp-fuse)"),
                              cl::init(true), cl::cat(ampcCategory));

static cl::opt<mlir::amp::GemmEpilogueMode> gemmEpiloguesFlag(
    "gemm-epilogues",
    cl::desc("cuda targets: where activation and bias gradients run (amp-select-gemm-epilogues)"),
    cl::values(clEnumValN(mlir::amp::GemmEpilogueMode::Exact, "exact", "generated kernels, the reference's bits (default)"),
               clEnumValN(mlir::amp::GemmEpilogueMode::Cublaslt, "cublaslt",
                          "cuBLASLt's training epilogues (RELU_AUX/DRELU_BGRAD, GELU_AUX/DGELU_BGRAD, BGRADA/B): "
                          "fewer passes over memory, within summation-order bounds")),
    cl::init(mlir::amp::GemmEpilogueMode::Exact), cl::cat(ampcCategory));

static cl::opt<bool> nativeKernelsFlag(
    "native-kernels",
    cl::desc("Compile the fused kernels into the bundle: for cpu targets x86-64-v3 and -v4 shared "
             "objects (amp-run picks one at run time), for cuda:sm_80/sm_90 a cubin and PTX (NVRTC). "
             "Off: devices interpret the fused bodies"),
    cl::init(true), cl::cat(ampcCategory));
static cl::opt<std::string> cxxFlag("cxx", cl::desc("C++ compiler for the fused kernels (default: $CXX or c++)"),
                                    cl::value_desc("path"), cl::init(""), cl::cat(ampcCategory));

// The module's amp.target, typed ("cpu" when unset, as ampc defaults it); an error names a bad one.
static std::optional<::amp::rt::Target> moduleTarget(ModuleOp module) {
  auto attr = module->getAttrOfType<StringAttr>(mlir::amp::AmpDialect::kTargetAttr);
  std::string error;
  auto target = ::amp::rt::Target::parse(attr ? attr.getValue() : "cpu", error);
  if (!target) module.emitError("ampc: ") << error;
  return target;
}

// The generated kernels' C++ source and, for bundles on cpu targets, their compiled code objects.
static LogicalResult attachNativeKernels(ModuleOp module, ::amp::rt::Plan& plan, bool compile, std::string* source) {
  bool anyFused = false;
  for (const auto& e : plan.entries)
    for (const auto& st : e.steps) anyFused |= st.is(::amp::rt::OpCode::Fused);
  std::string text, error;
  if (!::amp::codegen::emitCpuSource(plan, text, error)) {
    module.emitError("codegen: ") << error;
    return failure();
  }
  if (source) *source = text;
  auto target = moduleTarget(module);
  if (!target) return failure();
  if (!compile || !anyFused || !nativeKernelsFlag || !target->isCpu()) return success();
  std::string cxx = cxxFlag;
  if (cxx.empty()) cxx = std::getenv("CXX") ? std::getenv("CXX") : "c++";
  const std::vector<std::string> isas = {"x86-64-v3", "x86-64-v4"};
  std::vector<std::vector<uint8_t>> objects;
  if (!::amp::codegen::compileSharedObjects(cxx, text, isas, objects, error)) {
    module.emitError("ampc: ") << error << "\n(--native-kernels=false writes a bundle whose fused kernels are "
                                            "interpreted instead)";
    return failure();
  }
  for (size_t i = 0; i < isas.size(); ++i) {
    ::amp::rt::CodeObject code;
    code.isa = isas[i];
    code.bytes = std::move(objects[i]);
    code.sha256 = ::amp::rt::sha256Hex(code.bytes.data(), code.bytes.size());
    plan.code.push_back(std::move(code));
  }
  return success();
}

// The CUDA flavour of the kernels: generated (and the steps annotated with their CUDA symbols)
// for --emit=cuda and for cuda targets; for a bundle on a cuda:sm_NN target also compiled with
// NVRTC into the bundle.
static LogicalResult attachCudaKernels(ModuleOp module, ::amp::rt::Plan& plan, bool compile, std::string* source) {
  auto target = moduleTarget(module);
  if (!target) return failure();
  const bool cudaTarget = target->isCuda();
  if (!source && !cudaTarget) return success();
  std::string text, error;
  if (!::amp::codegen::emitCudaSource(plan, text, error)) {
    module.emitError("codegen (cuda): ") << error;
    return failure();
  }
  if (source) *source = text;
  // Every cuda bundle gets a code object: besides the fused kernels it holds the device's library
  // kernels (losses, reductions, norms, the scaler and optimizers) that any model needs.
  if (!compile || !cudaTarget || !nativeKernelsFlag) return success();
  const std::string arch = target->cudaArch();
  if (!::amp::codegen::isSupportedCudaArch(arch)) {
    module.emitError("ampc: target cuda:") << arch << ": the CUDA kernels compile for cuda:sm_80 and cuda:sm_90";
    return failure();
  }
  ::amp::codegen::CudaCode code;
  if (!::amp::codegen::compileCuda(text, "ampc-kernels.cu", arch, code, error)) {
    module.emitError("ampc: ") << error << "\n(ampc --emit=cuda prints the source the log's line numbers refer to; "
                                            "--native-kernels=false writes a bundle without code objects)";
    return failure();
  }
  auto add = [&](const char* format, std::vector<uint8_t> bytes) {
    ::amp::rt::CodeObject object;
    object.isa = arch;
    object.format = format;
    object.bytes = std::move(bytes);
    object.sha256 = ::amp::rt::sha256Hex(object.bytes.data(), object.bytes.size());
    plan.code.push_back(std::move(object));
  };
  add("cubin", std::move(code.cubin));
  add("ptx", std::vector<uint8_t>(code.ptx.begin(), code.ptx.end()));
  plan.metadata.emplace_back("cuda_toolkit", ::amp::codegen::nvrtcVersionString());
  return success();
}


// Defaults are the passes' (Passes.td), read from their generated option structs, except where
// ampc deliberately differs (kAmpcOptimizer, kAmpcSgdMomentum in passes/Pipeline.h).
static const mlir::amp::AmpAutocastPassOptions kAutocastDefaults;
static const mlir::amp::AmpLossScalingPassOptions kScalingDefaults;
static const mlir::amp::AmpOptimizerPassOptions kOptimizerDefaults;

static cl::opt<mlir::amp::AutocastDtype> precisionFlag(
    "precision", cl::desc("Low-precision dtype (see docs/precision-policy.md)"),
    cl::init(kAutocastDefaults.dtype), mlir::amp::autocastDtypeValues(), cl::cat(ampcCategory));
static cl::opt<std::string> policyFlag(
    "policy", cl::desc("Precision policy: pytorch, tensorflow or a POLICY.json file"),
    cl::value_desc("pytorch|tensorflow|FILE.json"), cl::init(kAutocastDefaults.policy), cl::cat(ampcCategory));
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

//===----------------------------------------------------------------------===//
// Training (amp-autodiff, amp-loss-scaling, amp-optimizer, amp-verify; docs/training-ir.md)
//===----------------------------------------------------------------------===//

static cl::opt<bool> stripDebugInfoFlag(
    "strip-debuginfo",
    cl::desc("Drop source locations before building the plan: the bundle names no file of the build machine "
             "(its steps carry no `loc`); nothing else in the plan changes"),
    cl::init(false), cl::cat(ampcCategory));
static cl::opt<bool> trainFlag("train", cl::desc("Compile the training step (train_step entry)"),
                               cl::init(false), cl::cat(ampcCategory));
static cl::opt<mlir::amp::OptimizerKind> optimizerFlag("optimizer", cl::desc("Optimizer on the f32 master weights"),
                                                       cl::init(mlir::amp::kAmpcOptimizer),
                                                       mlir::amp::optimizerKindValues(), cl::cat(ampcCategory));
static cl::opt<double> lrFlag("lr", cl::desc("Base learning rate"), cl::init(kOptimizerDefaults.lr),
                              cl::cat(ampcCategory));
static cl::opt<double> weightDecayFlag(
    "weight-decay", cl::desc("Weight decay (L2 for sgd/adam, decoupled for adamw; default: PyTorch's)"),
    cl::init(kOptimizerDefaults.weightDecay), cl::cat(ampcCategory));
static cl::opt<double> momentumFlag("momentum", cl::desc("SGD momentum"), cl::init(mlir::amp::kAmpcSgdMomentum),
                                    cl::cat(ampcCategory));
static cl::opt<bool> nesterovFlag("nesterov", cl::desc("SGD Nesterov momentum"),
                                  cl::init(kOptimizerDefaults.nesterov), cl::cat(ampcCategory));
static cl::opt<double> clipFlag("clip-grad-norm",
                                cl::desc("Clip the unscaled gradients to this global norm (0: off)"),
                                cl::init(kOptimizerDefaults.clipGradNorm), cl::cat(ampcCategory));
static cl::opt<int64_t> accumulateFlag("accumulate", cl::desc("Micro-batches per optimizer step"),
                                       cl::init(kOptimizerDefaults.accumulate), cl::cat(ampcCategory));
static cl::opt<mlir::amp::WeightCopyMode> weightCopiesFlag(
    "weight-copies",
    cl::desc("Where the low-precision copy of each master weight lives (--emit=memory-report shows the choice)"),
    cl::init(mlir::amp::WeightCopyMode::Auto), mlir::amp::weightCopyModeValues(), cl::cat(ampcCategory));
static cl::opt<mlir::amp::OptimizerStateType> optimizerStateFlag(
    "optimizer-state",
    cl::desc("Adam's moments: f32 (default, as PyTorch) or bf16, stored with stochastic rounding (opt-in: half the "
             "optimizer state; docs/training-ir.md gives its accuracy cost)"),
    cl::init(mlir::amp::OptimizerStateType::F32), mlir::amp::optimizerStateTypeValues(), cl::cat(ampcCategory));
static cl::opt<std::string> rematFlag(
    "remat", cl::desc("auto (default with --train) or off: recompute cheap forward values (casts, elementwise math, transposes, "
                      "softmax, norms) in the backward while the step's memory peak falls, at most 2% of its FLOPs, "
                      "and only where the estimate falls (amp-remat)"),
    cl::value_desc("auto|off"), cl::init("auto"), cl::cat(ampcCategory));
static cl::opt<std::string> memoryBudgetFlag(
    "memory-budget",
    cl::desc("Recompute until the training step's estimated memory (arguments + live temporaries) is at most "
             "this many bytes (suffix k, m or g: KiB, MiB, GiB); an error when it cannot"),
    cl::value_desc("BYTES"), cl::init(""), cl::cat(ampcCategory));
static cl::opt<bool> dataParallelFlag(
    "data-parallel",
    cl::desc("Data-parallel training step: gradients (mean), found_inf (max) and the loss reduced across the ranks "
             "of `mpirun -np N amp-run` (docs/data-parallel.md)"),
    cl::init(false), cl::cat(ampcCategory));
static cl::opt<double> bucketMbFlag("bucket-mb", cl::desc("Data-parallel: gradient MiB per all-reduce bucket (default 25)"),
                                    cl::init(25.0), cl::cat(ampcCategory));
static cl::opt<mlir::amp::Precision> reducePrecisionFlag(
    "reduce-precision", cl::desc("Data-parallel: the precision gradients are reduced in"),
    cl::init(mlir::amp::AmpDataParallelPassOptions().reducePrecision), mlir::amp::reducePrecisionValues(),
    cl::cat(ampcCategory));
static cl::opt<bool> shardOptimizerFlag(
    "shard-optimizer",
    cl::desc("Data-parallel, ZeRO stage 1: each rank keeps and updates only its chunk of the optimizer state; "
             "needs --world-size"),
    cl::init(false), cl::cat(ampcCategory));
static cl::opt<int64_t> worldSizeFlag("world-size",
                                      cl::desc("--shard-optimizer: the number of ranks the bundle will run on"),
                                      cl::init(0), cl::cat(ampcCategory));
static cl::opt<std::string> lossScaleFlag(
    "loss-scale",
    cl::desc("Loss scaling: dynamic, static:S, none, or auto (dynamic for f16, none otherwise)"),
    cl::value_desc("dynamic|static:S|none|auto"),
    cl::init(mlir::amp::stringifyEnum(kScalingDefaults.mode).str()), cl::cat(ampcCategory));

// A help text that names the default it shows.
static std::string withDefault(const char* text, double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return std::string(text) + " (default " + buf + ")";
}

// GradScaler's options, with PyTorch's names and defaults (torch.cuda.amp.GradScaler).
static const std::string initScaleHelp =
    withDefault("Dynamic loss scaling: the initial scale", kScalingDefaults.initScale);
static const std::string growthFactorHelp = withDefault(
    "Dynamic loss scaling: factor after growth-interval clean steps, > 1", kScalingDefaults.growthFactor);
static const std::string backoffFactorHelp =
    withDefault("Dynamic loss scaling: factor on an overflow step, in (0, 1)", kScalingDefaults.backoffFactor);
static const std::string growthIntervalHelp = withDefault(
    "Dynamic loss scaling: consecutive clean steps before growing", kScalingDefaults.growthInterval);
static cl::opt<double> initScaleFlag("init-scale", cl::desc(initScaleHelp), cl::init(kScalingDefaults.initScale),
                                     cl::cat(ampcCategory));
static cl::opt<double> growthFactorFlag("growth-factor", cl::desc(growthFactorHelp),
                                        cl::init(kScalingDefaults.growthFactor), cl::cat(ampcCategory));
static cl::opt<double> backoffFactorFlag("backoff-factor", cl::desc(backoffFactorHelp),
                                         cl::init(kScalingDefaults.backoffFactor), cl::cat(ampcCategory));
static cl::opt<int64_t> growthIntervalFlag("growth-interval", cl::desc(growthIntervalHelp),
                                           cl::init(kScalingDefaults.growthInterval), cl::cat(ampcCategory));
static cl::opt<mlir::amp::LrScheduleKind> scheduleFlag("schedule", cl::desc("Learning-rate schedule"),
                                                       cl::init(kOptimizerDefaults.schedule),
                                                       mlir::amp::lrScheduleKindValues(), cl::cat(ampcCategory));
static cl::opt<int64_t> warmupFlag("warmup", cl::desc("Linear warmup steps"), cl::init(kOptimizerDefaults.warmup),
                                   cl::cat(ampcCategory));
static cl::opt<int64_t> totalStepsFlag("total-steps",
                                       cl::desc("Cosine schedule: the step at which the rate reaches 0"),
                                       cl::init(0), cl::cat(ampcCategory));

// What amp-remat recomputed in @train_step (its clones carry amp.origin = "remat"), and what that
// costs against the step's FLOPs.
static std::string rematSummary(ModuleOp module) {
  if (rematFlag == "off" && memoryBudgetFlag.empty()) return "";
  int64_t ops = 0, flops = 0, stepFlops = 0;
  module.walk([&](func::FuncOp f) {
    auto entry = f->getAttrOfType<StringAttr>(mlir::amp::AmpDialect::kEntryAttr);
    if (!entry || entry.getValue() != "train_step") return;
    f.walk([&](Operation* op) {
      if (op->getNumRegions() != 0) return;  // a fused region's body ops are counted one by one
      const int64_t n = mlir::amp::estimateFlops(op);
      stepFlops += n;
      if (mlir::amp::getOrigin(op) == mlir::amp::Origin::Remat) ++ops, flops += n;
    });
  });
  char line[256];
  std::snprintf(line, sizeof line,
                "Recomputed in the backward (amp-remat): %lld ops, %.3f MFLOP, %.2f%% of the step's %.1f MFLOP.\n",
                static_cast<long long>(ops), flops / 1e6, stepFlops ? 100.0 * flops / stepFlops : 0.0, stepFlops / 1e6);
  return line;
}

// "1048576", "512k", "1.5m", "2g" (binary units), as a positive byte count.
static std::optional<int64_t> parseBytes(llvm::StringRef text) {
  text = text.trim();
  double scale = 1;
  std::string lower = text.lower();
  llvm::StringRef s(lower);
  s.consume_back("ib") || s.consume_back("b");
  if (s.consume_back("k")) scale = 1024.0;
  else if (s.consume_back("m")) scale = 1024.0 * 1024.0;
  else if (s.consume_back("g")) scale = 1024.0 * 1024.0 * 1024.0;
  double value = 0;
  if (s.empty() || s.getAsDouble(value) || !(value > 0) || value * scale > 9.0e18) return std::nullopt;
  return static_cast<int64_t>(value * scale);
}

// The training flags as the pipeline's options. Only relations between flags are checked here;
// each value is checked by the pass that takes it, which reports a bad one as a diagnostic.
static LogicalResult trainOptionsFromFlags(mlir::amp::AmpPipelineOptions& options) {
  auto flagError = [](const llvm::Twine& message) {
    mlir::amp::driverErrs() << "ampc: " << message << "\n";
    return failure();
  };
  // --remat and --memory-budget were checked in main.
  options.remat = rematFlag == "auto";
  if (std::optional<int64_t> budget = parseBytes(memoryBudgetFlag)) options.memoryBudget = *budget;
  if (scheduleFlag == mlir::amp::LrScheduleKind::Cosine && totalStepsFlag <= 0)
    return flagError("--schedule=cosine needs --total-steps=N (the step at which the rate reaches 0)");
  using mlir::amp::LossScalingMode;
  std::string mode = lossScaleFlag;
  if (llvm::StringRef(mode).starts_with("static:")) {
    double s = 0;
    if (llvm::StringRef(mode).drop_front(7).getAsDouble(s))
      return flagError("--loss-scale=static:S needs a positive number S, got '" + mode + "'");
    options.lossScaling = LossScalingMode::Static;
    options.initScale = s;
  } else if (auto m = mlir::amp::symbolizeLossScalingMode(mode); m && *m != LossScalingMode::Static) {
    options.lossScaling = *m;
  } else {
    return flagError("--loss-scale must be dynamic, static:S, none or auto, got '" + mode + "'");
  }
  // GradScaler's flags configure dynamic scaling; a mode that cannot use one is a contradiction.
  bool scalerFlags = initScaleFlag.getNumOccurrences() || growthFactorFlag.getNumOccurrences() ||
                     backoffFactorFlag.getNumOccurrences() || growthIntervalFlag.getNumOccurrences();
  if (scalerFlags && (options.lossScaling == LossScalingMode::None || options.lossScaling == LossScalingMode::Static))
    return flagError("--init-scale, --growth-factor, --backoff-factor and --growth-interval configure dynamic "
                     "loss scaling; --loss-scale=" + mode + " does not use them");
  // Their ranges are amp-loss-scaling's to check (#amp.loss_scaling's verifier).
  if (options.lossScaling != LossScalingMode::Static) {
    options.initScale = initScaleFlag.getValue();
    options.growthFactor = growthFactorFlag.getValue();
    options.backoffFactor = backoffFactorFlag.getValue();
    options.growthInterval = growthIntervalFlag.getValue();
  }
  options.optimizer = optimizerFlag.getValue();
  options.lr = lrFlag.getValue();
  options.momentum = momentumFlag.getValue();
  options.nesterov = nesterovFlag.getValue();
  // Unset means PyTorch's default for the optimizer; a negative value given by the user is an error,
  // not a request for the default.
  if (weightDecayFlag.getNumOccurrences() &&
      (!(weightDecayFlag >= 0.0) || !std::isfinite(weightDecayFlag.getValue())))
    return flagError("--weight-decay must be finite and >= 0, got " + std::to_string(weightDecayFlag));
  options.weightDecay = weightDecayFlag.getValue();
  options.clipGradNorm = clipFlag.getValue();
  options.schedule = scheduleFlag.getValue();
  options.warmup = warmupFlag.getValue();
  if (totalStepsFlag > 0) options.totalSteps = totalStepsFlag.getValue();
  options.accumulate = accumulateFlag.getValue();
  options.weightCopies = weightCopiesFlag.getValue();
  options.optimizerState = optimizerStateFlag.getValue();
  options.policy = policyFlag.getValue();
  if (!dataParallelFlag && (bucketMbFlag.getNumOccurrences() || reducePrecisionFlag.getNumOccurrences()))
    return flagError("--bucket-mb and --reduce-precision configure --data-parallel, which is not given");
  if (!(bucketMbFlag > 0) || bucketMbFlag > 1024 * 1024)
    return flagError("--bucket-mb must be in (0, 2^20], got " + std::to_string(bucketMbFlag));
  if (shardOptimizerFlag && !dataParallelFlag)
    return flagError("--shard-optimizer needs --data-parallel (it shards the optimizer state across the ranks)");
  if (worldSizeFlag.getNumOccurrences() && !shardOptimizerFlag)
    return flagError("--world-size configures --shard-optimizer, which is not given");
  if (shardOptimizerFlag && (worldSizeFlag < 1 || worldSizeFlag > 65536))
    return flagError("--shard-optimizer needs --world-size=N with N in [1, 65536] (the ranks of mpirun -np N), got " +
                     std::to_string(worldSizeFlag));
  options.dataParallel = dataParallelFlag.getValue();
  options.shardWorldSize = shardOptimizerFlag ? worldSizeFlag.getValue() : 0;
  options.bucketBytes = std::max<int64_t>(1, static_cast<int64_t>(bucketMbFlag * 1024 * 1024));
  options.reducePrecision = reducePrecisionFlag.getValue();
  return success();
}

// How far a request compiles: autocast (every stage past the parsed IR; --precision=f32 makes it a
// no-op), training (--train), fusion (the IR codegen lowers).
struct Stages {
  bool autocast = false, train = false, fuse = false;
};

// Sets amp.target, then runs the stages asked for as one pass pipeline, so --mlir-timing and
// --mlir-print-ir-after-all see ampc's whole compilation. The passes stamp the recipe they decided
// on the module (amp.precision, amp.optimizer, ...); the plan builder records it in the bundle.
static LogicalResult compile(ModuleOp module, Stages stages, mlir::amp::AutocastDtype precision,
                             bool withBudget = true) {
  MLIRContext* ctx = module.getContext();
  mlir::amp::AmpPipelineOptions options;
  if (stages.train && failed(trainOptionsFromFlags(options))) return failure();
  if (!withBudget) options.memoryBudget = 0;
  options.precision = precision;
  options.policy = policyFlag.getValue();
  for (const std::string& o : precisionOverrides) options.overrides.push_back(o);
  if (!targetFlag.empty())
    module->setAttr(mlir::amp::AmpDialect::kTargetAttr, StringAttr::get(ctx, targetFlag));
  else if (!module->hasAttr(mlir::amp::AmpDialect::kTargetAttr))
    module->setAttr(mlir::amp::AmpDialect::kTargetAttr, StringAttr::get(ctx, "cpu"));

  PassManager pm(ctx);
  if (failed(applyPassManagerCLOptions(pm))) return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  pm.addPass(mlir::amp::createAmpVerifyModelPass());
  if (stages.autocast) mlir::amp::buildAmpAutocastStage(pm, options);
  if (stages.train) mlir::amp::buildAmpTrainStage(pm, options);
  options.fuse = fuseFlag.getValue();
  options.gemmEpilogues = gemmEpiloguesFlag.getValue();
  if (gemmEpiloguesFlag == mlir::amp::GemmEpilogueMode::Cublaslt) {
    auto target = moduleTarget(module);
    if (!target) return failure();
    if (!target->isCuda())
      return module.emitError("ampc: --gemm-epilogues=cublaslt is for cuda targets (--target=cuda:sm_80 or "
                              "cuda:sm_90); the target is '")
             << module->getAttrOfType<StringAttr>(mlir::amp::AmpDialect::kTargetAttr).getValue() << "'";
  }
  if (stages.fuse) mlir::amp::buildAmpFusionStage(pm, options);
  if (stripDebugInfoFlag) pm.addPass(mlir::createStripDebugInfoPass());
  return pm.run(module);
}

int mlir::amp::runAmpc(int argc, const char* const* argv, llvm::raw_ostream& errs) {
  ScopedDriverErrs scopedErrs(errs);
  // MLIR's command-line options are registered once per process; every call starts from the
  // defaults (the Python package compiles many models in one process).
  static const bool registered = [] {
    registerAsmPrinterCLOptions();
    registerMLIRContextCLOptions();
    registerPassManagerCLOptions();
    registerDefaultTimingManagerCLOptions();  // --mlir-timing, per pipeline stage
    // libLLVM's own flags live in the general category; --help-hidden still lists MLIR's.
    cl::HideUnrelatedOptions({&ampcCategory, &mlir::amp::onnxImportCategory()});
    return true;
  }();
  (void)registered;
  cl::ResetAllOptionOccurrences();
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "ampc: compiles amp models (mixed-precision training graphs)\n\n"
          "  ampc MODEL.mlir --emit=precision-report        why each op runs in its precision\n"
          "  ampc MODEL.mlir --train -o MODEL.ampx         a training bundle for amp-run\n\n"
          "MLIR's standard flags (--mlir-print-ir-after-all, --mlir-timing, ...) are accepted;\n"
          "--help-hidden lists them.\n",
          &errs))
    return 1;

  DialectRegistry registry;
  mlir::amp::registerAmpDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at source lines; a dump of the whole module helps nobody.
  context.printOpOnDiagnostic(false);

  std::string error;
  auto file = openInputFile(inputFilename, &error);
  if (!file) {
    mlir::amp::driverErrs() << "ampc: cannot read '" << inputFilename << "': " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context, errs);
  OwningOpRef<ModuleOp> module = mlir::amp::loadModel(sourceMgr, &context);
  if (!module) return 1;  // the parser or importer has reported a located diagnostic

  // The f32 baseline of the memory report: the same model through the same pipeline.
  OwningOpRef<ModuleOp> baseline = emit == Emit::MemoryReport ? module->clone() : nullptr;

  Emit stage = emit;
  if (emit.getNumOccurrences() == 0 && llvm::StringRef(outputFilename).ends_with(".ampx"))
    stage = Emit::Bundle;
  if (stage == Emit::TrainIR && !trainFlag) {
    mlir::amp::driverErrs() << "ampc: --emit=train-ir needs --train\n";
    return 1;
  }
  if (dataParallelFlag && !trainFlag) {
    mlir::amp::driverErrs() << "ampc: --data-parallel needs --train (it makes the training step data-parallel)\n";
    return 1;
  }
  if ((rematFlag.getNumOccurrences() || memoryBudgetFlag.getNumOccurrences()) && !trainFlag) {
    mlir::amp::driverErrs() << "ampc: --remat and --memory-budget need --train (they recompute forward values in the backward)\n";
    return 1;
  }
  if (rematFlag != "off" && rematFlag != "auto") {
    mlir::amp::driverErrs() << "ampc: --remat must be off or auto, got '" << rematFlag << "'\n";
    return 1;
  }
  if (!memoryBudgetFlag.empty() && !parseBytes(memoryBudgetFlag)) {
    mlir::amp::driverErrs() << "ampc: --memory-budget must be a positive byte count such as 4194304, 512k or 2m, got '"
                 << memoryBudgetFlag << "'\n";
    return 1;
  }
  Stages stages;
  stages.autocast = stage != Emit::IR || !explainFlag.empty();
  stages.train = stages.autocast && trainFlag && stage != Emit::AutocastIR;
  stages.fuse = stage == Emit::FusedIR || stage == Emit::Kernels || stage == Emit::Cuda || stage == Emit::Plan ||
                stage == Emit::Bundle || stage == Emit::MemoryReport;
  if (failed(compile(*module, stages, precisionFlag))) return 1;
  if (stage == Emit::AutocastIR || stage == Emit::TrainIR || stage == Emit::FusedIR || stage == Emit::PrecisionReport ||
      stage == Emit::Dot || !explainFlag.empty()) {
    auto output = openOutputFile(outputFilename, &error);
    if (!output) {
      mlir::amp::driverErrs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
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
  if (stage == Emit::MemoryReport) {
    // The baseline is f32 with the same --remat (both sides recompute alike), without the budget.
    if (failed(compile(*baseline, stages, mlir::amp::AutocastDtype::F32, /*withBudget=*/false))) return 1;
    auto ampPlan = mlir::amp::buildPlan(*module);
    auto f32Plan = mlir::amp::buildPlan(*baseline);
    if (failed(ampPlan) || failed(f32Plan)) return 1;
    auto output = openOutputFile(outputFilename, &error);
    if (!output) {
      mlir::amp::driverErrs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
      return 1;
    }
    output->os() << ::amp::rt::renderMemoryReport(*f32Plan, *ampPlan, trainFlag ? "train_step" : "eval");
    if (trainFlag) output->os() << rematSummary(*module);
    output->keep();
    return 0;
  }
  if (stage == Emit::Plan || stage == Emit::Bundle || stage == Emit::Kernels || stage == Emit::Cuda) {
    auto plan = mlir::amp::buildPlan(*module, /*eraseLoweredFunctions=*/true);
    if (failed(plan)) return 1;
    std::string kernels, cudaKernels;
    if (failed(attachNativeKernels(*module, *plan, stage == Emit::Bundle, &kernels)) ||
        failed(attachCudaKernels(*module, *plan, stage == Emit::Bundle, stage == Emit::Cuda ? &cudaKernels : nullptr)))
      return 1;
    if (stage == Emit::Kernels || stage == Emit::Cuda) {
      auto output = openOutputFile(outputFilename, &error);
      if (!output) {
        mlir::amp::driverErrs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
        return 1;
      }
      output->os() << (stage == Emit::Cuda ? cudaKernels : kernels);
      output->keep();
      return 0;
    }
    if (stage == Emit::Bundle) {
      if (outputFilename == "-") {
        mlir::amp::driverErrs() << "ampc: --emit=bundle needs -o FILE.ampx\n";
        return 1;
      }
      if (auto status = ::amp::rt::writeBundle(outputFilename, *plan); !status.ok()) {
        mlir::amp::driverErrs() << "ampc: " << std::string(status.message()) << "\n";
        return 1;
      }
      // Authenticated under the user's key, so that amp-run loads its native code
      // (docs/plan-format.md, "Authentication"). Without a key the bundle still works, interpreted.
      auto key = ::amp::rt::readOrCreateUserKey();
      absl::Status sealed = key.ok() ? ::amp::rt::sealBundle(outputFilename, *key) : key.status();
      if (!sealed.ok())
        mlir::amp::driverErrs() << "ampc: warning: " << outputFilename << " is not authenticated: "
                     << std::string(sealed.message())
                     << "; amp-run will interpret its fused kernels unless given --trust-native-code\n";
      return 0;
    }
    auto output = openOutputFile(outputFilename, &error);
    if (!output) {
      mlir::amp::driverErrs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
      return 1;
    }
    std::vector<::amp::rt::NamedTensorRef> tensors;
    ::amp::rt::writePlanInPieces(*plan, &tensors, [&](std::string_view piece) { output->os() << piece; }, /*indent=*/2);
    output->os() << "\n";
    output->keep();
    return 0;
  }

  auto output = openOutputFile(outputFilename, &error);
  if (!output) {
    mlir::amp::driverErrs() << "ampc: cannot write '" << outputFilename << "': " << error << "\n";
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
