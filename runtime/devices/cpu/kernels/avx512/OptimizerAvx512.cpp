// The Adam and SGD element updates for AVX-512 (16 floats a vector). This file alone is compiled
// with -mavx512f (runtime/devices/CMakeLists.txt); -ffp-contract=off keeps the compiler from fusing
// a multiply and an add into an FMA. OptimizerKernels.cpp calls it only where the host has AVX-512F.
#include <immintrin.h>

#include "runtime/devices/cpu/kernels/OptimizerSimd.h"

namespace amp::rt::cpu::optimizer_isa {
namespace {

struct Avx512 {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V a) { _mm512_storeu_ps(p, a); }
  // The first `count` (1..15) lanes; the others are neither read nor written (no fault past the end).
  static Mask tailMask(int64_t count) { return static_cast<Mask>((1u << count) - 1u); }
  static V loadTail(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void storeTail(float* p, V a, Mask m) { _mm512_mask_storeu_ps(p, m, a); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
};

}  // namespace

void adamAvx512(const AdamCoefficients& c, const AdamBlock& b, int64_t n) { adam<Avx512>(c, b, n); }
void sgdAvx512(const SgdCoefficients& c, const SgdBlock& b, int64_t n) { sgd<Avx512>(c, b, n); }

}  // namespace amp::rt::cpu::optimizer_isa
