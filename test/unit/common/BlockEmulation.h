// The CUDA execution model on the host, so g++ can run the library kernels' own source
// (runtime/kernels/cuda/*.cu, *.cuh) and the tests can compare it with the reference bit for
// bit. Include this header, then the kernel files in the order codegen/CMakeLists.txt concatenates
// them for NVRTC; each .cu may be included by one translation unit of a test binary only (its
// extern "C" entry points become host functions of that name).
//
// A launch runs the blocks one after another. A block's threads are fibers on the calling thread:
// each runs until its next __syncthreads() or its end, then the next one runs; a phase ends when
// every thread has reached the barrier or returned. __shared__ variables become function statics,
// which one block at a time makes per-block storage. The schedule inside a phase can run threads
// forwards or backwards, so a result that depends on it (a race on the GPU) shows up as two different
// answers. A barrier that some threads of a block reach while others have returned is reported
// as an error (undefined behaviour on the GPU).
//
// The prelude's f16/bf16 conversions (codegen/emit/CudaFlavour.cpp) are runtime/numerics' here;
// CudaPreludeTest checks that the two are the same bits.
#ifndef AMP_TEST_UNIT_COMMON_BLOCKEMULATION_H
#define AMP_TEST_UNIT_COMMON_BLOCKEMULATION_H

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "runtime/numerics/Convert.h"

namespace amp::emu {

struct Index3 {
  unsigned x = 0, y = 0, z = 0;
};
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// What the running thread reads as threadIdx, blockIdx, blockDim and gridDim.
extern Index3 gThreadIdx, gBlockIdx;
extern Dim3 gBlockDim, gGridDim;

// Blocks in increasing (z, y, x) and threads in increasing index, or both reversed.
enum class Schedule { Forward, Reverse };

// Runs `kernel` once on every thread of every block of the grid. Returns "" or what went wrong
// (a divergent barrier).
std::string launch(Dim3 grid, Dim3 block, const std::function<void()>& kernel, Schedule schedule = Schedule::Forward);

// __syncthreads(): the running fiber waits for the rest of its block.
void syncthreads();

}  // namespace amp::emu

#define threadIdx (::amp::emu::gThreadIdx)
#define blockIdx (::amp::emu::gBlockIdx)
#define blockDim (::amp::emu::gBlockDim)
#define gridDim (::amp::emu::gGridDim)
#define __syncthreads() ::amp::emu::syncthreads()
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
// One OS thread runs every fiber, and a fiber only yields at a barrier: read-modify-write is atomic.
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
  const unsigned long long old = *address;
  if (value < old) *address = value;
  return old;
}

inline float amp_ld_bf16(unsigned short b) { return amp::rt::bf16ToF32(b); }
inline unsigned short amp_st_bf16(float x) { return amp::rt::f32ToBF16(x); }
inline float amp_rn_bf16(float x) { return amp_ld_bf16(amp_st_bf16(x)); }
inline float amp_ld_f16(unsigned short h) { return amp::rt::f16ToF32(h); }
inline unsigned short amp_st_f16(float x) { return amp::rt::f32ToF16(x); }
inline float amp_rn_f16(float x) { return amp_ld_f16(amp_st_f16(x)); }

#endif  // AMP_TEST_UNIT_COMMON_BLOCKEMULATION_H
