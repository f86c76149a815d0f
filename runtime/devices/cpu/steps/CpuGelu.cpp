#include "runtime/devices/cpu/steps/CpuGelu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace amp::rt::cpu {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // the reference's constants
constexpr int64_t kChunk = 256;
thread_local int64_t exactFallbacks = 0;

inline uint64_t bitsOf(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
inline double fromBits(uint64_t u) {
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// tanh(z) for |z| < 20 with absolute error below 2^-50: tanh|z| = 1 - 2 / (e^(2|z|) + 1), e^w by
// w = k ln2 + r (ln2 split as fdlibm's, so k ln2_hi is exact), |r| <= ln2 / 2, a Taylor polynomial
// of degree 13 (truncation below 2^-57) and 2^k assembled in the exponent bits. No branches and no
// calls, so the loops around it vectorise. Outside |z| < 20 the caller takes the exact path.
inline double fastTanh(double z) {
  constexpr double kInvLn2 = 1.44269504088896338700, kLn2Hi = 6.93147180369123816490e-01,
                   kLn2Lo = 1.90821492927058770002e-10, kShifter = 0x1.8p52;
  const double w = 2.0 * std::fabs(z);
  const double u = w * kInvLn2 + kShifter;  // round(w / ln2) in the low mantissa bits
  const double k = u - kShifter;
  const double r = (w - k * kLn2Hi) - k * kLn2Lo;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const double scale = fromBits((bitsOf(u) + 1023) << 52);  // 2^k, 0 <= k <= 58
  const double t = 1.0 - 2.0 / (p * scale + 1.0);
  return std::copysign(t, z);
}

// |z| beyond 19 (or NaN) takes the exact path (kOutside); clamped here only so that the vector
// lanes compute something harmless. A plain select, not std::fmin (a libm call that stops vectorisation).
inline double clampZ(double z) { return z > 19.0 ? 19.0 : z < -19.0 ? -19.0 : z; }

// The bounds below take |fastTanh(z) - std::tanh(z)| <= 2^-45: ours is below 2^-50 and glibc's
// within 2 ulp (<= 2^-51 for |t| <= 1), so the margin is 16.

constexpr double kOutside = __builtin_inf();  // a bound that certifies nothing

// Both ends of [value - bound, value + bound] round to one f32 (false for NaN or an infinite bound).
inline bool certain(double value, double bound) {
  return static_cast<float>(value - bound) == static_cast<float>(value + bound);
}

double exactGelu(double x) { return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x))); }

double exactGeluGrad(double v, double dy) { return dy * geluTanhDerivative(v); }

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void geluChunk(const float* x, double* value, double* bound, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double z = kSqrt2OverPi * (v + 0.044715 * v * v * v);
    const double h = 0.5 * v;
    const double g = h * (1.0 + fastTanh(clampZ(z)));
    // fl(1 + t) moves by at most |dt| + 2^-52, fl(h u) by |h| |du| + ulp(g): 2^-44 |h| and
    // 2^-50 |g| cover both twice.
    value[i] = g;
    // Outside the fast domain the bound is infinite, so the element takes the exact path.
    bound[i] = std::fabs(z) < 19.0 ? std::fabs(h) * 0x1p-44 + std::fabs(g) * 0x1p-50 : kOutside;
  }
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void geluGradChunk(const float* x, const float* dy, double* value, double* bound, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double z = kSqrt2OverPi * (v + 0.044715 * v * v * v);
    const double t = fastTanh(clampZ(z));
    const double a = 0.5 * (1.0 + t);
    const double c = 0.5 * v * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * v * v);
    const double d = a + c;
    const double o = double(dy[i]) * d;
    // |da| <= 2^-46 + ulp; |d(1 - t^2)| <= 2|dt| + 2^-51, scaled by |0.5 v k (1 + 0.134 v^2)|
    // <= G = 0.5 |v| (1 + 0.14 v^2); every rounding is below 2^-52 of its operands.
    const double grow = 0.5 * std::fabs(v) * (1.0 + 0.14 * v * v);
    const double bd = 0x1p-44 + grow * 0x1p-42 + (std::fabs(a) + std::fabs(c)) * 0x1p-49;
    value[i] = o;
    // An infinite dy makes the bound infinite (or o NaN): the exact path, as outside the domain.
    bound[i] = std::fabs(z) < 19.0 ? std::fabs(double(dy[i])) * bd + std::fabs(o) * 0x1p-49 : kOutside;
  }
}

}  // namespace

double geluTanhDerivative(double v) {
  const double t = std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v));
  return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * v * v);
}

// y may be x (an in-place step): each element is read before it is written.
void geluTanhBlock(const float* x, float* y, int64_t n) {
  alignas(64) double value[kChunk], bound[kChunk];
  int64_t fallbacks = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    geluChunk(x + i0, value, bound, m);
    for (int64_t i = 0; i < m; ++i) {
      const float xi = x[i0 + i];
      const bool fast = certain(value[i], bound[i]);
      fallbacks += !fast;
      y[i0 + i] = static_cast<float>(fast ? value[i] : exactGelu(xi));
    }
  }
  exactFallbacks = fallbacks;
}

// y may be x or dy (an in-place step): each element is read before it is written.
void geluTanhGradBlock(const float* x, const float* dy, float* y, int64_t n) {
  alignas(64) double value[kChunk], bound[kChunk];
  int64_t fallbacks = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    geluGradChunk(x + i0, dy + i0, value, bound, m);
    for (int64_t i = 0; i < m; ++i) {
      const float xi = x[i0 + i], di = dy[i0 + i];
      const bool fast = certain(value[i], bound[i]);
      fallbacks += !fast;
      y[i0 + i] = static_cast<float>(fast ? value[i] : exactGeluGrad(xi, di));
    }
  }
  exactFallbacks = fallbacks;
}

int64_t geluExactFallbacks() { return exactFallbacks; }

}  // namespace amp::rt::cpu
