// The reference device behind the Executor interface: the op-by-op interpreter over the scalar
// reference kernels (runtime/exec/ReferenceKernels.h). It is the numeric oracle; it allocates
// every result and is not meant to be fast.
#ifndef AMP_RUNTIME_DEVICES_REFERENCE_REFERENCEEXECUTOR_H
#define AMP_RUNTIME_DEVICES_REFERENCE_REFERENCEEXECUTOR_H

#include <memory>

#include "runtime/exec/Executor.h"

namespace amp::rt {

std::unique_ptr<Executor> makeReferenceExecutor();

// Index of the first NaN/inf element of a float buffer, or -1 (used by --check-numerics).
int64_t firstNonFinite(DType dtype, const void* data, int64_t n);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DEVICES_REFERENCE_REFERENCEEXECUTOR_H
