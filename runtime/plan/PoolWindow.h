// The window of a pooling step (amp.max_pool2d, amp.avg_pool2d and their gradients), read from its
// decoded attributes so that the reference and every device apply one rule: the forward ops'
// stride is optional and defaults to the kernel (ir/AmpOps.td); the gradients carry all three.
#ifndef AMP_RUNTIME_PLAN_POOLWINDOW_H
#define AMP_RUNTIME_PLAN_POOLWINDOW_H

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/plan/OpAttrs.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

struct PoolWindow {
  std::vector<int64_t> kernel, stride, padding;
};

// The window of decoded pooling attributes; nullopt for another op's.
std::optional<PoolWindow> poolWindowOf(const OpAttrs& decoded);
// The window of a pooling step (decoding its attributes when the step has not been decoded).
absl::StatusOr<PoolWindow> poolWindowOf(const PlanStep& step);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_POOLWINDOW_H
