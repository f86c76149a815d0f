// The exact GELU's certified vector algorithm, written once over a small set of vector operations
// `S` (GeluExactAvx2.cpp and GeluExactAvx512.cpp supply them). Included only by those files, which
// are compiled for their ISA: everything here has internal linkage, so no function compiled for
// AVX2 or AVX-512 can be picked by the linker for a caller on a machine without it.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACTSIMD_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACTSIMD_H

#include <cstdint>

#include "runtime/devices/cpu/kernels/ExpNonPositiveSimd.h"
#include "runtime/devices/cpu/kernels/GeluExactKernels.h"

namespace amp::rt::cpu::gelu_erf {
namespace {

// 1 + erf(t), to kErfPlusOneError: 1 + t P(t^2) for |t| < 1, else from erfc(|t|) = e^(-a^2) Q(z)
// (GeluExactKernels.h). Both are computed and blended: no gathers, no branches.
template <class S>
inline typename S::V erfPlusOne(typename S::V t) {
  using V = typename S::V;
  const V a = S::abs(t);
  const V small = S::add(S::set1(1.0), S::mul(t, horner<S>(S::mul(t, t), kErfSmall)));
  const V ac = S::min(a, S::set1(6.0));
  const V z = S::div(S::sub(ac, S::set1(2.0)), S::add(ac, S::set1(2.0)));
  const V erfc = S::mul(expNonPositive<S>(S::neg(S::mul(ac, ac))), horner<S>(z, kErfcScaled));
  const V large = S::select(S::lt(t, S::set1(0.0)), erfc, S::sub(S::set1(2.0), erfc));
  return S::select(S::lt(a, S::set1(1.0)), small, large);
}

// Appends the indices i + lane of the lanes not in `ok`.
inline int64_t appendRejected(unsigned okBits, unsigned allLanes, int64_t i, int32_t* rejected, int64_t count) {
  for (unsigned bad = ~okBits & allLanes; bad != 0; bad &= bad - 1)
    rejected[count++] = static_cast<int32_t>(i + __builtin_ctz(bad));
  return count;
}

// Forward: the reference's f64 operations with erf replaced, certified by GeluExactKernels.h's bound.
template <class S>
int64_t forward(const float* x, float* fast, int32_t* rejected, int64_t n) {
  using V = typename S::V;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += S::kLanes) {
    const V v = S::loadWidened(x + i);
    const V h = S::mul(S::set1(0.5), v);  // exact
    const V g = S::mul(h, erfPlusOne<S>(S::mul(v, S::set1(kSqrt1_2))));
    const V bound = S::add(S::mul(S::abs(h), S::set1(kForwardPerHalfX)), S::mul(S::abs(g), S::set1(kProductRounding)));
    // Equal f32 bits at both ends (not ==, which would let -0 and +0 pass).
    const auto ok = S::both(S::le(S::abs(v), S::set1(kDomain)), S::sameF32(S::sub(g, bound), S::add(g, bound)));
    S::storeNarrowed(fast + i, g);
    count = appendRejected(S::bits(ok), S::kAllLanes, i, rejected, count);
  }
  return count;
}

// Gradient: d = 0.5 (1 + erf(t)) + (v/sqrt(2 pi)) e^(-v v / 2), out = dy d, in the reference's order.
template <class S>
int64_t grad(const float* x, const float* dy, float* fast, int32_t* rejected, int64_t n) {
  using V = typename S::V;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += S::kLanes) {
    const V v = S::loadWidened(x + i), g = S::loadWidened(dy + i);
    const V half = S::mul(S::set1(0.5), erfPlusOne<S>(S::mul(v, S::set1(kSqrt1_2))));  // exact halving
    const V w = S::mul(S::mul(S::set1(-0.5), v), v);                                   // -0.5 * v * v
    const V p = S::mul(S::mul(v, S::set1(kInvSqrt2Pi)), expNonPositive<S>(w));
    const V d = S::add(half, p);
    const V out = S::mul(g, d);
    const V dBound = S::add(S::set1(kGradPerUnit),
                            S::add(S::mul(S::abs(p), S::set1(kGradPerP)), S::mul(S::abs(d), S::set1(kGradPerD))));
    const V bound = S::add(S::mul(S::abs(g), dBound), S::mul(S::abs(out), S::set1(kProductRounding)));
    // |d| > dBound: the reference's d has this sign, so a zero dy gives its signed zero.
    const auto inDomain = S::both(S::le(S::abs(v), S::set1(kDomain)), S::lt(S::abs(g), S::set1(__builtin_inf())));
    const auto ok = S::both(S::both(inDomain, S::lt(dBound, S::abs(d))), S::sameF32(S::sub(out, bound), S::add(out, bound)));
    S::storeNarrowed(fast + i, out);
    count = appendRejected(S::bits(ok), S::kAllLanes, i, rejected, count);
  }
  return count;
}

template <class S>
void erfPlusOneLoop(const double* t, double* s, int64_t n) {
  for (int64_t i = 0; i < n; i += S::kLanes) S::store(s + i, erfPlusOne<S>(S::load(t + i)));
}

template <class S>
void expLoop(const double* w, double* e, int64_t n) {
  for (int64_t i = 0; i < n; i += S::kLanes) S::store(e + i, expNonPositive<S>(S::load(w + i)));
}

}  // namespace
}  // namespace amp::rt::cpu::gelu_erf

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACTSIMD_H
