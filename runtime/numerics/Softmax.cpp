#include "runtime/numerics/Softmax.h"

#include <cmath>
#include <limits>

#include "runtime/kernels/math/SumOrder.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {

void softmaxSlice(const float* x, int64_t len, int64_t stride, bool log, float* y) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < len; ++j) m = x[j * stride] > m ? x[j * stride] : m;  // NaN -> NaN later
  const float s = amp_blocked_sum(len, [&](int64_t j) {
    const float e = static_cast<float>(std::exp(double(x[j * stride] - m)));
    if (!log) y[j * stride] = e;
    return e;
  });
  if (log) {
    const float lse = static_cast<float>(std::log(double(s)));
    for (int64_t j = 0; j < len; ++j) y[j * stride] = (x[j * stride] - m) - lse;
  } else {
    for (int64_t j = 0; j < len; ++j) y[j * stride] = y[j * stride] / s;
  }
}

void softmaxGradSlice(const float* y, const float* dy, int64_t len, int64_t stride, DType t, float* dx) {
  if (t == DType::F32) {  // every rounding below is the identity; spelled out, the loops vectorise
    const float s = amp_blocked_sum(len, [&](int64_t j) { return dy[j * stride] * y[j * stride]; });
    for (int64_t j = 0; j < len; ++j) dx[j * stride] = y[j * stride] * (dy[j * stride] - s);
    return;
  }
  const float s =
      roundToDType(t, amp_blocked_sum(len, [&](int64_t j) { return roundToDType(t, dy[j * stride] * y[j * stride]); }));
  for (int64_t j = 0; j < len; ++j)
    dx[j * stride] = roundToDType(t, y[j * stride] * roundToDType(t, dy[j * stride] - s));
}

}  // namespace amp::rt
