// Launch configuration of the generated CUDA kernels: the grid the cuda device launches, from the
// constants the emitter compiled into each kernel (runtime/schema/CudaLaunch.h); pure host logic
// with no CUDA dependency, so it is unit-tested on any machine.
#ifndef AMP_RUNTIME_DEVICES_CUDA_LAUNCHCONFIG_H
#define AMP_RUNTIME_DEVICES_CUDA_LAUNCHCONFIG_H

#include <cstdint>

#include "runtime/schema/CudaLaunch.h"

namespace amp::rt::cuda {

// Threads a kernel needs: one per vector of `vectorWidth` elements (the last, partial vector is
// the scalar tail), or one per column for a column kernel (pass the row length, width 1).
int64_t workItems(int64_t elements, int vectorWidth);

struct LaunchConfig {
  int64_t blocks = 0;  // 0: nothing to do, launch nothing
  int threads = kBlockThreads;
};

// One thread per work item, capped at the blocks the device keeps resident at once
// (`multiprocessors` * kBlocksPerMultiprocessor); the kernels' grid-stride loops cover the rest.
// A non-positive multiprocessor count is taken as 1.
LaunchConfig gridStrideLaunch(int64_t workItems, int multiprocessors);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_LAUNCHCONFIG_H
