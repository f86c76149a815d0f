// The recipe attributes' verifiers (#amp.loss_scaling, #amp.optimizer, #amp.data_parallel;
// ir/AmpAttrs.td). They are the one statement of each setting's range: the passes check their
// options by building the attribute with getChecked, the parser checks hand-written IR.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"

using namespace mlir;
using namespace mlir::amp;

namespace {

// The value of an optional f64 setting, or NaN when absent.
double valueOr(FloatAttr attr) { return attr ? attr.getValueAsDouble() : std::nan(""); }

// A setting as users typed it ("1", "0.5", "1e+39").
std::string shown(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

LogicalResult LossScalingRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError, ScalingKind kind,
                                            FloatAttr initScale, FloatAttr growthFactor, FloatAttr backoffFactor,
                                            int64_t growthInterval) {
  const bool dynamic = kind == ScalingKind::Dynamic, scaled = kind != ScalingKind::None;
  if (static_cast<bool>(initScale) != scaled)
    return emitError() << "#amp.loss_scaling<kind = " << stringifyScalingKind(kind) << "> "
                       << (scaled ? "needs" : "takes no") << " init_scale";
  // growth_interval 0 is its absence (the parameter's default); for dynamic scaling the range
  // check below names it.
  if (static_cast<bool>(growthFactor) != dynamic || static_cast<bool>(backoffFactor) != dynamic ||
      (!dynamic && growthInterval != 0))
    return emitError() << "#amp.loss_scaling: growth_factor, backoff_factor and growth_interval configure "
                          "dynamic scaling; kind = "
                       << stringifyScalingKind(kind) << (dynamic ? " needs all three" : " takes none of them");
  // The ranges torch's GradScaler states (docs/training-ir.md).
  const double scale = valueOr(initScale);
  if (scaled && (!(scale > 0.0) || !std::isfinite(static_cast<float>(scale))))
    return emitError() << "init-scale must be positive and finite in f32, got " << shown(scale);
  if (!dynamic) return success();
  const double growth = valueOr(growthFactor), backoff = valueOr(backoffFactor);
  if (!(growth > 1.0) || !std::isfinite(growth))
    return emitError() << "growth-factor must be finite and > 1 (as torch's GradScaler), got " << shown(growth);
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitError() << "backoff-factor must be in (0, 1) (as torch's GradScaler), got " << shown(backoff);
  if (growthInterval < 1 || growthInterval > std::numeric_limits<int32_t>::max())
    return emitError() << "growth-interval must be a positive integer below 2^31, got " << growthInterval;
  return success();
}

LogicalResult OptimizerRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError, OptimizerKind,
                                          FloatAttr lr, int64_t accumulate) {
  if (!lr || !std::isfinite(lr.getValueAsDouble()))
    return emitError() << "#amp.optimizer: lr must be a finite number";
  // The bundle reader bounds the window by the same number (runtime/plan/TrainingConfig.h).
  if (accumulate < 1 || accumulate > (int64_t{1} << 20))
    return emitError() << "accumulate must be in [1, 2^20], got " << accumulate;
  return success();
}

LogicalResult DataParallelRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError, Precision,
                                             int64_t shardWorldSize) {
  if (shardWorldSize < 0 || shardWorldSize > 65536)
    return emitError() << "#amp.data_parallel: shard_world_size must be in [1, 65536], or 0 when the optimizer "
                          "state is not sharded; got "
                       << shardWorldSize;
  return success();
}
