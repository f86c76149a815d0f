// The vector kernels behind SoftmaxExact.h, one set per ISA (SoftmaxExactAvx2.cpp,
// SoftmaxExactAvx512.cpp, each compiled for its ISA only), and the bound they certify e^w with.
// Internal to the cpu device; tests reach them through SoftmaxExact.h.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACTKERNELS_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACTKERNELS_H

#include <cstdint>

namespace amp::rt::cpu::softmax_exact {

// Slices per kernel call, one per f32 lane: 8 on AVX2 (two 4-double exps), 16 on AVX-512.
inline constexpr int kAvx2Group = 8;
inline constexpr int kAvx512Group = 16;
inline constexpr int kMaxGroup = 16;

// The reference's e = f32(exp(w)), w = f64(x - m) <= 0, from ExpNonPositiveSimd.h's polynomial g:
//   |g - e^w| <= kExpError e^w (claimed 4x above the worst SoftmaxExactTest and GeluExactTest
//   measure), |glibc exp(w) - e^w| <= 2^-52 e^w (glibc 2.36 documents exp within 1 ulp),
// so |g - exp(w)| <= (2^-49 + 2^-52) e^w; kBoundPerE = 2^-48 covers that, e^w <= g (1 + 2^-48),
// and the roundings of B = g kBoundPerE and of g -+ B (2^-53 g each) with margin. When g - B and
// g + B round to the same f32 bits, glibc's value, between them, rounds to those bits too.
inline constexpr double kExpError = 0x1p-49;
inline constexpr double kBoundPerE = 0x1p-48;
// Below it e^w (1 + 2^-52) < 2^-150, half the least f32 subnormal: the reference's e is +0
// (e^-104 = 2^-150.04). -inf lands here too. The polynomial runs on [kUnderflow, 0].
inline constexpr double kUnderflow = -104.0;

// Softmax (log = false) or log-softmax of `group` slices at once: slice c (c < group) is
// x[c], x[c + stride], ..., len values; y has the same layout and must not overlap x. Lane for
// lane the reference's operations in its order (max, then e and the f32 sum j = 0, 1, ..., then
// the division or the subtraction); each e the bound does not certify is recomputed as the
// reference does, and a slice holding a NaN is softmaxSlice's own. Returns how many e came from
// libm.
int64_t columnsAvx2(const float* x, int64_t len, int64_t stride, bool log, float* y);
int64_t columnsAvx512(const float* x, int64_t len, int64_t stride, bool log, float* y);
// `rows` <= group consecutive rows of len values (row r at x + r len) through columnsX on
// transposed [len, group] tiles (zero-padded lanes; `tiles` holds 2 group len floats); y may be x.
int64_t rowsAvx2(const float* x, int64_t rows, int64_t len, bool log, float* y, float* tile);
int64_t rowsAvx512(const float* x, int64_t rows, int64_t len, bool log, float* y, float* tile);

// For tests, n a multiple of the group: e[i] the fast f32 e^w[i] (w[i] an f32 widened) whether
// or not certified, ok[i] = 1 where certified. The approximation alone on doubles: n a multiple of 8.
void expLanesAvx2(const float* w, float* e, uint8_t* ok, int64_t n);
void expLanesAvx512(const float* w, float* e, uint8_t* ok, int64_t n);
void approxExpAvx2(const double* w, double* e, int64_t n);
void approxExpAvx512(const double* w, double* e, int64_t n);

}  // namespace amp::rt::cpu::softmax_exact

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACTKERNELS_H
