// The reference device behind the Executor interface: the op-by-op interpreter over the scalar
// reference kernels (runtime/reference/ReferenceKernels.h). It is the numeric oracle; it allocates
// every result and is not meant to be fast. This header is the oracle's whole interface to the
// other devices: they create it, and evaluate on it the steps they have no kernel for
// (evalReferenceStep); nothing else of the oracle's is theirs to include.
#ifndef AMP_RUNTIME_REFERENCE_REFERENCEEXECUTOR_H
#define AMP_RUNTIME_REFERENCE_REFERENCEEXECUTOR_H

#include <memory>

#include "runtime/exec/Executor.h"
#include "runtime/reference/ReferenceKernels.h"

namespace amp::rt {

std::unique_ptr<Executor> makeReferenceExecutor();

// Evaluates one plan step with the reference kernels: an op, or a fused region op by op over its
// body (so a fused step computes exactly what the unfused ops compute).
absl::StatusOr<std::vector<Tensor>> evalReferenceStep(const Plan& plan, const PlanStep& step,
                                                      absl::Span<const Tensor* const> operands,
                                                      const EvalContext& ctx);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_REFERENCE_REFERENCEEXECUTOR_H
