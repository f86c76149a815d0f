// Compiles the CUDA flavour of the fused kernels (codegen/emit/KernelEmitter.h) with NVRTC at
// ampc time, into PTX and a cubin per GPU architecture. Needs no GPU; amp-run never compiles.
#ifndef AMP_CODEGEN_CUDATOOLCHAIN_H
#define AMP_CODEGEN_CUDATOOLCHAIN_H

#include <cstdint>
#include <string>
#include <vector>

namespace amp::codegen {

// The code of one translation unit for one architecture.
struct CudaCode {
  std::string arch;            // "sm_80", "sm_90"
  std::string ptx;             // PTX text for that architecture (the driver can JIT it for newer GPUs)
  std::vector<uint8_t> cubin;  // SASS for exactly that architecture
};

// Whether this ampc was built with NVRTC (the CUDA toolkit was found at configure time).
bool haveNvrtc();

// The CUDA release of the NVRTC this ampc compiles with ("13.0"; empty without the toolkit). A
// bundle records it (metadata "cuda_toolkit"): the driver that loads the code must be as new.
std::string nvrtcVersionString();

// The NVRTC options used for `arch`: the architecture, and the numerics the kernels' bit-exactness
// relies on (no FMA contraction, no flush to zero, IEEE division and square root).
std::vector<std::string> nvrtcOptions(const std::string& arch);

// The architectures `--target=cuda:sm_NN` compiles for.
bool isSupportedCudaArch(const std::string& arch);

// Compiles `source` (named `name` in diagnostics, e.g. "ampc-kernels.cu") for `arch`. On failure
// returns false with `error` holding the architecture and NVRTC's log, whose messages are located
// as NAME(LINE) in the source `ampc --emit=cuda` prints.
bool compileCuda(const std::string& source, const std::string& name, const std::string& arch, CudaCode& code,
                 std::string& error);

}  // namespace amp::codegen

#endif  // AMP_CODEGEN_CUDATOOLCHAIN_H
