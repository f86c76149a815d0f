// The certified softmax's kernels for AVX-512 (F + VL + DQ): 16 slices a call, e^w on two
// 8-double vectors. This file alone is compiled for them (runtime/devices/CMakeLists.txt);
// SoftmaxExact.cpp calls it only where the host has them.
#include <immintrin.h>

#include "runtime/devices/cpu/kernels/avx512/F64VecAvx512.h"
#include "runtime/devices/cpu/kernels/SoftmaxExactSimd.h"

namespace amp::rt::cpu::softmax_exact {
namespace {

// f64 lanes (F64Avx512) for e^w and its certificate, f32 lanes one slice each.
struct Avx512 : F64Avx512 {
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
