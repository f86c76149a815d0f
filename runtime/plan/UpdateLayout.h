// Where each operand and result of an optimizer update step sits (amp.sgd_update,
// amp.adam_update in ir/AmpTrainOps.td), decoded once from the step so that the memory planner,
// the reference and every device read one answer. A fused update (amp-fuse-grad-pipeline) has
// optional operands after the op's own (the loss scale it unscales by, the norm it clips by) and
// an optional last result (the master's low-precision copy); the plan marks them with the
// attributes "unscales" (bool) and "max_norm", since it keeps no operand segment sizes.
#ifndef AMP_RUNTIME_PLAN_UPDATELAYOUT_H
#define AMP_RUNTIME_PLAN_UPDATELAYOUT_H

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

struct UpdateLayout {
  bool adam = false;
  // Operands. adam: param, grad, exp_avg, exp_avg_sq, step, lr, found_inf [, scale] [, norm];
  // sgd: param, grad, lr, found_inf [, momentum_buffer] [, scale] [, norm].
  static constexpr size_t kParam = 0, kGrad = 1;
  size_t lr = 0, foundInf = 0;
  std::optional<size_t> step;            // adam only
  std::vector<size_t> stateOperands;     // the param, then exp_avg, exp_avg_sq | momentum_buffer
  std::optional<size_t> scale, norm;     // of a fused update
  std::optional<double> maxNorm;         // with `norm`
  // Results: the new state (stateOperands' order), then the weight copy when there is one.
  std::optional<size_t> weightCopy;
  size_t states() const { return stateOperands.size(); }
};

// The layout of an update `op` ("amp.sgd_update" or "amp.adam_update") with these attributes and
// operand and result counts, or an error naming what does not fit (counts that no update has).
absl::StatusOr<UpdateLayout> decodeUpdate(std::string_view op, const AttrMap& attrs, size_t operands, size_t results);
absl::StatusOr<UpdateLayout> decodeUpdate(const PlanStep& step);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_UPDATELAYOUT_H
