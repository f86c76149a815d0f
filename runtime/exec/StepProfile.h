// --profile for the devices that run an entry's steps one by one on the host (cpu, reference):
// each profiled call times every step, and the summary is the median per step over the calls,
// summed into categories, with the GEMM and convolution FLOPs and the slowest steps
// (docs/cpu-device.md, "Profiling").
#ifndef AMP_RUNTIME_EXEC_STEPPROFILE_H
#define AMP_RUNTIME_EXEC_STEPPROFILE_H

#include <chrono>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// The categories, in report order.
inline constexpr std::string_view kProfileCategories[] = {
    "GEMM", "conv", "norm", "elementwise/fused", "conversion", "optimizer/scaler", "layout", "other"};

// The category of a step: GEMM (matmul, linear, gemm_epilogue), conv (conv2d and its gradients,
// with their oneDNN reorders on the cpu device), norm (batch/layer/rms norm, softmax and their
// gradients), conversion (cast), optimizer/scaler (every step of the update phase: unscale and
// check, clipping, the optimizer, the scaler), layout (transpose, broadcast, slice, concat),
// elementwise/fused (generated kernels and single elementwise ops), other (pooling, losses,
// reductions, embedding, dropout, collectives).
std::string_view profileCategory(const PlanStep& step);

// The multiply-add arithmetic of a GEMM or convolution step, 2 flops each; 0 for other steps.
double stepFlops(const Plan& plan, const PlanStep& step);

// The memory traffic floor of a step: every distinct operand buffer read once and every result
// written once, in bytes (views, broadcasts and scalars count their own size). A step moving these
// bytes at the copy bandwidth is at memory speed; GEMMs and convolutions reread their operands.
double stepBytes(const Plan& plan, const PlanStep& step);

// Per-step times of the profiled calls of one entry.
class StepProfiler {
 public:
  StepProfiler(const Plan& plan, const EntryPoint& entry);
  // One profiled call: stepMs[s] is step s's time (0 where it did no work), callMs the call's.
  void addCall(absl::Span<const double> stepMs, double callMs);
  // Medians over the calls; `slowest` steps listed.
  EntryProfile summary(size_t slowest = 15) const;

 private:
  const Plan& plan_;
  const EntryPoint& entry_;
  std::vector<std::vector<double>> stepMs_;  // [step][call]
  std::vector<double> callMs_;
};

// A host device's EntryProfiler::profile: `calls` calls, each through `run`, which runs the entry
// once as a normal call does and writes each step's milliseconds to stepMs[step].
absl::StatusOr<EntryProfile> profileHostCalls(const Plan& plan, const EntryPoint& entry, int calls,
                                              absl::FunctionRef<absl::Status(double* stepMs)> run);

// The clock the profiles read, and milliseconds since `start` on it.
using ProfileClock = std::chrono::steady_clock;
double profileMsSince(ProfileClock::time_point start);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_STEPPROFILE_H
