// Softmax, log-softmax and the softmax gradient of one row, in the numeric contract's f32 order: the oracle's
// amp.softmax / amp.log_softmax / amp.cross_entropy and the cpu device's kernels run this same
// function, so they agree bit for bit (docs/numerics.md).
#ifndef AMP_RUNTIME_NUMERICS_SOFTMAX_H
#define AMP_RUNTIME_NUMERICS_SOFTMAX_H

#include <cstdint>

#include "runtime/DType.h"

namespace amp::rt {

// Numerically stable (log_)softmax of the `len` f32 values x[0], x[stride], ... into y (same
// strides). Order: m = max; e_j = f32(exp(fl(x_j - m))); s = sum_j e_j (f32, the contract's
// blocked pairwise order of runtime/kernels/math/SumOrder.h: in j order up to 256 terms);
// softmax y_j = fl(e_j / s); log_softmax y_j = fl(fl(x_j - m) - f32(log s)). NaN propagates.
void softmaxSlice(const float* x, int64_t len, int64_t stride, bool log, float* y);

// amp.softmax_grad of one row: y and dy are `len` f32 values each holding a value of `t` (the
// result type, f32/bf16/f16; dy's own type may be narrower), at strides `stride`; dx gets the
// results, already rounded to `t`. Order (round = RNE to t): p_j = round(fl(dy_j * y_j));
// s = round(sum_j p_j) (f32 from +0, the blocked pairwise order); dx_j = round(fl(y_j * round(fl(dy_j - s)))):
// the amp.mul, amp.reduce_sum (keepdim), amp.sub, amp.mul chain it replaces, bit for bit.
void softmaxGradSlice(const float* y, const float* dy, int64_t len, int64_t stride, DType t, float* dx);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_SOFTMAX_H
