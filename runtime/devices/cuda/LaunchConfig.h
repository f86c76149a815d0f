// Launch configuration of the generated CUDA kernels (codegen/emit/CudaFlavour.cpp). Shared by
// the emitter, which compiles the vector width and block size into each kernel, and the CUDA
// device, which sizes the grid from them; pure host logic with no CUDA dependency, so it is
// unit-tested on any machine.
#ifndef AMP_RUNTIME_DEVICES_CUDA_LAUNCHCONFIG_H
#define AMP_RUNTIME_DEVICES_CUDA_LAUNCHCONFIG_H

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
int vectorWidth(int widestElementBytes, int64_t elements, bool columnKernel);

// Threads a kernel needs: one per vector of `vectorWidth` elements (the last, partial vector is
// the scalar tail), or one per column for a column kernel (pass the row length, width 1).
int64_t workItems(int64_t elements, int vectorWidth);

struct LaunchConfig {
  int64_t blocks = 0;  // 0: nothing to do, launch nothing
  int threads = kBlockThreads;
};

// One thread per work item, capped at the blocks the device keeps resident at once
// (`multiprocessors` * kBlocksPerMultiprocessor); the kernels' grid-stride loops cover the rest.
// A non-positive multiprocessor count is taken as 1.
LaunchConfig gridStrideLaunch(int64_t workItems, int multiprocessors);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_LAUNCHCONFIG_H
