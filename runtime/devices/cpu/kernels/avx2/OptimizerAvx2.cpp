// The Adam and SGD element updates for AVX2 (8 floats a vector). This file alone is compiled with
// -mavx2 and no -mfma (runtime/devices/CMakeLists.txt): every multiply and add rounds on its own.
// OptimizerKernels.cpp calls it only where the host has AVX2.
#include <immintrin.h>

#include "runtime/devices/cpu/kernels/OptimizerSimd.h"

namespace amp::rt::cpu::optimizer_isa {
namespace {

struct Avx2 {
  using V = __m256;
  using Mask = __m256i;  // all-ones lanes are loaded and stored
  static constexpr int kLanes = 8;
  static V set1(float a) { return _mm256_set1_ps(a); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V a) { _mm256_storeu_ps(p, a); }
  // The first `count` (1..7) lanes; the others are neither read nor written (no fault past the end).
  static Mask tailMask(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V loadTail(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void storeTail(float* p, V a, Mask m) { _mm256_maskstore_ps(p, m, a); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
};

}  // namespace

void adamAvx2(const AdamCoefficients& c, const AdamBlock& b, int64_t n) { adam<Avx2>(c, b, n); }
void sgdAvx2(const SgdCoefficients& c, const SgdBlock& b, int64_t n) { sgd<Avx2>(c, b, n); }

}  // namespace amp::rt::cpu::optimizer_isa
