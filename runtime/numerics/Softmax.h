// Softmax and log-softmax of one row, in the numeric contract's f32 order: the oracle's
// amp.softmax / amp.log_softmax / amp.cross_entropy and the cpu device's kernels run this same
// function, so they agree bit for bit (docs/numerics.md).
#ifndef AMP_RUNTIME_NUMERICS_SOFTMAX_H
#define AMP_RUNTIME_NUMERICS_SOFTMAX_H

#include <cstdint>

namespace amp::rt {

// Numerically stable (log_)softmax of the `len` f32 values x[0], x[stride], ... into y (same
// strides). Order: m = max; e_j = f32(exp(fl(x_j - m))); s = sum_j e_j (j increasing, f32);
// softmax y_j = fl(e_j / s); log_softmax y_j = fl(fl(x_j - m) - f32(log s)). NaN propagates.
void softmaxSlice(const float* x, int64_t len, int64_t stride, bool log, float* y);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_SOFTMAX_H
