// Counter-based dropout: the mask depends only on (seed, step, element index), through the shared
// Philox stream of runtime/numerics/Philox.h, so every backend draws the same mask.
#include "runtime/reference/ReferenceCommon.h"
#include "runtime/numerics/Philox.h"

namespace amp::rt::ref {

absl::StatusOr<Tensor> evalDropout(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const double rate = c.attrsOf<DropoutAttrs>().rate;
  const int64_t seed = c.attrsOf<DropoutAttrs>().seed;
  if (!(rate >= 0.0 && rate < 1.0)) return c.error("attribute 'rate' must be in [0, 1), got ", rate);
  // Backends receive the rate as f32; the keep test and the scale both use that value.
  const float p = f32(rate);
  const float scale = f32(1.0 / (1.0 - double(p)));
  std::vector<float> x = widen(c.in(0));
  for (size_t i = 0; i < x.size(); ++i) {
    const bool keep = dropoutKeep(static_cast<uint64_t>(seed), static_cast<uint64_t>(c.ctx.step), i, p);
    x[i] = x[i] * (keep ? scale : 0.0f);  // multiply by the mask: NaN/inf stay non-finite, as torch
  }
  return narrow(c.in(0).dtype(), c.in(0).shape(), x);
}

}  // namespace amp::rt::ref
