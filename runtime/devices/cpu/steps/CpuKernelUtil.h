// Internal to the cpu device's row kernels (CpuNorm, CpuEmbedding, CpuShape, CpuGrad, CpuPool):
// per-slot scratch for parallel loops, f32 widening of operand runs and prepare-time helpers.
// Scratch is sized at prepare, so run() never allocates.
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_CPUKERNELUTIL_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_CPUKERNELUTIL_H

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {

// Number of scratch slots a step keeps: one per OpenMP thread at prepare time. parallelChunks
// never runs more chunks than slots, whatever the thread count at run time.
inline int scratchSlots() { return std::max(1, omp_get_max_threads()); }

// Splits [0, n) into at most `slots` contiguous chunks of at least `grain` items (one chunk when
// n < 2 * grain) and runs body(slot, begin, end) once per chunk, chunks in parallel. Each chunk
// has its own slot index in [0, slots), so a body may use slot-private scratch without races.
template <class F>
void parallelChunks(int64_t n, int64_t grain, int slots, F&& body) {
  if (n <= 0) return;
  const int64_t chunks = std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, std::max(slots, 1));
  if (chunks == 1) {
    body(0, int64_t{0}, n);
    return;
  }
  parallelFor(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) body(static_cast<int>(c), n * c / chunks, n * (c + 1) / chunks);
  });
}

// A float type the row kernels compute with: widened exactly to f32, rounded back RNE.
inline bool isKernelFloat(DType t) { return isFloat(t) && t != DType::F64; }
inline bool isIndex(DType t) { return t == DType::I32 || t == DType::I64; }

// n elements of a `t` buffer starting at element i0, as f32. For f32 data this is the buffer
// itself (no copy); otherwise they are widened into `tmp` (exact, as loadAsF32).
inline const float* widenRun(DType t, const uint8_t* base, int64_t i0, int64_t n, float* tmp) {
  if (t == DType::F32) return reinterpret_cast<const float*>(base) + i0;
  convertBuffer(t, base + i0 * static_cast<int64_t>(dtypeSize(t)), DType::F32, tmp, n);
  return tmp;
}

// Writes n f32 values as elements [i0, i0 + n) of a `t` buffer, rounding RNE (as storeFromF32).
inline void narrowRun(const float* y, DType t, uint8_t* base, int64_t i0, int64_t n) {
  convertBuffer(DType::F32, y, t, base + i0 * static_cast<int64_t>(dtypeSize(t)), n);
}

// Run-only f32 scratch of a step, in the arena bytes the entry gives the step's scratch
// (CpuStep::sharedScratchBytes and bindSharedScratch). Reserve at construction, bind before the
// first run.
class SharedFloats {
 public:
  // Reserves n floats at a 64-byte aligned offset and returns that offset.
  int64_t reserve(int64_t n) {
    const int64_t off = total_;
    total_ += (std::max<int64_t>(n, 0) + 15) / 16 * 16;
    return off;
  }
  int64_t bytes() const { return total_ * static_cast<int64_t>(sizeof(float)); }
  void bind(uint8_t* p) { base_ = reinterpret_cast<float*>(p); }
  float* at(int64_t offset) const { return base_ + offset; }

 private:
  int64_t total_ = 0;
  float* base_ = nullptr;
};

// An integer id/label of an i32 or i64 buffer.
inline int64_t loadId(DType t, const uint8_t* base, int64_t i) {
  return t == DType::I64 ? reinterpret_cast<const int64_t*>(base)[i] : reinterpret_cast<const int32_t*>(base)[i];
}

// Row-major element strides of a shape.
inline std::vector<int64_t> rowMajor(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Multi-index of linear index i, "[1, 0, 2]" (error messages only).
inline std::string positionString(const Shape& shape, int64_t i) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return shapeToString(idx);
}

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_CPUKERNELUTIL_H
