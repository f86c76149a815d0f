// The Adam and SGD element updates written once over a small set of f32 vector operations `S`
// (OptimizerAvx2.cpp and OptimizerAvx512.cpp supply them). Included only by those files, which are
// compiled for their ISA: everything here has internal linkage, so no function compiled for AVX2 or
// AVX-512 can be picked by the linker for a caller on a machine without it.
//
// Each lane runs the scalar loop's operations (OptimizerKernels.cpp) in its order and with its
// operand order, one correctly rounded instruction each, so the lanes give its bits. The
// configuration's branches are template parameters: one loop per combination, none inside it.
// A vector's inputs are all loaded before its outputs are stored, so outputs may be inputs.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_OPTIMIZERSIMD_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_OPTIMIZERSIMD_H

#include <cstdint>

#include "runtime/devices/cpu/kernels/OptimizerKernels.h"

namespace amp::rt::cpu::optimizer_isa {
namespace {

// Runs body(i, load, store) on whole vectors, then once with masked loads and stores on the
// last n % kLanes elements.
template <class S, class Body>
inline void forEachVector(int64_t n, const Body& body) {
  using V = typename S::V;
  int64_t i = 0;
  for (; i + S::kLanes <= n; i += S::kLanes)
    body(i, [](const float* p) { return S::load(p); }, [](float* p, V v) { S::store(p, v); });
  if (i < n) {
    const auto mask = S::tailMask(n - i);
    body(i, [mask](const float* p) { return S::loadTail(p, mask); }, [mask](float* p, V v) { S::storeTail(p, v, mask); });
  }
}

template <class S, bool kWeightDecay, bool kDecoupled, bool kSmallWeight>
void adamLoop(const AdamCoefficients& c, const AdamBlock& b, int64_t n) {
  using V = typename S::V;
  const V decay = S::set1(c.decay), wd = S::set1(c.wd), w = S::set1(c.w), oneMinusW = S::set1(c.oneMinusW);
  const V b2 = S::set1(c.b2), c2 = S::set1(c.c2), bc2Sqrt = S::set1(c.bc2Sqrt), eps = S::set1(c.eps);
  const V negStepSize = S::set1(c.negStepSize);
  forEachVector<S>(n, [&](int64_t i, auto load, auto store) {
    V gk = load(b.g + i), pk = load(b.pin + i);
    const V mk0 = load(b.min + i), vin = load(b.vin + i);
    if (kWeightDecay) {
      if (kDecoupled) pk = S::mul(pk, decay);
      else gk = S::add(gk, S::mul(wd, pk));
    }
    const V diff = S::sub(gk, mk0);
    const V mk = kSmallWeight ? S::add(mk0, S::mul(w, diff)) : S::sub(gk, S::mul(diff, oneMinusW));
    const V vk = S::add(S::mul(vin, b2), S::mul(S::mul(c2, gk), gk));
    const V denom = S::add(S::div(S::sqrt(vk), bc2Sqrt), eps);
    const V pk1 = S::add(pk, S::div(S::mul(negStepSize, mk), denom));
    store(b.m + i, mk);
    store(b.v + i, vk);
    store(b.p + i, pk1);
  });
}

template <class S>
void adam(const AdamCoefficients& c, const AdamBlock& b, int64_t n) {
  if (!c.weightDecay)
    return c.smallWeight ? adamLoop<S, false, false, true>(c, b, n) : adamLoop<S, false, false, false>(c, b, n);
  if (c.decoupled)
    return c.smallWeight ? adamLoop<S, true, true, true>(c, b, n) : adamLoop<S, true, true, false>(c, b, n);
  return c.smallWeight ? adamLoop<S, true, false, true>(c, b, n) : adamLoop<S, true, false, false>(c, b, n);
}

template <class S, bool kWeightDecay, bool kMomentum, bool kNesterov>
void sgdLoop(const SgdCoefficients& c, const SgdBlock& b, int64_t n) {
  using V = typename S::V;
  const V lr = S::set1(c.lr), momentum = S::set1(c.momentum), wd = S::set1(c.wd);
  forEachVector<S>(n, [&](int64_t i, auto load, auto store) {
    V d = load(b.g + i);
    const V pk = load(b.pin + i);
    if (kWeightDecay) d = S::add(d, S::mul(wd, pk));
    if (kMomentum) {
      const V bk = S::add(S::mul(load(b.bin + i), momentum), d);
      d = kNesterov ? S::add(d, S::mul(momentum, bk)) : bk;
      store(b.buf + i, bk);
    }
    store(b.p + i, S::sub(pk, S::mul(lr, d)));
  });
}

template <class S>
void sgd(const SgdCoefficients& c, const SgdBlock& b, int64_t n) {
  const bool momentum = b.buf != nullptr;
  if (c.weightDecay) {
    if (!momentum) return sgdLoop<S, true, false, false>(c, b, n);
    return c.nesterov ? sgdLoop<S, true, true, true>(c, b, n) : sgdLoop<S, true, true, false>(c, b, n);
  }
  if (!momentum) return sgdLoop<S, false, false, false>(c, b, n);
  return c.nesterov ? sgdLoop<S, false, true, true>(c, b, n) : sgdLoop<S, false, true, false>(c, b, n);
}

}  // namespace
}  // namespace amp::rt::cpu::optimizer_isa

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_OPTIMIZERSIMD_H
