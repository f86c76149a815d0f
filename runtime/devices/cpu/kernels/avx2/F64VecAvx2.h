// f64 vector operations for AVX2 + FMA (4 doubles a vector), in the form the certified kernels'
// templates take them (ExpNonPositiveSimd.h, GeluExactSimd.h, SoftmaxExactSimd.h). Include only
// from files compiled with -mavx2 -mfma; internal linkage, so no caller without AVX2 can link it.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_AVX2_F64VECAVX2_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_AVX2_F64VECAVX2_H

#include <immintrin.h>

namespace amp::rt::cpu {
namespace {

struct F64Avx2 {
  using V = __m256d;
  using M = __m256d;  // all-ones lanes
  static constexpr int kLanes = 4;
  static constexpr unsigned kAllLanes = 0xf;
  static V set1(double a) { return _mm256_set1_pd(a); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V a) { _mm256_storeu_pd(p, a); }
  static V loadWidened(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static void storeNarrowed(float* p, V a) { _mm_storeu_ps(p, _mm256_cvtpd_ps(a)); }  // RNE (MXCSR)
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm256_fnmadd_pd(a, b, c); }  // c - a b
  static V neg(V a) { return _mm256_xor_pd(a, _mm256_set1_pd(-0.0)); }
  static V abs(V a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
  static V min(V a, V b) { return _mm256_min_pd(a, b); }
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
};

}  // namespace
}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_AVX2_F64VECAVX2_H
