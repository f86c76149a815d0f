// The ampc pipeline as one registered pass pipeline, `amp-pipeline`, so that amp-opt reproduces
// what ampc runs stage by stage. ampc builds its stages from the same functions, so the two cannot
// drift apart: `amp-opt --amp-pipeline="train=true precision=bf16"` prints the IR that
// `ampc --train --precision=bf16 --emit=fused-ir` prints.
#ifndef AMP_PASSES_PIPELINE_H
#define AMP_PASSES_PIPELINE_H

#include <string>

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "passes/Passes.h"

namespace mlir::amp {

// ampc's defaults where they deliberately differ from the passes' (which follow torch.optim's
// constructors): ampc trains with AdamW, and its SGD uses momentum 0.9 where amp-optimizer keeps
// torch.optim.SGD's 0 (momentum applies to SGD only; buildAmpTrainStage passes it nowhere else).
inline constexpr OptimizerKind kAmpcOptimizer = OptimizerKind::AdamW;
inline constexpr double kAmpcSgdMomentum = 0.9;

// Where a cuda target computes activation and bias gradients: in the generated kernels (exact), or
// in cuBLASLt's training epilogues (amp-select-gemm-epilogues).
enum class GemmEpilogueMode { Exact, Cublaslt };

// The options mirror ampc's flags (docs/cli.md). Every other default is the pass option's, read
// from the generated option structs so that it is written once, in Passes.td.
struct AmpPipelineOptions : public PassPipelineOptions<AmpPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("cpu, cpu:FEATURES, cuda:sm_NN or reference (default: the module's)"),
                             llvm::cl::init(AmpAutocastPassOptions().target)};
  Option<AutocastDtype> precision{*this, "precision", llvm::cl::desc("f32, f16, bf16 or auto"),
                                  llvm::cl::init(AmpAutocastPassOptions().dtype), autocastDtypeValues()};
  Option<std::string> policy{*this, "policy", llvm::cl::desc("pytorch, tensorflow or a POLICY.json file"),
                             llvm::cl::init(AmpAutocastPassOptions().policy)};
  ListOption<std::string> overrides{*this, "override", llvm::cl::desc("PATTERN=PRECISION (repeatable)")};
  Option<bool> train{*this, "train", llvm::cl::desc("Build the training step"), llvm::cl::init(false)};
  Option<LossScalingMode> lossScaling{*this, "loss-scaling", llvm::cl::desc("dynamic, static, none or auto"),
                                      llvm::cl::init(AmpLossScalingPassOptions().mode), lossScalingModeValues()};
  Option<double> initScale{*this, "init-scale", llvm::cl::desc("Initial (dynamic) or fixed (static) scale"),
                           llvm::cl::init(AmpLossScalingPassOptions().initScale)};
  Option<double> growthFactor{*this, "growth-factor", llvm::cl::desc("Dynamic: growth factor (> 1)"),
                              llvm::cl::init(AmpLossScalingPassOptions().growthFactor)};
  Option<double> backoffFactor{*this, "backoff-factor", llvm::cl::desc("Dynamic: backoff factor (in (0, 1))"),
                               llvm::cl::init(AmpLossScalingPassOptions().backoffFactor)};
  Option<int64_t> growthInterval{*this, "growth-interval",
                                 llvm::cl::desc("Dynamic: clean steps before the scale grows"),
                                 llvm::cl::init(AmpLossScalingPassOptions().growthInterval)};
  Option<OptimizerKind> optimizer{*this, "optimizer", llvm::cl::desc("sgd, adam or adamw"),
                                  llvm::cl::init(kAmpcOptimizer), optimizerKindValues()};
  Option<double> lr{*this, "lr", llvm::cl::desc("Base learning rate"), llvm::cl::init(AmpOptimizerPassOptions().lr)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("< 0: PyTorch's default"),
                             llvm::cl::init(AmpOptimizerPassOptions().weightDecay)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"), llvm::cl::init(kAmpcSgdMomentum)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(AmpOptimizerPassOptions().nesterov)};
  Option<double> clipGradNorm{*this, "clip-grad-norm", llvm::cl::desc("0: off"),
                              llvm::cl::init(AmpOptimizerPassOptions().clipGradNorm)};
  Option<LrScheduleKind> schedule{*this, "schedule", llvm::cl::desc("constant or cosine"),
                                  llvm::cl::init(AmpOptimizerPassOptions().schedule), lrScheduleKindValues()};
  Option<int64_t> warmup{*this, "warmup", llvm::cl::desc("Linear warmup steps"),
                         llvm::cl::init(AmpOptimizerPassOptions().warmup)};
  Option<int64_t> totalSteps{*this, "total-steps", llvm::cl::desc("Cosine: the step at which the rate reaches 0"),
                             llvm::cl::init(AmpOptimizerPassOptions().totalSteps)};
  Option<int64_t> accumulate{*this, "accumulate", llvm::cl::desc("Micro-batches per optimizer step"),
                             llvm::cl::init(AmpOptimizerPassOptions().accumulate)};
  Option<bool> remat{*this, "remat",
                     llvm::cl::desc("Recompute cheap forward values in the backward while the peak falls (amp-remat auto; "
                                    "ampc's default, as here)"),
                     llvm::cl::init(true)};
  Option<int64_t> memoryBudget{*this, "memory-budget",
                               llvm::cl::desc("Recompute until the step's estimated bytes are at most this (amp-remat budget; 0: none)"),
                               llvm::cl::init(0)};
  Option<WeightCopyMode> weightCopies{*this, "weight-copies",
                                      llvm::cl::desc("auto, stored or recast (low-precision weight copies)"),
                                      llvm::cl::init(WeightCopyMode::Auto), weightCopyModeValues()};
  Option<OptimizerStateType> optimizerState{*this, "optimizer-state",
                                            llvm::cl::desc("f32 or bf16 (Adam's moments, stochastic rounding)"),
                                            llvm::cl::init(OptimizerStateType::F32), optimizerStateTypeValues()};
  Option<bool> dataParallel{*this, "data-parallel", llvm::cl::desc("Reduce across ranks (amp-data-parallel)"),
                            llvm::cl::init(false)};
  Option<int64_t> bucketBytes{*this, "bucket-bytes", llvm::cl::desc("Data-parallel: gradient bytes per bucket"),
                              llvm::cl::init(AmpDataParallelPassOptions().bucketBytes)};
  Option<Precision> reducePrecision{*this, "reduce-precision",
                                    llvm::cl::desc("Data-parallel: f32, bf16 or f16 gradient reduction"),
                                    llvm::cl::init(AmpDataParallelPassOptions().reducePrecision),
                                    reducePrecisionValues()};
  Option<int64_t> shardWorldSize{*this, "shard-world-size",
                                 llvm::cl::desc("Data-parallel: ZeRO-1 for this many ranks (amp-shard-optimizer; 0: off)"),
                                 llvm::cl::init(0)};
  Option<GemmEpilogueMode> gemmEpilogues{
      *this, "gemm-epilogues",
      llvm::cl::desc("exact (default) or cublaslt: cuda targets move activation and bias gradients into cuBLASLt "
                     "epilogues (amp-select-gemm-epilogues), within summation-order bounds"),
      llvm::cl::init(GemmEpilogueMode::Exact),
      llvm::cl::values(clEnumValN(GemmEpilogueMode::Exact, "exact", "the generated kernels: the reference's bits"),
                       clEnumValN(GemmEpilogueMode::Cublaslt, "cublaslt", "cuBLASLt's training epilogues"))};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("Fuse the gradient pipeline and elementwise chains (amp-fuse-grad-pipeline, amp-fuse)"), llvm::cl::init(true)};
};

// amp-autocast + amp-cast-cleanup: every op's precision, the casts it needs.
void buildAmpAutocastStage(OpPassManager& pm, const AmpPipelineOptions& options);
// amp-autodiff, amp-loss-scaling, amp-grads-entry, amp-optimizer, (amp-data-parallel),
// amp-cast-cleanup, amp-remat-weight-casts, amp-verify: @train_step (and @grads, @accumulate).
void buildAmpTrainStage(OpPassManager& pm, const AmpPipelineOptions& options);
// amp-fuse-grad-pipeline and amp-fuse on every function (not when options.fuse is false), with
// amp-remat between them when asked (remat, memory-budget), then
// amp-select-gemm-epilogues with gemm-epilogues=cublaslt: the last IR stage.
void buildAmpFusionStage(OpPassManager& pm, const AmpPipelineOptions& options);
// amp-verify-model, then the three stages above (the training stage only with options.train).
void buildAmpPipeline(OpPassManager& pm, const AmpPipelineOptions& options);

void registerAmpPipelines();

}  // namespace mlir::amp

#endif  // AMP_PASSES_PIPELINE_H
