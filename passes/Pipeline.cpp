#include "passes/Pipeline.h"

#include "mlir/Pass/PassRegistry.h"
#include "passes/Passes.h"

namespace mlir::amp {

void buildAmpAutocastStage(OpPassManager& pm, const AmpPipelineOptions& options) {
  AmpAutocastPassOptions autocast;
  autocast.dtype = options.precision;
  autocast.policy = options.policy;
  autocast.target = options.target;
  // The pass options hold an ArrayRef: the strings must outlive the pass's construction.
  const std::vector<std::string> overrides(options.overrides.begin(), options.overrides.end());
  autocast.overrides = overrides;
  pm.addPass(createAmpAutocastPass(autocast));
  pm.addPass(createAmpCastCleanupPass());
}

void buildAmpTrainStage(OpPassManager& pm, const AmpPipelineOptions& options) {
  AmpLossScalingPassOptions scaling;
  scaling.mode = options.lossScaling;
  scaling.initScale = options.initScale;
  scaling.growthFactor = options.growthFactor;
  scaling.backoffFactor = options.backoffFactor;
  scaling.growthInterval = options.growthInterval;
  AmpOptimizerPassOptions opt;
  opt.kind = options.optimizer;
  opt.lr = options.lr;
  // Momentum is an SGD option; ampc's default (0.9) must not leak into Adam's configuration.
  if (options.optimizer == OptimizerKind::Sgd) opt.momentum = options.momentum;
  opt.nesterov = options.nesterov;
  opt.weightDecay = options.weightDecay;
  opt.clipGradNorm = options.clipGradNorm;
  opt.schedule = options.schedule;
  opt.warmup = options.warmup;
  opt.totalSteps = options.totalSteps;
  opt.accumulate = options.accumulate;
  opt.weightCopies = options.weightCopies;
  opt.stateType = options.optimizerState;
  AmpVerifyPassOptions verify;
  verify.policy = options.policy;
  pm.addPass(createAmpAutodiffPass());
  pm.addPass(createAmpLossScalingPass(scaling));
  pm.addPass(createAmpGradsEntryPass());
  pm.addPass(createAmpOptimizerPass(opt));
  if (options.dataParallel) {
    AmpDataParallelPassOptions dp;
    dp.bucketBytes = options.bucketBytes;
    dp.reducePrecision = options.reducePrecision;
    pm.addPass(createAmpDataParallelPass(dp));
    if (options.shardWorldSize > 0) {
      AmpShardOptimizerPassOptions zero;
      zero.worldSize = options.shardWorldSize;
      pm.addPass(createAmpShardOptimizerPass(zero));
    }
  }
  pm.addPass(createAmpCastCleanupPass());
  // After the last CSE, which would merge the per-use casts again.
  pm.addNestedPass<func::FuncOp>(createAmpRematWeightCastsPass());
  pm.addPass(createAmpVerifyPass(verify));
}

void buildAmpFusionStage(OpPassManager& pm, const AmpPipelineOptions& options) {
  if (options.fuse) {
    // The gradient pipeline first: amp-fuse could otherwise take a gradient's widening cast into an
    // elementwise region, and the statistics pass would then read the widened copy.
    pm.addNestedPass<func::FuncOp>(createAmpFuseGradPipelinePass());
  }
  // After the gradient pipeline took its widened copies away (they would fake a peak), before
  // amp-fuse puts recomputed elementwise ops into the backward's regions.
  if (options.remat || options.memoryBudget > 0) {
    AmpRematPassOptions remat;
    remat.autoRemat = options.remat;
    remat.budget = options.memoryBudget;
    remat.fusionAware = options.fuse;
    pm.addNestedPass<func::FuncOp>(createAmpRematPass(remat));
  }
  if (options.fuse) {
    pm.addNestedPass<func::FuncOp>(createAmpFusePass());
  }
  // After amp-fuse: the ReLU backward it matches is amp-fuse's region.
  if (options.gemmEpilogues == GemmEpilogueMode::Cublaslt)
    pm.addNestedPass<func::FuncOp>(createAmpSelectGemmEpiloguesPass());
}

void buildAmpPipeline(OpPassManager& pm, const AmpPipelineOptions& options) {
  pm.addPass(createAmpVerifyModelPass());
  buildAmpAutocastStage(pm, options);
  if (options.train) buildAmpTrainStage(pm, options);
  buildAmpFusionStage(pm, options);
}

void registerAmpPipelines() {
  PassPipelineRegistration<AmpPipelineOptions>(
      "amp-pipeline", "What ampc runs: verify the model, autocast, (train) the training step, fuse",
      buildAmpPipeline);
}

}  // namespace mlir::amp
