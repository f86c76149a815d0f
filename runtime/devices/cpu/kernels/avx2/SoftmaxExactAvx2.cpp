// The certified softmax's kernels for AVX2 + FMA: 8 slices a call, e^w on two 4-double vectors.
// This file alone is compiled with -mavx2 -mfma (runtime/devices/CMakeLists.txt); SoftmaxExact.cpp
// calls it only where the host has both.
#include <immintrin.h>

#include "runtime/devices/cpu/kernels/avx2/F64VecAvx2.h"
#include "runtime/devices/cpu/kernels/SoftmaxExactSimd.h"

namespace amp::rt::cpu::softmax_exact {
namespace {

// f64 lanes (F64Avx2) for e^w and its certificate, f32 lanes one slice each.
struct Avx2 : F64Avx2 {
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
