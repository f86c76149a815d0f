// Deterministic parameter initialisation from an #amp.init spec (docs/model-convention.md).
#ifndef AMP_RUNTIME_PLAN_INIT_H
#define AMP_RUNTIME_PLAN_INIT_H

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// Fan-in / fan-out as ampc lays weights out: a matmul weight [in, out] (x @ W); a conv weight
// [O, I, KH, KW]; rank 1 uses its size for both.
std::pair<int64_t, int64_t> computeFans(const Shape& shape);

// Fills an f32 tensor of `shape`. Random kinds draw from Philox4x32-10 keyed by the seed with the
// element index as counter, so the result depends only on (kind, scale, seed, shape). Kind
// "stored" copies the spec's tensor.
absl::StatusOr<Tensor> initializeParam(const InitSpec& spec, const Shape& shape);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_INIT_H
