// The whole of ampc on arbitrary text: parse, amp-verify-model, amp-autocast, the training
// stage (amp-autodiff, amp-loss-scaling, amp-grads-entry, amp-optimizer, amp-verify), amp-fuse,
// the plan builder, the plan's JSON round trip (planFromJson must accept what planToJson wrote)
// and the C++ kernel emitter; then a session on each device prepares every entry of the plan.
//
// The pipeline's options come from an optional first line
//   // ampc-fuzz: precision=bf16 train=1 optimizer=sgd loss-scaling=dynamic clip=1 accumulate=2 ...
// (the fuzzer mutates it like the rest); without one: precision=f16, train=1, adamw.
// Mutations are structure-aware (fuzz/ModelMutator.h) three times in four.
#include <cmath>
#include <cstdlib>
#include <random>

#include "codegen/PlanBuilder.h"
#include "codegen/emit/KernelEmitter.h"
#include "fuzz/FuzzCommon.h"
#include "fuzz/MlirCommon.h"
#include "fuzz/ModelMutator.h"
#include "ir/ParseModel.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"
#include "runtime/devices/Devices.h"

namespace {

amp::fuzz::FuzzContext contexts(500);

// Reads the options line; false when an option is out of the range ampc's flags accept.
bool readOptions(llvm::StringRef text, mlir::amp::AmpPipelineOptions& o) {
  o.target = "cpu:generic";
  o.precision = mlir::amp::AutocastDtype::F16;
  o.train = true;
  llvm::StringRef line = text.split('\n').first;
  if (!line.consume_front("// ampc-fuzz:")) return true;
  llvm::SmallVector<llvm::StringRef> words;
  line.split(words, ' ', -1, false);
  for (llvm::StringRef w : words) {
    auto [k, v] = w.split('=');
    double d = 0;
    int64_t i = 0;
    // The enum-typed options take their ODS spellings (ampc's flags accept the same ones).
    if (k == "precision") {
      if (auto e = mlir::amp::symbolizeAutocastDtype(v)) o.precision = *e;
      else return false;
    } else if (k == "policy") o.policy = v.str();
    else if (k == "target") o.target = v.str();
    else if (k == "optimizer") {
      if (auto e = mlir::amp::symbolizeOptimizerKind(v)) o.optimizer = *e;
      else return false;
    } else if (k == "loss-scaling") {
      if (auto e = mlir::amp::symbolizeLossScalingMode(v)) o.lossScaling = *e;
      else return false;
    } else if (k == "schedule") {
      if (auto e = mlir::amp::symbolizeLrScheduleKind(v)) o.schedule = *e;
      else return false;
    }
    else if (k == "override") o.overrides.push_back(v.str());
    else if (k == "train") o.train = v == "1";
    else if (k == "fuse") o.fuse = v == "1";
    else if (k == "nesterov") o.nesterov = v == "1";
    else if (k == "clip" && !v.getAsDouble(d) && d >= 0 && std::isfinite(d)) o.clipGradNorm = d;
    else if (k == "lr" && !v.getAsDouble(d) && std::isfinite(d)) o.lr = d;
    else if (k == "weight-decay" && !v.getAsDouble(d) && std::isfinite(d)) o.weightDecay = d;
    else if (k == "momentum" && !v.getAsDouble(d) && std::isfinite(d)) o.momentum = d;
    else if (k == "init-scale" && !v.getAsDouble(d) && d > 0 && std::isfinite(float(d))) o.initScale = d;
    else if (k == "accumulate" && !v.getAsInteger(10, i) && i >= 1 && i <= 64) o.accumulate = i;
    else if (k == "warmup" && !v.getAsInteger(10, i) && i >= 0 && i <= 1000000) o.warmup = i;
    else if (k == "total-steps" && !v.getAsInteger(10, i) && i >= 1 && i <= 1000000) o.totalSteps = i;
    else if (k == "growth-interval" && !v.getAsInteger(10, i) && i >= 1 && i <= 1000000) o.growthInterval = i;
    else return false;  // unknown or out of range: ampc's flag checks would refuse it
  }
  // A policy file would be read from disk: only the built-in policies.
  return !llvm::StringRef(o.policy).ends_with(".json");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlir::MLIRContext& ctx = contexts.get();
  // MLIR's lexer reads up to a terminating NUL, as every MemoryBuffer it parses has: a copy.
  const std::string source(reinterpret_cast<const char*>(data), size);
  llvm::StringRef text(source);
  if (amp::fuzz::hitsKnownMlirBug(text)) return 0;
  mlir::amp::AmpPipelineOptions options;
  if (!readOptions(text, options)) return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::amp::parseModel(text, "fuzz.mlir", &ctx);
  if (!module) return 0;
  mlir::PassManager pm(&ctx);
  mlir::amp::buildAmpPipeline(pm, options);
  if (mlir::failed(pm.run(*module))) return 0;
  auto plan = mlir::amp::buildPlan(*module);
  if (mlir::failed(plan)) return 0;
  std::vector<amp::rt::NamedTensorRef> tensors;
  std::string json = amp::rt::writeJson(amp::rt::planToJson(*plan, &tensors));
  std::vector<amp::rt::NamedTensor> owned;
  for (const auto& t : tensors) owned.push_back({t.name, *t.tensor});
  auto parsed = amp::rt::parseJson(json);
  auto back = parsed.ok() ? amp::rt::planFromJson(*parsed, owned, "round trip")
                          : absl::StatusOr<amp::rt::Plan>(parsed.status());
  if (!back.ok()) {
    llvm::errs() << "ampc wrote a plan its runtime cannot read back: " << std::string(back.status().message()) << "\n";
    std::abort();
  }
  std::string kernels, error;
  (void)amp::codegen::emitCpuSource(*plan, kernels, error);
  error.clear();
  (void)amp::codegen::emitCudaSource(*plan, kernels, error);
  for (amp::rt::Device device : {amp::rt::Device::Reference, amp::rt::Device::Cpu}) {
    auto session = amp::rt::openSession(*back, device, amp::fuzz::kSessionMemoryLimit);
    if (!session.ok()) continue;
    for (const amp::rt::EntryPoint& e : session->plan().entries) (void)session->prepared(e.name);
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  static const std::vector<std::string> ops = amp::fuzz::ampOpNames(contexts.get());
  if (seed % 4 == 0) return LLVMFuzzerMutate(data, size, maxSize);
  return amp::fuzz::mutateModel(data, size, maxSize, seed / 4, ops);
}
