// The exact GELU's kernels for AVX2 + FMA (4 doubles a vector). This file alone is compiled with
// -mavx2 -mfma (runtime/devices/CMakeLists.txt); GeluExact.cpp calls it only where the host has both.
#include <immintrin.h>

#include "runtime/devices/cpu/kernels/avx2/F64VecAvx2.h"
#include "runtime/devices/cpu/kernels/GeluExactSimd.h"

namespace amp::rt::cpu::gelu_erf {
namespace {

using Avx2 = F64Avx2;

}  // namespace

int64_t forwardAvx2(const float* x, float* fast, int32_t* rejected, int64_t n) {
  return forward<Avx2>(x, fast, rejected, n);
}
int64_t gradAvx2(const float* x, const float* dy, float* fast, int32_t* rejected, int64_t n) {
  return grad<Avx2>(x, dy, fast, rejected, n);
}
void erfPlusOneAvx2(const double* t, double* s, int64_t n) { erfPlusOneLoop<Avx2>(t, s, n); }
void expAvx2(const double* w, double* e, int64_t n) { expLoop<Avx2>(w, e, n); }

}  // namespace amp::rt::cpu::gelu_erf
