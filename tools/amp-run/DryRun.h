// amp-run --device=cuda --dry-run: the cuda device over a simulated GPU (runtime/devices/cuda/
// DryRunApi.h). Every entry is prepared and called twice with zero-filled inputs, so its graph is
// captured and replayed; the operations the GPU would run are printed per entry, with the host
// synchronisations of a steady-state call. Checks everything short of executing a kernel.
// `profile`: also train_step's profile path (its operation counts; the dry run has no clock).
#ifndef AMP_TOOLS_AMPRUN_DRYRUN_H
#define AMP_TOOLS_AMPRUN_DRYRUN_H

#include <cstdint>

#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/plan/Plan.h"

// Returns the process exit status.
int dryRunCuda(amp::rt::Plan plan, int64_t memoryLimit, bool profile, const amp::rt::cuda::CudaOptions& options);

#endif  // AMP_TOOLS_AMPRUN_DRYRUN_H
