// --check-numerics on the cuda device: which results its checked graph tests, and what the words
// the check kernels leave (kernels/CheckKernels.cu) mean once the call is done. The checks run in
// plan order, so the first failing one is the first step the cpu device would stop at; each is
// judged by runtime/exec/NumericsCheck.h, so a gradient overflow of a loss-scaled step is recorded
// and the others are errors naming the step. Pure host logic.
#ifndef AMP_RUNTIME_DEVICES_CUDA_NUMERICSCHECKS_H
#define AMP_RUNTIME_DEVICES_CUDA_NUMERICSCHECKS_H

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/exec/NumericsCheck.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::cuda {

// One float result of one step of the device's entry, tested after that step.
struct ResultCheck {
  size_t step = 0;     // in the device's entry (the epilogue rewrite's or the plan's own)
  int32_t buffer = 0;
};

// A check word holding this found every element finite.
inline constexpr uint64_t kAllFinite = ~uint64_t{0};

// The float results of every step of `entry`, in step order (constants excluded: ampc wrote them).
std::vector<ResultCheck> resultChecks(const Plan& plan, const EntryPoint& entry);

// The outcome of a checked call from its words (one per check: the first non-finite element, or
// kAllFinite), errors naming the step of `entry`.
absl::Status judgeChecks(const Plan& plan, const EntryPoint& entry, const std::vector<ResultCheck>& checks,
                         const uint64_t* words, GradientOverflow* overflow);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_NUMERICSCHECKS_H
