// The reference device behind the Executor interface: the op-by-op interpreter over the scalar
// reference kernels (runtime/exec/ReferenceKernels.h). It is the numeric oracle; it allocates
// every result and is not meant to be fast.
#ifndef AMP_RUNTIME_DEVICES_REFERENCE_REFERENCEEXECUTOR_H
#define AMP_RUNTIME_DEVICES_REFERENCE_REFERENCEEXECUTOR_H

#include <memory>

#include "runtime/exec/Executor.h"
#include "runtime/exec/ReferenceKernels.h"

namespace amp::rt {

std::unique_ptr<Executor> makeReferenceExecutor();

// Evaluates one plan step with the reference kernels: an op, or a fused region op by op over its
// body (so a fused step computes exactly what the unfused ops compute).
absl::StatusOr<std::vector<Tensor>> evalReferenceStep(const Plan& plan, const PlanStep& step,
                                                      absl::Span<const Tensor* const> operands,
                                                      const EvalContext& ctx);

// Index of the first NaN/inf element of a float buffer, or -1 (used by --check-numerics).
int64_t firstNonFinite(DType dtype, const void* data, int64_t n);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DEVICES_REFERENCE_REFERENCEEXECUTOR_H
