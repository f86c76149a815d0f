#include "codegen/RecipeMetadata.h"

#include "ir/AmpOps.h"
#include "ir/Precision.h"

using namespace mlir;
using namespace mlir::amp;
namespace rt = ::amp::rt;

namespace {

// The runtime's enums are generated from the same ODS enums (runtime/schema/OpEnums.h), so the
// keyword is the exact mapping.
rt::Precision runtimePrecision(Precision p) { return *rt::parsePrecision(stringifyPrecision(p).str()); }

std::optional<double> valueOf(FloatAttr attr) {
  if (!attr) return std::nullopt;
  return attr.getValueAsDouble();
}

}  // namespace

rt::TrainingConfig mlir::amp::recipeOf(ModuleOp module) {
  rt::TrainingConfig config;
  if (std::optional<Precision> p = getPrecision(module)) config.precision = runtimePrecision(*p);
  if (auto optimizer = module->getAttrOfType<OptimizerRecipeAttr>(AmpDialect::kOptimizerAttr)) {
    config.optimizer = *rt::parseOptimizerKind(stringifyOptimizerKind(optimizer.getKind()).str());
    config.lr = optimizer.getLr().getValueAsDouble();
    config.accumulate = optimizer.getAccumulate();
  }
  if (auto scaling = module->getAttrOfType<LossScalingRecipeAttr>(AmpDialect::kLossScalingAttr)) {
    config.lossScaling = *rt::parseScalingKind(stringifyScalingKind(scaling.getKind()).str());
    config.initScale = valueOf(scaling.getInitScale());
    config.growthFactor = valueOf(scaling.getGrowthFactor());
    config.backoffFactor = valueOf(scaling.getBackoffFactor());
    if (scaling.getGrowthInterval() > 0) config.growthInterval = scaling.getGrowthInterval();
  }
  if (auto dataParallel = module->getAttrOfType<DataParallelRecipeAttr>(AmpDialect::kDataParallelAttr)) {
    config.dataParallel = true;
    config.reducePrecision = runtimePrecision(dataParallel.getReduce());
    config.shardWorldSize = dataParallel.getShardWorldSize();
  }
  return config;
}

rt::Metadata mlir::amp::recipeMetadata(ModuleOp module) {
  const bool training = module->hasAttr(AmpDialect::kOptimizerAttr) || module->hasAttr(AmpDialect::kLossScalingAttr);
  return recipeOf(module).encodeRecipe(training);
}
