// The vector kernels behind GeluExact.h, one set per ISA (GeluExactAvx2.cpp, GeluExactAvx512.cpp,
// each compiled for its ISA only), and the error bounds they certify with. Internal to the cpu
// device; tests reach the kernels through GeluExact.h.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACTKERNELS_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACTKERNELS_H

#include <cstdint>

namespace amp::rt::cpu::gelu_erf {

// The reference's constants (ReferenceElementwise.cpp, ReferenceGrad.cpp).
inline constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1/sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2*pi)

// |x| <= kDomain takes the vector path: there exp(-x^2/2) >= 2^-988 stays a normal double. Beyond
// it (and for NaN) every element is recomputed exactly.
inline constexpr double kDomain = 37.0;

// Claimed bounds of the approximations, each 4x or more above the worst error that
// GeluExactTest.ApproximationErrorsStayWithinTheClaimedBounds measures on every path:
// |erfPlusOne(t) - (1 + erf(t))| <= kErfPlusOneError (absolute; rounding of the result included),
// |exp(w) - e^w| <= kExpError e^w for -700 <= w <= 0.
inline constexpr double kErfPlusOneError = 0x1p-49;
inline constexpr double kExpError = 0x1p-49;

// The reference's own errors. glibc 2.36 documents (libm-test-ulps, x86_64) erf and exp within 1
// ulp: |erf| < 1 has ulp <= 2^-53, so fl(1 + erf) is within 2^-53 + 2^-53 (its rounding) of
// 1 + erf(t), and exp within 2^-52 relative.
inline constexpr double kReferenceErfPlusOneError = 0x1p-52;
inline constexpr double kReferenceExpError = 0x1p-52;

// Forward, g = fl(h s) with h = x/2 exact and s = 1 + erf(t):
//   |g_fast - g_ref| <= |h| (kErfPlusOneError + kReferenceErfPlusOneError) + |g| kProductRounding,
// kProductRounding covering the two roundings of the products (2^-53 |g| each) and of g -+ B
// (2^-53 |g| each) twice over.
inline constexpr double kForwardPerHalfX = kErfPlusOneError + kReferenceErfPlusOneError;
inline constexpr double kProductRounding = 0x1p-50;
// Gradient, d = fl(fl(s/2) + p), p = fl(fl(v/sqrt(2 pi)) exp(w)), out = fl(dy d):
//   |d_fast - d_ref| <= (kErfPlusOneError + kReferenceErfPlusOneError) / 2
//                       + |p| (kExpError + kReferenceExpError + 2^-52: the roundings of both p)
//                       + |d| 2^-51 (the roundings of both d, with a margin of 2)   =: D,
//   |out_fast - out_ref| <= |dy| D + |out| kProductRounding.
inline constexpr double kGradPerUnit = kForwardPerHalfX / 2;
inline constexpr double kGradPerP = kExpError + kReferenceExpError + 0x1p-52;
inline constexpr double kGradPerD = 0x1p-51;

// 1 + erf(t) for |t| < 1: 1 + t P(t^2), P a degree-11 Chebyshev fit of erf(sqrt(u))/sqrt(u) on
// [0, 1] (fit error 2^-56.9), highest degree first.
inline constexpr double kErfSmall[] = {
    -0x1.ac9585a44fe29p-31, 0x1.d76af6ca49787p-27, -0x1.5c131500d3f88p-23, 0x1.b981d78881a5dp-20,
    -0x1.f4ca838adb73bp-17, 0x1.f9a2be4f731a1p-14, -0x1.c02db0665e53dp-11, 0x1.565bccfa44156p-8,
    -0x1.b82ce31203772p-6,  0x1.ce2f21a040f66p-4,  -0x1.812746b0379c1p-2, 0x1.20dd750429b6dp+0};
// erfc(a) for 1 <= a <= 6: e^(-a^2) Q(z), z = (a - 2) / (a + 2) in [-1/3, 1/2], Q a degree-14
// Chebyshev fit of erfc(a) e^(a^2) (fit error 2^-53.3, absolute, against values <= 0.43),
// highest degree first. Beyond 6, erfc(6) < 2^-55 stands in for erfc(a).
inline constexpr double kErfcScaled[] = {
    0x1.06de90fce20e3p-18, 0x1.e89749bb276c3p-20,  -0x1.d8072f8b2af1ep-17, -0x1.cfd845cfda3f9p-16,
    0x1.ce18d5b499621p-16, 0x1.6dac8e32716eep-13,  0x1.6d5bf00483674p-15,  -0x1.016b61e9c90a9p-10,
    -0x1.bc25a2a5685b8p-11, 0x1.ca95ed5c92a4bp-8,  0x1.e9471595c0b9dp-9,   -0x1.437f0b68c2dc0p-4,
    0x1.eeea7dc8a7932p-3,  -0x1.b57034efd3f69p-2, 0x1.058671b52c776p-2};

// n is a multiple of 8. `fast` gets f32 of the fast value for every element; `rejected` the
// indices where the bound does not certify it (outside the domain, NaN, a rounding boundary within
// the bound); the return value is their count.
int64_t forwardAvx2(const float* x, float* fast, int32_t* rejected, int64_t n);
int64_t gradAvx2(const float* x, const float* dy, float* fast, int32_t* rejected, int64_t n);
int64_t forwardAvx512(const float* x, float* fast, int32_t* rejected, int64_t n);
int64_t gradAvx512(const float* x, const float* dy, float* fast, int32_t* rejected, int64_t n);

// The approximations alone (n a multiple of 8), for measuring their errors.
void erfPlusOneAvx2(const double* t, double* s, int64_t n);
void expAvx2(const double* w, double* e, int64_t n);
void erfPlusOneAvx512(const double* t, double* s, int64_t n);
void expAvx512(const double* w, double* e, int64_t n);

}  // namespace amp::rt::cpu::gelu_erf

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACTKERNELS_H
