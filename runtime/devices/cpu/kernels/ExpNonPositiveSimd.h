// The f64 vector e^w (w <= 0) shared by the cpu device's certified kernels (the exact GELU's
// GeluExactSimd.h, the softmax's SoftmaxExactSimd.h), written over a vector-operation set `S`.
// Included only by files compiled for one ISA: everything here has internal linkage, so no function
// compiled for AVX2 or AVX-512 can be picked by the linker for a caller on a machine without it.
// Its error is measured by GeluExactTest and SoftmaxExactTest (2^-52.8 worst seen; 2^-49 claimed).
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_EXPNONPOSITIVESIMD_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_EXPNONPOSITIVESIMD_H

namespace amp::rt::cpu {
namespace {

template <class S, int N>
inline typename S::V horner(typename S::V x, const double (&c)[N]) {
  typename S::V p = S::set1(c[0]);
  for (int i = 1; i < N; ++i) p = S::fma(p, x, S::set1(c[i]));
  return p;
}

// e^w for -700 <= w <= 0 (other lanes get garbage; the caller rejects them): w = k ln2 + r with
// ln2 split as fdlibm's (k ln2_hi is exact), |r| <= ln2/2, Taylor to degree 13 (truncation below
// 2^-57) and 2^k placed in the exponent bits.
template <class S>
inline typename S::V expNonPositive(typename S::V w) {
  constexpr double kInvLn2 = 1.44269504088896338700, kLn2Hi = 6.93147180369123816490e-01,
                   kLn2Lo = 1.90821492927058770002e-10, kShifter = 0x1.8p52;
  static constexpr double kTaylor[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                                       1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
                                       1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5,
                                       1.0,                1.0};
  const typename S::V u = S::fma(w, S::set1(kInvLn2), S::set1(kShifter));  // k in the low bits
  const typename S::V k = S::sub(u, S::set1(kShifter));
  typename S::V r = S::fnma(k, S::set1(kLn2Hi), w);
  r = S::fnma(k, S::set1(kLn2Lo), r);
  return S::scaleByPow2(horner<S>(r, kTaylor), k, u);
}

}  // namespace
}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_EXPNONPOSITIVESIMD_H
