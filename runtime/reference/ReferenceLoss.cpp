// cross_entropy and mse_loss: scalar means, accumulated in f32 in sample order.
#include <cmath>

#include "runtime/kernels/math/SumOrder.h"
#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {

absl::StatusOr<CrossEntropyArgs> crossEntropyArgs(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectRank(c, 0, 2));
  REF_RETURN_IF_ERROR(expectRank(c, 1, 1));
  const Tensor& labels = c.in(1);
  if (!isIndexType(labels.dtype()))
    return c.error("labels (operand 1) must have element type i32 or i64, got ", dtypeName(labels.dtype()));
  CrossEntropyArgs a;
  a.N = c.in(0).shape()[0];
  a.C = c.in(0).shape()[1];
  if (labels.shape()[0] != a.N)
    return c.error("labels ", typeString(labels), " must have one entry per row of logits ", typeString(c.in(0)));
  std::tie(a.ignoreIndex, a.labelSmoothing) = c.withAttrsOf<CrossEntropyAttrs, CrossEntropyGradAttrs>(
      [](const auto& attrs) { return std::pair{attrs.ignoreIndex, attrs.labelSmoothing}; });
  if (!(a.labelSmoothing >= 0.0 && a.labelSmoothing <= 1.0))
    return c.error("attribute 'label_smoothing' must be in [0, 1], got ", a.labelSmoothing);
  for (int64_t i = 0; i < a.N; ++i) {  // validate every label before computing anything
    const int64_t y = loadIndex(labels, i);
    if (y == a.ignoreIndex) continue;
    if (y < 0 || y >= a.C)
      return c.error("label ", y, " at position [", i, "] is out of range [0, ", a.C,
                     ") and is not ignore_index (", a.ignoreIndex, ")");
    ++a.counted;
  }
  return a;
}

absl::StatusOr<Tensor> evalCrossEntropy(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_ASSIGN_OR_RETURN(CrossEntropyArgs args, crossEntropyArgs(c));
  const Tensor& labels = c.in(1);
  const int64_t N = args.N, C = args.C, ignoreIndex = args.ignoreIndex;
  const double eps = args.labelSmoothing;
  std::vector<float> x = widen(c.in(0)), logp(static_cast<size_t>(C));
  const float keepW = f32(1.0 - eps), smoothW = f32(eps);
  AmpBlockedSum<float> total;  // over the counted rows, in row order
  total.reset(0.0f);
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = loadIndex(labels, i);
    if (y == ignoreIndex) continue;
    softmaxSlice(x.data() + i * C, C, 1, /*log=*/true, logp.data());
    float loss = -logp[y];
    if (eps > 0.0) {  // (1-eps) * nll + eps * mean_c(-logp_c); skipped at eps = 0 (PyTorch too)
      const float smooth = amp_blocked_sum(C, [&](int64_t k) { return -logp[k]; }) / static_cast<float>(C);
      loss = keepW * loss + smoothW * smooth;
    }
    total.add(loss);
    ++count;
  }
  std::vector<float> result = {total.result() / static_cast<float>(count)};  // all ignored: 0/0 = NaN
  return narrow(c.in(0).dtype(), {}, result);
}

absl::StatusOr<Tensor> evalMseLoss(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  if (c.in(0).shape() != c.in(1).shape())
    return c.error("pred ", typeString(c.in(0)), " and target ", typeString(c.in(1)), " must have the same shape");
  std::vector<float> p = widen(c.in(0)), t = widen(c.in(1));
  const float sum = amp_blocked_sum(static_cast<int64_t>(p.size()), [&](int64_t i) {
    const float d = p[i] - t[i];
    return d * d;
  });
  std::vector<float> result = {sum / static_cast<float>(p.size())};  // empty: 0/0 = NaN
  return narrow(c.in(0).dtype(), {}, result);
}

}  // namespace amp::rt::ref
