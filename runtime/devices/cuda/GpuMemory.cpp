#include "runtime/devices/cuda/GpuMemory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace amp::rt::cuda {

absl::Status gpuOutOfMemory(int64_t bytes, int64_t freeBytes, int64_t totalBytes) {
  auto mib = [](int64_t b) { return absl::StrFormat("%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0)); };
  return absl::ResourceExhaustedError(absl::StrCat(
      "the GPU is out of memory: ", mib(bytes), " more do not fit (", mib(freeBytes), " free of ", mib(totalBytes),
      "); train with a smaller batch (recompile the model), free the GPU of other processes, or use --device=cpu"));
}

}  // namespace amp::rt::cuda
