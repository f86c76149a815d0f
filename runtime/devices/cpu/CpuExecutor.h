// The cpu device: oneDNN GEMMs (bf16 on AVX512-BF16/AMX, f32 otherwise), multi-threaded kernels
// that match the reference bit for bit on elementwise ops, in-place optimizer updates that honour
// found_inf, and each entry's buffers planned by liveness (runtime/plan/MemoryPlan.h) into one
// arena its executor's entries share (SharedArena.h).
#ifndef AMP_RUNTIME_DEVICES_CPU_CPUEXECUTOR_H
#define AMP_RUNTIME_DEVICES_CPU_CPUEXECUTOR_H

#include <memory>

#include "absl/status/statusor.h"

#include "runtime/exec/Executor.h"

namespace amp::rt {

// Fails when AMP_CPU_FEATURES names no CPU level (CpuFeatures::maskError).
absl::StatusOr<std::unique_ptr<Executor>> makeCpuExecutor();


}  // namespace amp::rt

#endif  // AMP_RUNTIME_DEVICES_CPU_CPUEXECUTOR_H
