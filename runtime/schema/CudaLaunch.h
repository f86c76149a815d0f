// The launch contract of the generated CUDA kernels, shared by the emitter (codegen/emit), which
// compiles the block size into each kernel's __launch_bounds__ and its vector width into its
// accesses, and the cuda device, which sizes the grids from the same numbers
// (runtime/devices/cuda/LaunchConfig.h).
#ifndef AMP_RUNTIME_SCHEMA_CUDALAUNCH_H
#define AMP_RUNTIME_SCHEMA_CUDALAUNCH_H

#include <cstdint>

namespace amp::rt::cuda {

// Threads per block of every generated kernel (its __launch_bounds__).
inline constexpr int kBlockThreads = 256;
// The widest access one thread makes to one operand: a 128-bit ld.global.v4 / st.global.v4.
inline constexpr int kVectorBytes = 16;
// Resident blocks per multiprocessor at kBlockThreads: 2048 threads per SM on sm_80 and sm_90.
// Grid-stride kernels launch no more blocks than fill the GPU once; each thread loops instead.
inline constexpr int kBlocksPerMultiprocessor = 2048 / kBlockThreads;

// Elements one thread handles per iteration of an elementwise kernel whose widest
// iteration-shaped operand (inputs read at every element, and the results) has
// `widestElementBytes` bytes: that operand moves kVectorBytes per access, narrower ones
// proportionally less (f32 4, f16/bf16 8, i1 16 when all are i1). 1 for column kernels (row
// reductions: a thread owns a column), for a space smaller than one vector, and for an unknown
// element size.
inline int vectorWidth(int widestElementBytes, int64_t elements, bool columnKernel) {
  if (columnKernel || widestElementBytes <= 0 || widestElementBytes > kVectorBytes ||
      kVectorBytes % widestElementBytes != 0)
    return 1;
  const int width = kVectorBytes / widestElementBytes;
  return elements >= width ? width : 1;
}

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_SCHEMA_CUDALAUNCH_H
