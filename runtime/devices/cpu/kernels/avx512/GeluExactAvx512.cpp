// The exact GELU's kernels for AVX-512 (8 doubles a vector, F + VL + DQ). This file alone is
// compiled for them (runtime/devices/CMakeLists.txt); GeluExact.cpp calls it only where the host
// has them.
#include <immintrin.h>

#include "runtime/devices/cpu/kernels/avx512/F64VecAvx512.h"
#include "runtime/devices/cpu/kernels/GeluExactSimd.h"

namespace amp::rt::cpu::gelu_erf {
namespace {

using Avx512 = F64Avx512;

}  // namespace

int64_t forwardAvx512(const float* x, float* fast, int32_t* rejected, int64_t n) {
  return forward<Avx512>(x, fast, rejected, n);
}
int64_t gradAvx512(const float* x, const float* dy, float* fast, int32_t* rejected, int64_t n) {
  return grad<Avx512>(x, dy, fast, rejected, n);
}
void erfPlusOneAvx512(const double* t, double* s, int64_t n) { erfPlusOneLoop<Avx512>(t, s, n); }
void expAvx512(const double* w, double* e, int64_t n) { expLoop<Avx512>(w, e, n); }

}  // namespace amp::rt::cpu::gelu_erf
