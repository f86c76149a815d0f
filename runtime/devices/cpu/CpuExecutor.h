// The cpu device: oneDNN GEMMs (bf16 on AVX512-BF16/AMX, f32 otherwise), multi-threaded kernels
// that match the reference bit for bit on elementwise ops, in-place optimizer updates that honour
// found_inf, and one arena per entry planned by liveness (runtime/plan/MemoryPlan.h).
#ifndef AMP_RUNTIME_DEVICES_CPU_CPUEXECUTOR_H
#define AMP_RUNTIME_DEVICES_CPU_CPUEXECUTOR_H

#include <memory>

#include "absl/status/statusor.h"

#include "runtime/exec/Executor.h"

namespace amp::rt {

// Fails when AMP_CPU_FEATURES names no CPU level (CpuFeatures::maskError).
absl::StatusOr<std::unique_ptr<Executor>> makeCpuExecutor();

namespace cpu {
// What prepare decided for one entry, for reports and tests.
struct EntryReport {
  int64_t steps = 0, libraryAndKernelSteps = 0, aliasSteps = 0, referenceSteps = 0, inPlaceUpdates = 0,
          inPlaceResults = 0, absorbedCasts = 0, fusedGradStats = 0;
  int64_t arenaBytes = 0, unplannedBytes = 0, scratchBytes = 0;
  std::vector<std::string> referenceOps;  // ops that run on the reference kernel (no cpu kernel yet)
};
// The report of a PreparedEntry made by the cpu executor (null for other executors' entries).
const EntryReport* reportOf(const PreparedEntry& entry);
}  // namespace cpu

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DEVICES_CPU_CPUEXECUTOR_H
