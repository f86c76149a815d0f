// The certified softmax kernels, written once over a small set of vector operations `S`
// (SoftmaxExactAvx2.cpp and SoftmaxExactAvx512.cpp supply them). Each f32 lane is one slice: every
// operation is the reference's (softmaxSlice) on that lane, in its order, so only e^w is
// approximated, and certified (SoftmaxExactKernels.h). Included only by those files, which are
// compiled for their ISA: everything here has internal linkage.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACTSIMD_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACTSIMD_H

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "runtime/devices/cpu/kernels/ExpNonPositiveSimd.h"
#include "runtime/devices/cpu/kernels/SoftmaxExactKernels.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/numerics/Softmax.h"

namespace amp::rt::cpu::softmax_exact {
namespace {

// The reference's e for one lane, from the f32 difference d = x - m.
inline float referenceExp(float d) { return static_cast<float>(std::exp(double(d))); }

// g = e^w on S::kLanes doubles, `ok` the lanes where f32(g) is certified to be the reference's.
template <class S>
inline typename S::V certifiedExp(typename S::V w, unsigned* ok) {
  using V = typename S::V;
  const auto underflow = S::lt(w, S::set1(kUnderflow));
  if (S::bits(underflow) == S::kAllLanes) {  // e.g. a masked block of attention scores
    *ok = S::kAllLanes;
    return S::set1(0.0);
  }
  const V g = expNonPositive<S>(w);
  const V bound = S::mul(g, S::set1(kBoundPerE));
  const auto inPoly = S::both(S::le(S::set1(kUnderflow), w), S::le(w, S::set1(0.0)));  // NaN: neither
  // Equal f32 bits at both ends (not ==, which would let -0 and +0 pass).
  *ok = S::bits(S::either(underflow, S::both(inPoly, S::sameF32(S::sub(g, bound), S::add(g, bound)))));
  return S::select(underflow, S::set1(0.0), g);
}

// f32 e for a group of d = x - m; lanes the bound leaves open are recomputed as the reference does.
template <class S>
inline typename S::F groupExp(typename S::F d, int64_t* fallbacks) {
  unsigned okLo, okHi;
  const typename S::V lo = certifiedExp<S>(S::widenLo(d), &okLo);
  const typename S::V hi = certifiedExp<S>(S::widenHi(d), &okHi);
  typename S::F e = S::narrow(lo, hi);
  const unsigned bad = ~(okLo | okHi << S::kLanes) & ((1u << S::kGroup) - 1);
  if (bad == 0) return e;
  alignas(64) float ds[S::kGroup], es[S::kGroup];
  S::fstore(ds, d);
  S::fstore(es, e);
  for (unsigned b = bad; b != 0; b &= b - 1) es[__builtin_ctz(b)] = referenceExp(ds[__builtin_ctz(b)]);
  *fallbacks += __builtin_popcount(bad);
  return S::fload(es);
}

template <class S>
int64_t columns(const float* x, int64_t len, int64_t stride, bool log, float* y) {
  using F = typename S::F;
  // max_ps(a, m) is a > m ? a : m, the reference's step: NaN skipped, the first of equal zeros kept.
  F m = S::fset1(-__builtin_inff());
  auto hasNaN = S::fnan(m);
  for (int64_t j = 0; j < len; ++j) {
    const F v = S::fload(x + j * stride);
    m = S::fmax(v, m);
    hasNaN = S::forNaN(hasNaN, v);
  }
  // Per lane, the sum of e_j in the contract's blocked pairwise order (SumOrder.h): each block of
  // AMP_SUM_BLOCK terms in j order from +0, the block sums into a tree (the lane-wise `+` of GCC's
  // vector types is the scalar addition in every lane).
  AmpSumTree<F> tree;
  tree.reset();
  int64_t fallbacks = 0;
  for (int64_t j0 = 0; j0 < len; j0 += AMP_SUM_BLOCK) {
    const int64_t j1 = len - j0 < AMP_SUM_BLOCK ? len : j0 + AMP_SUM_BLOCK;
    F block = S::fset1(0.0f);
    for (int64_t j = j0; j < j1; ++j) {
      const F e = groupExp<S>(S::fsub(S::fload(x + j * stride), m), &fallbacks);
      block = S::fadd(block, e);
      if (!log) S::fstore(y + j * stride, e);
    }
    tree.push(block);
  }
  const F s = tree.result(S::fset1(0.0f));
  if (log) {
    alignas(64) float lse[S::kGroup];
    S::fstore(lse, s);
    for (float& v : lse) v = static_cast<float>(std::log(double(v)));
    const F l = S::fload(lse);
    for (int64_t j = 0; j < len; ++j) S::fstore(y + j * stride, S::fsub(S::fsub(S::fload(x + j * stride), m), l));
  } else {
    for (int64_t j = 0; j < len; ++j) S::fstore(y + j * stride, S::fdiv(S::fload(y + j * stride), s));
  }
  // Which NaN a sum of two different NaNs keeps depends on the operand order the compiler chose
  // for an addition (commutative to it), here and in softmaxSlice: a slice holding a NaN is
  // softmaxSlice's own, run again from x (which y does not overlap).
  for (unsigned b = S::fbits(hasNaN); b != 0; b &= b - 1) {
    softmaxSlice(x + __builtin_ctz(b), len, stride, log, y + __builtin_ctz(b));
    fallbacks += len;
  }
  return fallbacks;
}

// dst[c * dstStride + r] = src[r * srcStride + c] for r, c < 8 (AVX: both ISA files have it).
inline void transpose8x8(const float* src, int64_t srcStride, float* dst, int64_t dstStride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * srcStride);
  for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dstStride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dstStride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// Rows through transposed [len, G] tiles (data moves: no value changes); padding lanes hold
// zeros, a harmless softmax whose results are dropped. `tiles` holds 2 G len floats.
template <class S>
int64_t rows(const float* x, int64_t nrows, int64_t len, bool log, float* y, float* tiles) {
  constexpr int G = S::kGroup;
  float* in = tiles;
  float* out = tiles + G * len;
  const int64_t fullJ = nrows == G ? len / 8 * 8 : 0;
  for (int64_t j = 0; j < fullJ; j += 8)
    for (int b = 0; b < G; b += 8) transpose8x8(x + b * len + j, len, in + j * G + b, G);
  for (int64_t j = fullJ; j < len; ++j)
    for (int r = 0; r < G; ++r) in[j * G + r] = r < nrows ? x[r * len + j] : 0.0f;
  const int64_t fallbacks = columns<S>(in, len, G, log, out);
  for (int64_t j = 0; j < fullJ; j += 8)
    for (int b = 0; b < G; b += 8) transpose8x8(out + j * G + b, G, y + b * len + j, len);
  for (int64_t r = 0; r < nrows; ++r)
    for (int64_t j = fullJ; j < len; ++j) y[r * len + j] = out[j * G + r];
  return fallbacks;
}

template <class S>
void expLanes(const float* w, float* e, uint8_t* ok, int64_t n) {
  for (int64_t i = 0; i < n; i += S::kGroup) {
    const typename S::F d = S::fload(w + i);
    unsigned okLo, okHi;
    const typename S::V lo = certifiedExp<S>(S::widenLo(d), &okLo);
    const typename S::V hi = certifiedExp<S>(S::widenHi(d), &okHi);
    S::fstore(e + i, S::narrow(lo, hi));
    const unsigned bits = okLo | okHi << S::kLanes;
    for (int l = 0; l < S::kGroup; ++l) ok[i + l] = (bits >> l) & 1;
  }
}

template <class S>
void approxExp(const double* w, double* e, int64_t n) {
  for (int64_t i = 0; i < n; i += S::kLanes) S::store(e + i, expNonPositive<S>(S::load(w + i)));
}

}  // namespace
}  // namespace amp::rt::cpu::softmax_exact

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACTSIMD_H
