// The values a session's params and state may hold. Files bring them in (--params, --resume); a
// checksum catches a flipped bit, not a value that no run of the plan can produce, such as a
// negative loss scale or a NaN master weight, which would then poison every later step. Both
// loaders check their tensors here before anything is replaced.
#ifndef AMP_RUNTIME_PLAN_STATEVALIDATION_H
#define AMP_RUNTIME_PLAN_STATEVALIDATION_H

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/io/NamedTensor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// Each tensor that names a param or state buffer of `plan` with its dtype and shape (the loaders
// report the others) holds a value the plan's steps can produce:
// - a param (f32 master weight): every element finite;
// - amp.loss_scale: finite and > 0;
// - amp.growth_tracker: >= 0 and below the growth_interval of the plan's amp.update_scale;
// - amp.step, amp.skipped_steps: in [0, 2^62];
// - <param>.exp_avg: finite; <param>.exp_avg_sq: >= 0 (+inf allowed: g^2 of a huge finite
//   gradient); <param>.momentum_buffer: not NaN;
// - a low-precision weight copy (init "cast"): exactly the rounding of its master, when both are
//   given.
// Gradient accumulators and amp.loss_sum are not checked: mid-window, an overflowing micro-batch
// legitimately leaves inf or NaN there (the scaler then skips the step).
// Errors name the buffer, its kind and the element.
absl::Status validatePersistentValues(const Plan& plan, const std::vector<NamedTensor>& tensors);

// A checkpoint's recorded step against the plan's step counters: every train_step call advances
// exactly one of amp.step (applied) and amp.skipped_steps (skipped), so their sum is the number of
// optimizer steps taken. Plans without the counters (hand-built ones) pass.
absl::Status validateRecordedStep(const Plan& plan, const std::vector<NamedTensor>& tensors, int64_t step);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_STATEVALIDATION_H
