// f64 vector operations for AVX-512 F + VL + DQ (8 doubles a vector), in the form the certified
// kernels' templates take them (ExpNonPositiveSimd.h, GeluExactSimd.h, SoftmaxExactSimd.h). Include
// only from files compiled for those extensions; internal linkage, so no caller without them can
// link it.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_AVX512_F64VECAVX512_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_AVX512_F64VECAVX512_H

#include <immintrin.h>

#include <cstdint>

namespace amp::rt::cpu {
namespace {

struct F64Avx512 {
  using V = __m512d;
  using M = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr unsigned kAllLanes = 0xff;
  static V set1(double a) { return _mm512_set1_pd(a); }
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V a) { _mm512_storeu_pd(p, a); }
  static V loadWidened(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  static void storeNarrowed(float* p, V a) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(a)); }  // RNE (MXCSR)
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm512_fnmadd_pd(a, b, c); }  // c - a b
  static V neg(V a) { return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(a), _mm512_set1_epi64(INT64_MIN))); }
  static V abs(V a) { return _mm512_abs_pd(a); }
  static V min(V a, V b) { return _mm512_min_pd(a, b); }
  static M lt(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
  static M le(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_LE_OQ); }
  static M both(M a, M b) { return static_cast<M>(a & b); }
  static M either(M a, M b) { return static_cast<M>(a | b); }
  static V select(M m, V yes, V no) { return _mm512_mask_blend_pd(m, no, yes); }
  static unsigned bits(M m) { return m; }
  // Lanes whose two values round to the same f32 bit pattern (RNE, MXCSR, as the reference's cast).
  static M sameF32(V a, V b) {
    return _mm256_cmpeq_epi32_mask(_mm256_castps_si256(_mm512_cvtpd_ps(a)), _mm256_castps_si256(_mm512_cvtpd_ps(b)));
  }
  // p 2^k, k an integer in [-1022, 0]: vscalefpd, exact while the result is a normal double.
  static V scaleByPow2(V p, V k, V /*u*/) { return _mm512_scalef_pd(p, k); }
};

}  // namespace
}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_AVX512_F64VECAVX512_H
