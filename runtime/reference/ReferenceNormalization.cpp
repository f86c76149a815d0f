// layer_norm and rms_norm over the trailing `normalized_ndim` dims, statistics in f32, each sum in
// the contract's blocked pairwise order (runtime/kernels/math/SumOrder.h).
#include <cmath>

#include "runtime/kernels/math/SumOrder.h"
#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {
namespace {

struct NormSetup {
  int64_t groups = 0, n = 0;   // number of normalized groups, elements per group
  double eps = 0;
  std::vector<float> weight, bias;  // empty when absent
};

// Validates x, the optional affine operands and the attributes shared by both norms.
absl::StatusOr<NormSetup> setupNorm(const OpCall& c, bool allowBias) {
  const auto [ndim, eps] = c.withAttrsOf<LayerNormAttrs, RmsNormAttrs>(
      [](const auto& a) { return std::pair{a.normalizedNdim, a.eps}; });
  REF_ASSIGN_OR_RETURN(bool hasWeight, c.attrs.getBool(c.name, "has_weight", false));
  bool hasBias = false;
  if (allowBias) {
    REF_ASSIGN_OR_RETURN(hasBias, c.attrs.getBool(c.name, "has_bias", false));
  }
  const size_t want = 1 + hasWeight + hasBias;
  REF_RETURN_IF_ERROR(expectOperands(c, want, want));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const Shape& xs = c.in(0).shape();
  if (ndim < 1 || ndim > c.in(0).rank())
    return c.error("attribute 'normalized_ndim' = ", ndim, " must be in [1, ", c.in(0).rank(), "] for ",
                   typeString(c.in(0)));
  if (!(eps >= 0)) return c.error("attribute 'eps' must be >= 0, got ", eps);
  const Shape trailing(xs.end() - ndim, xs.end());
  for (size_t i = 1; i < want; ++i) {
    REF_RETURN_IF_ERROR(expectSameDType(c, 0, i));
    if (c.in(i).shape() != trailing)
      return c.error(i == 1 && hasWeight ? "weight" : "bias", " must have shape ", shapeToString(trailing),
                     ", got ", typeString(c.in(i)));
  }
  NormSetup s;
  s.n = numElements(trailing);
  s.groups = s.n ? c.in(0).numel() / s.n : 0;
  s.eps = eps;
  if (hasWeight) s.weight = widen(c.in(1));
  if (hasBias) s.bias = widen(c.in(hasWeight ? 2 : 1));
  return s;
}

}  // namespace

absl::StatusOr<Tensor> evalLayerNorm(const OpCall& c) {
  REF_ASSIGN_OR_RETURN(NormSetup s, setupNorm(c, /*allowBias=*/true));
  std::vector<float> x = widen(c.in(0)), y(x.size());
  const float n = static_cast<float>(s.n);
  for (int64_t g = 0; g < s.groups; ++g) {
    const float* xg = x.data() + g * s.n;
    float* yg = y.data() + g * s.n;
    const float mean = amp_blocked_sum(s.n, [&](int64_t j) { return xg[j]; }) / n;
    // two-pass biased variance: sum of fl(d*d), d = fl(x - mean)
    const float sq = amp_blocked_sum(s.n, [&](int64_t j) { return (xg[j] - mean) * (xg[j] - mean); });
    const float var = sq / n;
    const float rstd = f32(1.0 / std::sqrt(double(var) + s.eps));
    for (int64_t j = 0; j < s.n; ++j) {
      float v = (xg[j] - mean) * rstd;
      if (!s.weight.empty()) v = v * s.weight[j];
      if (!s.bias.empty()) v = v + s.bias[j];
      yg[j] = v;
    }
  }
  return narrow(c.in(0).dtype(), c.in(0).shape(), y);
}

absl::StatusOr<Tensor> evalRmsNorm(const OpCall& c) {
  REF_ASSIGN_OR_RETURN(NormSetup s, setupNorm(c, /*allowBias=*/false));
  std::vector<float> x = widen(c.in(0)), y(x.size());
  const float n = static_cast<float>(s.n);
  for (int64_t g = 0; g < s.groups; ++g) {
    const float* xg = x.data() + g * s.n;
    float* yg = y.data() + g * s.n;
    const float sq = amp_blocked_sum(s.n, [&](int64_t j) { return xg[j] * xg[j]; });
    const float rstd = f32(1.0 / std::sqrt(double(sq / n) + s.eps));
    for (int64_t j = 0; j < s.n; ++j) {
      float v = xg[j] * rstd;
      if (!s.weight.empty()) v = v * s.weight[j];
      yg[j] = v;
    }
  }
  return narrow(c.in(0).dtype(), c.in(0).shape(), y);
}

}  // namespace amp::rt::ref
