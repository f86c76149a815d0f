// The ampc pipeline as one registered pass pipeline, `amp-pipeline`, so that amp-opt reproduces
// what ampc runs stage by stage. ampc builds its stages from the same functions, so the two cannot
// drift apart: `amp-opt --amp-pipeline="train=true precision=bf16"` prints the IR that
// `ampc --train --precision=bf16 --emit=fused-ir` prints.
#ifndef AMP_PASSES_PIPELINE_H
#define AMP_PASSES_PIPELINE_H

#include <string>

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::amp {

// The options mirror ampc's flags (docs/cli.md); defaults are ampc's.
struct AmpPipelineOptions : public PassPipelineOptions<AmpPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("cpu, cpu:FEATURES, cuda:sm_NN or reference (default: the module's)"),
                             llvm::cl::init("")};
  Option<std::string> precision{*this, "precision", llvm::cl::desc("f32, f16, bf16 or auto"), llvm::cl::init("auto")};
  Option<std::string> policy{*this, "policy", llvm::cl::desc("pytorch, tensorflow or a POLICY.json file"),
                             llvm::cl::init("pytorch")};
  ListOption<std::string> overrides{*this, "override", llvm::cl::desc("PATTERN=PRECISION (repeatable)")};
  Option<bool> train{*this, "train", llvm::cl::desc("Build the training step"), llvm::cl::init(false)};
  Option<std::string> lossScaling{*this, "loss-scaling", llvm::cl::desc("dynamic, static, none or auto"),
                                  llvm::cl::init("auto")};
  Option<double> initScale{*this, "init-scale", llvm::cl::desc("Initial (dynamic) or fixed (static) scale"),
                           llvm::cl::init(65536.0)};
  Option<double> growthFactor{*this, "growth-factor", llvm::cl::desc("Dynamic: growth factor (> 1)"),
                              llvm::cl::init(2.0)};
  Option<double> backoffFactor{*this, "backoff-factor", llvm::cl::desc("Dynamic: backoff factor (in (0, 1))"),
                               llvm::cl::init(0.5)};
  Option<int64_t> growthInterval{*this, "growth-interval",
                                 llvm::cl::desc("Dynamic: clean steps before the scale grows"), llvm::cl::init(2000)};
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::desc("sgd, adam or adamw"), llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Base learning rate"), llvm::cl::init(1e-3)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("< 0: PyTorch's default"), llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"), llvm::cl::init(0.9)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov momentum"), llvm::cl::init(false)};
  Option<double> clipGradNorm{*this, "clip-grad-norm", llvm::cl::desc("0: off"), llvm::cl::init(0.0)};
  Option<std::string> schedule{*this, "schedule", llvm::cl::desc("constant or cosine"), llvm::cl::init("constant")};
  Option<int64_t> warmup{*this, "warmup", llvm::cl::desc("Linear warmup steps"), llvm::cl::init(0)};
  Option<int64_t> totalSteps{*this, "total-steps", llvm::cl::desc("Cosine: the step at which the rate reaches 0"),
                             llvm::cl::init(10000)};
  Option<int64_t> accumulate{*this, "accumulate", llvm::cl::desc("Micro-batches per optimizer step"),
                             llvm::cl::init(1)};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("Fuse elementwise chains (amp-fuse)"), llvm::cl::init(true)};
};

// amp-autocast + amp-cast-cleanup: every op's precision, the casts it needs.
void buildAmpAutocastStage(OpPassManager& pm, const AmpPipelineOptions& options);
// amp-autodiff, amp-loss-scaling, amp-grads-entry, amp-optimizer, amp-cast-cleanup, amp-verify:
// @train_step (and @grads, @accumulate).
void buildAmpTrainStage(OpPassManager& pm, const AmpPipelineOptions& options);
// amp-fuse on every function (nothing when options.fuse is false): the last IR stage.
void buildAmpFusionStage(OpPassManager& pm, const AmpPipelineOptions& options);
// amp-verify-model, then the three stages above (the training stage only with options.train).
void buildAmpPipeline(OpPassManager& pm, const AmpPipelineOptions& options);

void registerAmpPipelines();

}  // namespace mlir::amp

#endif  // AMP_PASSES_PIPELINE_H
