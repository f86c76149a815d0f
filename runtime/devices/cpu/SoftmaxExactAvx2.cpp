// The certified softmax's kernels for AVX2 + FMA: 8 slices a call, e^w on two 4-double vectors.
// This file alone is compiled with -mavx2 -mfma (runtime/devices/CMakeLists.txt); SoftmaxExact.cpp
// calls it only where the host has both.
#include <immintrin.h>

#include "runtime/devices/cpu/SoftmaxExactSimd.h"

namespace amp::rt::cpu::softmax_exact {
namespace {

struct Avx2 {
  // f64 lanes, for e^w (the operations ExpNonPositiveSimd.h uses, and the certificate's).
  using V = __m256d;
  using M = __m256d;  // all-ones lanes
  static constexpr int kLanes = 4;
  static constexpr unsigned kAllLanes = 0xf;
  static V set1(double a) { return _mm256_set1_pd(a); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V a) { _mm256_storeu_pd(p, a); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm256_fnmadd_pd(a, b, c); }  // c - a b
  static M lt(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
  static M le(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_LE_OQ); }
  static M both(M a, M b) { return _mm256_and_pd(a, b); }
  static M either(M a, M b) { return _mm256_or_pd(a, b); }
  static V select(M m, V yes, V no) { return _mm256_blendv_pd(no, yes, m); }
  static unsigned bits(M m) { return static_cast<unsigned>(_mm256_movemask_pd(m)); }
  // Lanes whose two values round to the same f32 bit pattern (RNE, MXCSR, as the reference's cast).
  static M sameF32(V a, V b) {
    const __m128i eq = _mm_cmpeq_epi32(_mm_castps_si128(_mm256_cvtpd_ps(a)), _mm_castps_si128(_mm256_cvtpd_ps(b)));
    return _mm256_castsi256_pd(_mm256_cvtepi32_epi64(eq));
  }
  // p 2^k, k an integer in [-1022, 0] and also in u's low mantissa bits (u = k + 1.5 * 2^52):
  // 2^k = (bits(u) + 1023) << 52.
  static V scaleByPow2(V p, V /*k*/, V u) {
    const __m256i e = _mm256_add_epi64(_mm256_castpd_si256(u), _mm256_set1_epi64x(1023));
    return _mm256_mul_pd(p, _mm256_castsi256_pd(_mm256_slli_epi64(e, 52)));
  }

  // f32 lanes, one slice each.
  using F = __m256;
  static constexpr int kGroup = kAvx2Group;
  static F fset1(float a) { return _mm256_set1_ps(a); }
  static F fload(const float* p) { return _mm256_loadu_ps(p); }
  static void fstore(float* p, F a) { _mm256_storeu_ps(p, a); }
  static F fmax(F a, F m) { return _mm256_max_ps(a, m); }  // a > m ? a : m
  static F fadd(F a, F b) { return _mm256_add_ps(a, b); }
  static F fsub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F fdiv(F a, F b) { return _mm256_div_ps(a, b); }
  static F fnan(F a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }  // all-ones lanes where a is NaN
  static F forNaN(F nan, F a) { return _mm256_or_ps(nan, fnan(a)); }
  static unsigned fbits(F nan) { return static_cast<unsigned>(_mm256_movemask_ps(nan)); }
  static V widenLo(F a) { return _mm256_cvtps_pd(_mm256_castps256_ps128(a)); }
  static V widenHi(F a) { return _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)); }
  static F narrow(V lo, V hi) { return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)); }  // RNE
};

}  // namespace

int64_t columnsAvx2(const float* x, int64_t len, int64_t stride, bool log, float* y) {
  return columns<Avx2>(x, len, stride, log, y);
}
int64_t rowsAvx2(const float* x, int64_t n, int64_t len, bool log, float* y, float* tile) {
  return rows<Avx2>(x, n, len, log, y, tile);
}
void expLanesAvx2(const float* w, float* e, uint8_t* ok, int64_t n) { expLanes<Avx2>(w, e, ok, n); }
void approxExpAvx2(const double* w, double* e, int64_t n) { approxExp<Avx2>(w, e, n); }

}  // namespace amp::rt::cpu::softmax_exact
