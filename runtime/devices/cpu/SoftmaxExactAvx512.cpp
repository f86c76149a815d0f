// The certified softmax's kernels for AVX-512 (F + VL + DQ): 16 slices a call, e^w on two
// 8-double vectors. This file alone is compiled for them (runtime/devices/CMakeLists.txt);
// SoftmaxExact.cpp calls it only where the host has them.
#include <immintrin.h>

#include "runtime/devices/cpu/SoftmaxExactSimd.h"

namespace amp::rt::cpu::softmax_exact {
namespace {

struct Avx512 {
  // f64 lanes, for e^w (the operations ExpNonPositiveSimd.h uses, and the certificate's).
  using V = __m512d;
  using M = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr unsigned kAllLanes = 0xff;
  static V set1(double a) { return _mm512_set1_pd(a); }
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V a) { _mm512_storeu_pd(p, a); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm512_fnmadd_pd(a, b, c); }  // c - a b
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

  // f32 lanes, one slice each.
  using F = __m512;
  static constexpr int kGroup = kAvx512Group;
  static F fset1(float a) { return _mm512_set1_ps(a); }
  static F fload(const float* p) { return _mm512_loadu_ps(p); }
  static void fstore(float* p, F a) { _mm512_storeu_ps(p, a); }
  static F fmax(F a, F m) { return _mm512_max_ps(a, m); }  // a > m ? a : m
  static F fadd(F a, F b) { return _mm512_add_ps(a, b); }
  static F fsub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F fdiv(F a, F b) { return _mm512_div_ps(a, b); }
  static __mmask16 fnan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }  // lanes where a is NaN
  static __mmask16 forNaN(__mmask16 nan, F a) { return static_cast<__mmask16>(nan | fnan(a)); }
  static unsigned fbits(__mmask16 nan) { return nan; }
  static V widenLo(F a) { return _mm512_cvtps_pd(_mm512_castps512_ps256(a)); }
  static V widenHi(F a) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)); }
  static F narrow(V lo, V hi) {  // RNE
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
  }
};

}  // namespace

int64_t columnsAvx512(const float* x, int64_t len, int64_t stride, bool log, float* y) {
  return columns<Avx512>(x, len, stride, log, y);
}
int64_t rowsAvx512(const float* x, int64_t n, int64_t len, bool log, float* y, float* tile) {
  return rows<Avx512>(x, n, len, log, y, tile);
}
void expLanesAvx512(const float* w, float* e, uint8_t* ok, int64_t n) { expLanes<Avx512>(w, e, ok, n); }
void approxExpAvx512(const double* w, double* e, int64_t n) { approxExp<Avx512>(w, e, n); }

}  // namespace amp::rt::cpu::softmax_exact
