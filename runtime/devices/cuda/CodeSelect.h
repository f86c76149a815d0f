// Which of a cuda bundle's code objects a GPU can run (docs/kernels.md, "Code objects"): the cubin
// when the GPU has its major architecture and at least its minor one (SASS is compatible only
// within a major version), else the PTX, which the driver JIT-compiles for any GPU at least as new,
// else a clear refusal. The driver must be at least as new as the CUDA the bundle was compiled with
// (metadata "cuda_toolkit"): same major release for a cubin, same release for PTX JIT.
// Pure host logic: the device passes what the driver reported.
#ifndef AMP_RUNTIME_DEVICES_CUDA_CODESELECT_H
#define AMP_RUNTIME_DEVICES_CUDA_CODESELECT_H

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::cuda {

struct GpuInfo {
  std::string name;        // "NVIDIA H200"
  int ccMajor = 0, ccMinor = 0;
  int driverVersion = 0;   // cuDriverGetVersion: 1000 * major + 10 * minor (13000 = 13.0)
  int multiprocessors = 0;
  int64_t memoryBytes = 0;  // the GPU's memory (cuDeviceTotalMem); 0: unknown
};

struct CodeChoice {
  const CodeObject* object = nullptr;
  bool jit = false;        // PTX, compiled by the driver at load time
  std::string summary;     // "sm_90 cubin" or "sm_80 PTX, JIT-compiled for sm_86"
};

// "13.0" -> 13000; 0 when malformed.
int parseCudaVersion(const std::string& text);
// 13000 -> "13.0".
std::string cudaVersionString(int version);

// The choice points into `plan`'s code objects, so the plan must outlive it (a temporary cannot).
absl::StatusOr<CodeChoice> selectCudaCode(const Plan& plan, const GpuInfo& gpu);
absl::StatusOr<CodeChoice> selectCudaCode(const Plan&& plan, const GpuInfo& gpu) = delete;

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_CODESELECT_H
