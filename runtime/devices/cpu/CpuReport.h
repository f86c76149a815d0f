// The counts the cpu device keeps in an entry's report (EntryReport::counts, runtime/exec/Executor.h):
// how prepare placed the plan's steps and buffers.
#ifndef AMP_RUNTIME_DEVICES_CPU_CPUREPORT_H
#define AMP_RUNTIME_DEVICES_CPU_CPUREPORT_H

#include <string_view>

namespace amp::rt::cpu {

inline constexpr std::string_view kOwnSteps = "steps on own kernels and library calls";
inline constexpr std::string_view kViewSteps = "reshapes as views";
inline constexpr std::string_view kInPlaceUpdates = "optimizer results written in place";
inline constexpr std::string_view kInPlaceResults = "elementwise results over a dying operand";
inline constexpr std::string_view kUnplannedBytes = "bytes outside the planned arena";
inline constexpr std::string_view kConvsAsGemm = "convolutions as one GEMM (1x1 output planes)";
inline constexpr std::string_view kConvsAsTapGemms = "weight gradients as a GEMM per tap (small output planes)";
inline constexpr std::string_view kCountsInOrder[] = {kOwnSteps,       kViewSteps,     kInPlaceUpdates, kInPlaceResults,
                                                      kUnplannedBytes, kConvsAsGemm,   kConvsAsTapGemms};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_CPUREPORT_H
