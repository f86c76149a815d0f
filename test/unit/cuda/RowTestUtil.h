// What the row kernels' block helpers compute (runtime/devices/cuda/kernels/RowKernels.cuh),
// replayed on the host for the kernels' parity tests: the block-wide max of a row with RowMath.h's
// tie-break, and the in-order sum thread 0 accumulates.
#ifndef AMP_TEST_UNIT_CUDA_ROWTESTUTIL_H
#define AMP_TEST_UNIT_CUDA_ROWTESTUTIL_H

#include <cstdint>
#include <limits>

#include "runtime/devices/cuda/kernels/RowMath.h"

namespace amp::rt::rowtest {

constexpr int kBlock = 256;  // the kernels' threads per block

// amp_row_block_max: each of the block's threads scans elements t, t + 256, ... in order, then the
// kernel's tree combines the partials.
inline float blockMax(const float* row, int64_t len) {
  float maxes[kBlock];
  long long firstAt[kBlock];
  for (int t = 0; t < kBlock; ++t) {
    maxes[t] = -std::numeric_limits<float>::infinity();
    firstAt[t] = AMP_ROW_NO_INDEX;
    for (int64_t j = t; j < len; j += kBlock) amp_row_max_step(&maxes[t], &firstAt[t], row[j], j);
  }
  for (int half = kBlock / 2; half > 0; half /= 2)
    for (int t = 0; t < half; ++t) amp_row_max_combine(&maxes[t], &firstAt[t], maxes[t + half], firstAt[t + half]);
  return maxes[0];
}

// amp_row_ordered_sum: thread 0 adds the block's terms in index order, chunk after chunk.
template <class Term>
float orderedSum(int64_t len, const Term& term) {
  float sum = 0.0f;
  for (int64_t j = 0; j < len; ++j) sum += term(j);
  return sum;
}

}  // namespace amp::rt::rowtest

#endif  // AMP_TEST_UNIT_CUDA_ROWTESTUTIL_H
