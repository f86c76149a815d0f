// What the cuda device says when the GPU has no room for an allocation: how much was asked, how
// much is free of how much, and what to do about it (the driver's and the dry run's words alike).
#ifndef AMP_RUNTIME_DEVICES_CUDA_GPUMEMORY_H
#define AMP_RUNTIME_DEVICES_CUDA_GPUMEMORY_H

#include <cstdint>

#include "absl/status/status.h"

namespace amp::rt::cuda {

absl::Status gpuOutOfMemory(int64_t bytes, int64_t freeBytes, int64_t totalBytes);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GPUMEMORY_H
