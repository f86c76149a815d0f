// The scalar formulas of loss scaling and clipping that the reference and the cpu device share
// (ir/AmpTrainOps.td gives the contract; the cuda kernels' copies are kernels/TrainMath.h).
#ifndef AMP_RUNTIME_NUMERICS_SCALERMATH_H
#define AMP_RUNTIME_NUMERICS_SCALERMATH_H

#include <cmath>

namespace amp::rt {

// GradScaler: inv_scale = scale.double().reciprocal().float().
inline float inverseScale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

// An unscaled gradient element: inv_scale == 1 exactly returns the value untouched (the
// _check_inf_per_device path).
inline float unscaled(float v, float invScale) { return invScale == 1.0f ? v : v * invScale; }

// clip_coef = max_norm / (total_norm + 1e-6), which PyTorch computes as
// `(total_norm + 1e-6).reciprocal() * max_norm`; clamp(max=1.0) propagates NaN.
inline float clipCoefficient(float norm, double maxNorm) {
  const float denom = norm + static_cast<float>(1e-6);
  const float coef = (1.0f / denom) * static_cast<float>(maxNorm);
  return !std::isnan(coef) && coef > 1.0f ? 1.0f : coef;
}

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_SCALERMATH_H
