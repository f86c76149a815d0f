// batch_norm and batch_norm_grad over [N, C, ...] (channels are dim 1): per channel, statistics in f32
// whatever the input's type. The f32 order (docs/reference-executor.md, "batch_norm"): each
// channel's M elements (N times the trailing dims) are visited n-major, then row-major, and every sum
// over them takes the contract's blocked pairwise order (runtime/kernels/math/SumOrder.h); sum,
// mean = sum / M, then the two-pass sum of fl(d*d), d = fl(x - mean), var = sq / M;
// invstd = f32(1 / sqrt(f64(var) + eps)).
#include <cmath>

#include "runtime/kernels/math/SumOrder.h"
#include "runtime/reference/ReferenceGrad.h"

namespace amp::rt::ref {
namespace {

struct BatchNormSetup {
  int64_t N = 0, C = 0, S = 0;  // batch, channels, spatial elements per (n, c)
  double eps = 0;
  bool training = false;
  std::vector<float> x, scale, runningMean, runningVar;
};

// x is operand 0; the f32 [C] per-channel operands are `scale` (operand scaleAt) and the running
// statistics (the two after the next one that is not theirs: forward has bias between them).
absl::StatusOr<BatchNormSetup> setupBatchNorm(const OpCall& c, size_t numOperands, size_t scaleAt,
                                              size_t runningAt) {
  REF_RETURN_IF_ERROR(expectOperands(c, numOperands, numOperands));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const auto [eps, training] = c.withAttrsOf<BatchNormAttrs, BatchNormGradAttrs>(
      [](const auto& a) { return std::pair{a.epsilon, a.training}; });
  const Shape& xs = c.in(0).shape();
  if (xs.size() < 2) return c.error("input must be [N, C, ...] (rank >= 2), got ", typeString(c.in(0)));
  if (!(eps > 0)) return c.error("attribute 'epsilon' must be > 0, got ", eps);
  BatchNormSetup s;
  s.N = xs[0];
  s.C = xs[1];
  s.S = 1;
  for (size_t d = 2; d < xs.size(); ++d) s.S *= xs[d];
  for (size_t i = 1; i < numOperands; ++i) {
    if (i != scaleAt && i != scaleAt + 1 && i != runningAt && i != runningAt + 1) continue;
    if (c.in(i).dtype() != DType::F32 || c.in(i).shape() != Shape{s.C})
      return c.error("operand ", i, " must be f32[", s.C, "] (one per channel), got ", typeString(c.in(i)));
  }
  if (training && s.N * s.S < 2)
    return c.error("training needs more than one value per channel, got ", typeString(c.in(0)));
  s.eps = eps;
  s.training = training;
  s.x = widen(c.in(0));
  s.scale = widen(c.in(scaleAt));
  s.runningMean = widen(c.in(runningAt));
  s.runningVar = widen(c.in(runningAt + 1));
  return s;
}

int64_t at(const BatchNormSetup& s, int64_t n, int64_t ch, int64_t i) { return (n * s.C + ch) * s.S + i; }

// Channel ch's j-th element (0 <= j < M) in the documented order.
int64_t channelAt(const BatchNormSetup& s, int64_t ch, int64_t j) { return at(s, j / s.S, ch, j % s.S); }

// Channel ch's batch mean and sum of centred squares, in the documented order.
void batchStats(const BatchNormSetup& s, int64_t ch, float& mean, float& sq) {
  const int64_t M = s.N * s.S;
  mean = amp_blocked_sum(M, [&](int64_t j) { return s.x[channelAt(s, ch, j)]; }) / static_cast<float>(M);
  sq = amp_blocked_sum(M, [&](int64_t j) {
    const float d = s.x[channelAt(s, ch, j)] - mean;
    return d * d;
  });
}

// The mean and invstd amp.batch_norm normalises channel ch with.
void normStats(const BatchNormSetup& s, int64_t ch, float& mean, float& invstd, float* sqOut = nullptr) {
  float var;
  if (s.training) {
    float sq;
    batchStats(s, ch, mean, sq);
    var = sq / static_cast<float>(s.N * s.S);
    if (sqOut) *sqOut = sq;
  } else {
    mean = s.runningMean[ch];
    var = s.runningVar[ch];
  }
  invstd = f32(1.0 / std::sqrt(double(var) + s.eps));
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> evalBatchNorm(const OpCall& c) {
  // (input, scale, bias, running_mean, running_var)
  REF_ASSIGN_OR_RETURN(BatchNormSetup s, setupBatchNorm(c, 5, 1, 3));
  const double momentum = c.attrsOf<BatchNormAttrs>().momentum;
  if (!(momentum >= 0 && momentum <= 1)) return c.error("attribute 'momentum' must be in [0, 1], got ", momentum);
  const std::vector<float> bias = widen(c.in(2));
  std::vector<float> y(s.x.size()), newMean(s.runningMean), newVar(s.runningVar);
  const float m = f32(momentum), keep = f32(1.0 - momentum);
  for (int64_t ch = 0; ch < s.C; ++ch) {
    float mean, invstd, sq = 0.0f;
    normStats(s, ch, mean, invstd, &sq);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t i = 0; i < s.S; ++i) {
        const int64_t k = at(s, n, ch, i);
        y[k] = (s.x[k] - mean) * invstd * s.scale[ch] + bias[ch];
      }
    if (s.training) {
      // PyTorch's update: the running variance takes the unbiased batch variance.
      const float unbiased = sq / static_cast<float>(s.N * s.S - 1);
      newMean[ch] = keep * s.runningMean[ch] + m * mean;
      newVar[ch] = keep * s.runningVar[ch] + m * unbiased;
    }
  }
  const Shape channels{s.C};
  std::vector<Tensor> out;
  out.push_back(narrow(c.in(0).dtype(), c.in(0).shape(), y));
  out.push_back(narrow(DType::F32, channels, newMean));
  out.push_back(narrow(DType::F32, channels, newVar));
  return out;
}

absl::StatusOr<std::vector<Tensor>> evalBatchNormGrad(const OpCall& c) {
  // (input, grad, scale, running_mean, running_var)
  REF_ASSIGN_OR_RETURN(BatchNormSetup s, setupBatchNorm(c, 5, 2, 3));
  if (c.in(1).dtype() != c.in(0).dtype() || c.in(1).shape() != c.in(0).shape())
    return c.error("grad must have the input's type ", typeString(c.in(0)), ", got ", typeString(c.in(1)));
  const std::vector<float> dy = widen(c.in(1));
  std::vector<float> dx(s.x.size()), dscale(static_cast<size_t>(s.C)), dbias(static_cast<size_t>(s.C));
  const float M = static_cast<float>(s.N * s.S);
  for (int64_t ch = 0; ch < s.C; ++ch) {
    float mean, invstd;
    normStats(s, ch, mean, invstd);
    const int64_t count = s.N * s.S;
    const float sg = amp_blocked_sum(count, [&](int64_t j) { return dy[channelAt(s, ch, j)]; });
    const float sgx = amp_blocked_sum(count, [&](int64_t j) {
      const int64_t k = channelAt(s, ch, j);
      return dy[k] * ((s.x[k] - mean) * invstd);
    });
    dbias[ch] = sg;
    dscale[ch] = sgx;
    const float a = s.scale[ch] * invstd;
    const float mg = sg / M, mgx = sgx / M;
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t i = 0; i < s.S; ++i) {
        const int64_t k = at(s, n, ch, i);
        dx[k] = s.training ? a * ((dy[k] - mg) - ((s.x[k] - mean) * invstd) * mgx) : a * dy[k];
      }
  }
  const Shape channels{s.C};
  std::vector<Tensor> out;
  out.push_back(narrow(c.in(0).dtype(), c.in(0).shape(), dx));
  out.push_back(narrow(DType::F32, channels, dscale));
  out.push_back(narrow(DType::F32, channels, dbias));
  return out;
}

}  // namespace amp::rt::ref
