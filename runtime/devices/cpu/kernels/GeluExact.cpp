#include "runtime/devices/cpu/kernels/GeluExact.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/devices/cpu/kernels/GeluExactKernels.h"

namespace amp::rt::cpu {
double geluErfDerivative(double v) {
  return 0.5 * (1.0 + std::erf(v * gelu_erf::kSqrt1_2)) + v * gelu_erf::kInvSqrt2Pi * std::exp(-0.5 * v * v);
}

namespace {

using gelu_erf::kInvSqrt2Pi;
using gelu_erf::kSqrt1_2;

constexpr int64_t kChunk = 256;  // elements per kernel call: a multiple of every path's 8
constexpr int64_t kPad = 8;

// The reference's formulas, term for term (this file is compiled with -ffp-contract=off).
float exactGelu(float xf) {
  const double x = xf;
  return static_cast<float>(0.5 * x * (1.0 + std::erf(x * kSqrt1_2)));
}
float exactGeluGrad(float xf, float dyf) { return static_cast<float>(double(dyf) * geluErfDerivative(xf)); }

using ForwardKernel = int64_t (*)(const float*, float*, int32_t*, int64_t);
using GradKernel = int64_t (*)(const float*, const float*, float*, int32_t*, int64_t);

ForwardKernel forwardKernel(VectorPath path) {
  return path == VectorPath::Avx512 ? gelu_erf::forwardAvx512 : gelu_erf::forwardAvx2;
}
GradKernel gradKernel(VectorPath path) {
  return path == VectorPath::Avx512 ? gelu_erf::gradAvx512 : gelu_erf::gradAvx2;
}

// `in` itself, or its first m elements copied to `padded` and zero-filled to a multiple of kPad.
const float* padTo8(const float* in, int64_t m, float* padded) {
  if (m % kPad == 0) return in;
  std::memcpy(padded, in, m * sizeof(float));
  std::fill(padded + m, padded + (m + kPad - 1) / kPad * kPad, 0.0f);
  return padded;
}

// Results go to a chunk buffer first, so that y may alias x or dy: a rejected element's inputs are
// still there to recompute it.
int64_t forwardOn(VectorPath path, const float* x, float* y, int64_t n) {
  const ForwardKernel kernel = forwardKernel(path);
  alignas(64) float xs[kChunk], fast[kChunk];
  int32_t rejected[kChunk];
  int64_t fallbacks = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    const int64_t r = kernel(padTo8(x + i0, m, xs), fast, rejected, (m + kPad - 1) / kPad * kPad);
    for (int64_t k = 0; k < r; ++k)
      if (rejected[k] < m) fast[rejected[k]] = exactGelu(x[i0 + rejected[k]]), ++fallbacks;
    std::memcpy(y + i0, fast, m * sizeof(float));
  }
  return fallbacks;
}

int64_t gradOn(VectorPath path, const float* x, const float* dy, float* y, int64_t n) {
  const GradKernel kernel = gradKernel(path);
  alignas(64) float xs[kChunk], ds[kChunk], fast[kChunk];
  int32_t rejected[kChunk];
  int64_t fallbacks = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    const int64_t r = kernel(padTo8(x + i0, m, xs), padTo8(dy + i0, m, ds), fast, rejected, (m + kPad - 1) / kPad * kPad);
    for (int64_t k = 0; k < r; ++k)
      if (rejected[k] < m) fast[rejected[k]] = exactGeluGrad(x[i0 + rejected[k]], dy[i0 + rejected[k]]), ++fallbacks;
    std::memcpy(y + i0, fast, m * sizeof(float));
  }
  return fallbacks;
}

}  // namespace

int64_t geluErfBlock(VectorPath path, const float* x, float* y, int64_t n) {
  if (path != VectorPath::Scalar) return forwardOn(path, x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = exactGelu(x[i]);
  return n;
}

int64_t geluErfGradBlock(VectorPath path, const float* x, const float* dy, float* y, int64_t n) {
  if (path != VectorPath::Scalar) return gradOn(path, x, dy, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = exactGeluGrad(x[i], dy[i]);
  return n;
}

void geluErfBlock(const float* x, float* y, int64_t n) { geluErfBlock(hostVectorPath(kGeluErfNeeds), x, y, n); }

void geluErfGradBlock(const float* x, const float* dy, float* y, int64_t n) {
  geluErfGradBlock(hostVectorPath(kGeluErfNeeds), x, dy, y, n);
}

GeluErfLane geluErfForwardLane(VectorPath path, float x) {
  alignas(64) float xs[kPad] = {x}, fast[kPad];
  int32_t rejected[kPad];
  const int64_t r = forwardKernel(path)(xs, fast, rejected, kPad);
  return {fast[0], !(r > 0 && rejected[0] == 0)};
}

GeluErfLane geluErfGradLane(VectorPath path, float x, float dy) {
  alignas(64) float xs[kPad] = {x}, ds[kPad] = {dy}, fast[kPad];
  int32_t rejected[kPad];
  const int64_t r = gradKernel(path)(xs, ds, fast, rejected, kPad);
  return {fast[0], !(r > 0 && rejected[0] == 0)};
}

// n rounded up to whole vectors: callers pass buffers of such sizes.
void geluErfApproxErfPlusOne(VectorPath path, const double* t, double* s, int64_t n) {
  (path == VectorPath::Avx512 ? gelu_erf::erfPlusOneAvx512 : gelu_erf::erfPlusOneAvx2)(t, s, n);
}

void geluErfApproxExp(VectorPath path, const double* w, double* e, int64_t n) {
  (path == VectorPath::Avx512 ? gelu_erf::expAvx512 : gelu_erf::expAvx2)(w, e, n);
}

}  // namespace amp::rt::cpu
