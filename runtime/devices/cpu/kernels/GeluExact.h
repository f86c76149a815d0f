// The exact (erf) GELU and its gradient for the cpu device, bit-exact with the reference but
// without libm's erf and exp per element where the CPU has AVX2 + FMA or AVX-512.
//
// The reference evaluates both in f64 with glibc's erf/exp and rounds the result to f32 once
// (ReferenceElementwise.cpp, ReferenceGrad.cpp). The vector paths run the same f64 expression
// with erf and exp replaced by polynomial approximations of measured error, and bound the distance
// B between their value and the reference's (their error, glibc's documented 1 ulp, every
// rounding on both sides; GeluExactKernels.h). When v - B and v + B round to the same f32 bits, so
// does the reference's value, which lies between them: that f32 is the result. Elsewhere (about
// one element in 10^5 on normal activations; |x| > 37, x below about -7 where 1 + erf(x/sqrt 2)
// cancels, NaN, inf) the element is computed exactly as the reference does. Narrower result types
// are rounded from that f32, as the reference does, so certifying the f32 is enough.
// docs/cpu-device.md has the method; GeluExactTest checks every path against the reference.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACT_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACT_H

#include <cstdint>

#include "runtime/devices/cpu/kernels/VectorPath.h"

namespace amp::rt::cpu {

// What the vector paths need (GeluExactAvx2.cpp, GeluExactAvx512.cpp): fma on both, VL and DQ on
// AVX-512. VectorPath::Scalar is the reference's formula per element.
inline constexpr VectorPathNeeds kGeluErfNeeds{/*fma=*/true, /*avx512VlDq=*/true};

// y[i] = f32(0.5 x (1 + erf(x / sqrt 2))), x = x[i] widened to f64, on
// hostVectorPath(kGeluErfNeeds). y may be x.
void geluErfBlock(const float* x, float* y, int64_t n);
// y[i] = f32(dy[i] d(x[i])), d the reference's f64 derivative. y may be x or dy.
void geluErfGradBlock(const float* x, const float* dy, float* y, int64_t n);

// The reference's f64 derivative d(x) (gelu_grad is f32(dy d(x))), term for term: the exact path,
// and the table the cpu device keeps for bf16/f16 inputs.
double geluErfDerivative(double x);

// The same on a given path, which the caller checked the host runs (tests, the bench). They
// return how many elements took the exact fallback.
int64_t geluErfBlock(VectorPath path, const float* x, float* y, int64_t n);
int64_t geluErfGradBlock(VectorPath path, const float* x, const float* dy, float* y, int64_t n);

// For tests, on a vector path: one element's fast f32 value whether or not the bound certifies it,
// and whether it does.
struct GeluErfLane {
  float fast;
  bool certified;
};
GeluErfLane geluErfForwardLane(VectorPath path, float x);
GeluErfLane geluErfGradLane(VectorPath path, float x, float dy);

// For tests, on a vector path: the approximations of 1 + erf(t) and of e^w (-700 <= w <= 0) alone;
// n a multiple of 8.
void geluErfApproxErfPlusOne(VectorPath path, const double* t, double* s, int64_t n);
void geluErfApproxExp(VectorPath path, const double* w, double* e, int64_t n);

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_GELUEXACT_H
