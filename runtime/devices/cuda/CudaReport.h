// The counts the cuda device keeps in an entry's report (EntryReport::counts, runtime/exec/Executor.h):
// what the captured graph launches. amp-run --dry-run prints them in this order.
#ifndef AMP_RUNTIME_DEVICES_CUDA_CUDAREPORT_H
#define AMP_RUNTIME_DEVICES_CUDA_CUDAREPORT_H

#include <string_view>

namespace amp::rt::cuda {

inline constexpr std::string_view kGeneratedKernels = "generated kernels";  // NVRTC and library kernels
inline constexpr std::string_view kGemms = "cuBLASLt GEMMs";
inline constexpr std::string_view kMultiTensorLaunches = "scaler/optimizer launches";
inline constexpr std::string_view kCopies = "copies";
inline constexpr std::string_view kFills = "fills";
inline constexpr std::string_view kCountsInOrder[] = {kGeneratedKernels, kGemms, kMultiTensorLaunches, kCopies,
                                                      kFills};

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_CUDAREPORT_H
