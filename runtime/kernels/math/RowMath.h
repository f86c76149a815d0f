// The row max of the CUDA device's softmax-like kernels (LossKernels.cu, NormKernels.cu), shared
// by the GPU and the host tests: as the reference's softmaxSlice takes it, m = x > m ? x : m from
// m = -inf in index order. NaN never becomes the max (it reaches the result through x - m), and of
// equal values the first stays, which decides the sign of a zero max. Each partial max remembers
// the first index holding it, so partials over any split of the row combine into the sequential
// result's exact bits.
#ifndef AMP_RUNTIME_KERNELS_MATH_ROWMATH_H
#define AMP_RUNTIME_KERNELS_MATH_ROWMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

// The position a max candidate has before any element raised it: loses every tie.
#define AMP_ROW_NO_INDEX 0x7fffffffffffffffLL

AMP_TM void amp_row_max_step(float* max, long long* at, float x, long long j) {
  if (x > *max) {
    *max = x;
    *at = j;
  }
}
AMP_TM void amp_row_max_combine(float* max, long long* at, float otherMax, long long otherAt) {
  if (otherMax > *max || (otherMax == *max && otherAt < *at)) {
    *max = otherMax;
    *at = otherAt;
  }
}

#endif  // AMP_RUNTIME_KERNELS_MATH_ROWMATH_H
