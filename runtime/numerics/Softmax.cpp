#include "runtime/numerics/Softmax.h"

#include <cmath>
#include <limits>

namespace amp::rt {

void softmaxSlice(const float* x, int64_t len, int64_t stride, bool log, float* y) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < len; ++j) m = x[j * stride] > m ? x[j * stride] : m;  // NaN -> NaN later
  float s = 0.0f;
  for (int64_t j = 0; j < len; ++j) {
    const float e = static_cast<float>(std::exp(double(x[j * stride] - m)));
    s += e;
    if (!log) y[j * stride] = e;
  }
  if (log) {
    const float lse = static_cast<float>(std::log(double(s)));
    for (int64_t j = 0; j < len; ++j) y[j * stride] = (x[j * stride] - m) - lse;
  } else {
    for (int64_t j = 0; j < len; ++j) y[j * stride] = y[j * stride] / s;
  }
}

}  // namespace amp::rt
