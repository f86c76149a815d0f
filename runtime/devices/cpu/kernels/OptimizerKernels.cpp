#include "runtime/devices/cpu/kernels/OptimizerKernels.h"

#include <cmath>

namespace amp::rt::cpu {
namespace {

// The reference's element formulas, term for term (this file is compiled with -ffp-contract=off).
// Each element's inputs are read before its outputs are written, so in-place blocks are fine.
void adamScalar(const AdamCoefficients& c, const AdamBlock& b, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    float gk = b.g[k], pk = b.pin[k];
    if (c.weightDecay) {
      if (c.decoupled) pk = pk * c.decay;
      else gk = gk + c.wd * pk;
    }
    const float mk0 = b.min[k];
    const float diff = gk - mk0;
    const float mk = c.smallWeight ? mk0 + c.w * diff : gk - diff * c.oneMinusW;
    const float vk = b.vin[k] * c.b2 + c.c2 * gk * gk;
    const float denom = std::sqrt(vk) / c.bc2Sqrt + c.eps;
    b.m[k] = mk;
    b.v[k] = vk;
    b.p[k] = pk + c.negStepSize * mk / denom;
  }
}

void sgdScalar(const SgdCoefficients& c, const SgdBlock& b, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    float d = b.g[k];
    const float pk = b.pin[k];
    if (c.weightDecay) d = d + c.wd * pk;
    if (b.buf) {
      const float bk = b.bin[k] * c.momentum + d;
      b.buf[k] = bk;
      d = c.nesterov ? d + c.momentum * bk : bk;
    }
    b.p[k] = pk - c.lr * d;
  }
}

}  // namespace

void adamUpdateBlock(VectorPath path, const AdamCoefficients& c, const AdamBlock& b, int64_t n) {
  switch (path) {
    case VectorPath::Avx512: return optimizer_isa::adamAvx512(c, b, n);
    case VectorPath::Avx2: return optimizer_isa::adamAvx2(c, b, n);
    case VectorPath::Scalar: break;
  }
  adamScalar(c, b, n);
}

void sgdUpdateBlock(VectorPath path, const SgdCoefficients& c, const SgdBlock& b, int64_t n) {
  switch (path) {
    case VectorPath::Avx512: return optimizer_isa::sgdAvx512(c, b, n);
    case VectorPath::Avx2: return optimizer_isa::sgdAvx2(c, b, n);
    case VectorPath::Scalar: break;
  }
  sgdScalar(c, b, n);
}

}  // namespace amp::rt::cpu
