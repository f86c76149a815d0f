// Many sums that advance together, one per column, each in the contract's blocked pairwise order
// (runtime/kernels/math/SumOrder.h): the caller adds a block of terms into acc[0..n) in order from
// +0, then closeBlock passes every column's block sum up the tree. All columns close their blocks
// together, so one block counter serves them and level l of column j is levels[l * stride + j]:
// AmpSumTree's binary counter laid out by column, which the vector loops below run across columns.
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_COLUMNSUMS_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_COLUMNSUMS_H

#include <cstdint>

#include "runtime/kernels/math/SumOrder.h"

namespace amp::rt::cpu {

class ColumnSums {
 public:
  // The levels that sums of `terms` terms can hold (AMP_SUM_LEVELS covers any).
  static int64_t levelsFor(int64_t terms) {
    int64_t levels = 0;
    for (int64_t blocks = (terms + AMP_SUM_BLOCK - 1) / AMP_SUM_BLOCK; blocks > 0; blocks >>= 1) ++levels;
    return levels;
  }

  // `levels` holds levelsFor(terms) rows of `stride` floats, stride >= the columns summed.
  ColumnSums(float* levels, int64_t stride) : levels_(levels), stride_(stride) {}

  // A new set of sums (no block closed yet).
  void reset() { blocks_ = 0; }

  // acc[j] (j < n) is column j's next block sum: up the tree; acc restarts from +0.
  void closeBlock(float* acc, int64_t n) {
    int64_t b = blocks_++, l = 0;
    for (; b & 1; b >>= 1, ++l) {
      const float* left = level(l);
      for (int64_t j = 0; j < n; ++j) acc[j] = left[j] + acc[j];  // the left subtree first
    }
    float* slot = level(l);
    for (int64_t j = 0; j < n; ++j) {
      slot[j] = acc[j];
      acc[j] = 0.0f;
    }
  }

  // out[j] = column j's sum over every closed block: the held levels added from the smallest up
  // (+0 where none was closed).
  void result(float* out, int64_t n) const {
    bool any = false;
    for (int64_t l = 0; (blocks_ >> l) != 0; ++l) {
      if (!((blocks_ >> l) & 1)) continue;
      const float* held = level(l);
      for (int64_t j = 0; j < n; ++j) out[j] = any ? held[j] + out[j] : held[j];
      any = true;
    }
    if (!any)
      for (int64_t j = 0; j < n; ++j) out[j] = 0.0f;
  }

 private:
  float* level(int64_t l) const { return levels_ + l * stride_; }

  float* levels_;
  int64_t stride_;
  int64_t blocks_ = 0;
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_COLUMNSUMS_H
