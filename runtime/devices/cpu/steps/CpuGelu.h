// GELU (tanh approximation) and its gradient for the cpu device, bit-exact with the reference but
// without a libm tanh call per element.
//
// The reference evaluates both in f64 with std::tanh and rounds the result to f32 once
// (ReferenceElementwise.cpp, ReferenceGrad.cpp). Here tanh comes from a vectorisable f64 exp
// (Cody-Waite reduction, degree-13 Taylor polynomial) whose absolute error, together with glibc's
// own (at most 2 ulp), stays far below 2^-45. The same f64 expression then gives a value within a
// bound B of the reference's f64 value (the error propagated through each operation, with a
// margin of 2 or more). When both ends of [y - B, y + B] round to the same f32, so does the
// reference's value, which lies between them: that f32 is the result. Otherwise (about one element
// in 10^4 on normal activations, or |z| >= 19, NaN, inf) the element is computed exactly as the
// reference does. GeluTest checks every bf16 and f16 input and a million random f32 ones.
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_CPUGELU_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_CPUGELU_H

#include <cstdint>

namespace amp::rt::cpu {

// y[i] = f32(0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), x = x[i] widened to f64.
void geluTanhBlock(const float* x, float* y, int64_t n);

// y[i] = f32(dy[i] * g'(x[i])) with the reference's f64 expression for g' (the tanh GELU).
void geluTanhGradBlock(const float* x, const float* dy, float* y, int64_t n);

// The reference's f64 derivative g'(x) of the tanh GELU, term for term.
double geluTanhDerivative(double x);

// Elements of the last call on this thread that took the exact path (for tests and tuning).
int64_t geluExactFallbacks();

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_CPUGELU_H
