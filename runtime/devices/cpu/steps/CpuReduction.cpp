// reduce_sum / reduce_mean / reduce_max over a contiguous run of dims, seen as [outer, R, inner].
// Each output sums its R inputs in f32 in the contract's blocked pairwise order (in-order blocks of
// AMP_SUM_BLOCK inputs, then the fixed tree over the block sums: runtime/kernels/math/SumOrder.h),
// the reference's order, so results match the reference bit for bit; a max takes its inputs in
// increasing order. Non-contiguous dims fall back to the reference kernel.
// Speed comes from converting whole blocks of inputs at once and from running independent
// outputs' accumulations side by side, never from reordering one output's adds.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/steps/ColumnSums.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {
namespace {

// The reference's update of one accumulator by one input: a sum adds; a max takes the input when it
// is larger or NaN (NaN propagates and sticks).
template <bool IsMax>
inline float accumulate(float acc, float v) {
  if constexpr (IsMax) return (v > acc || v != v) ? v : acc;
  else return acc + v;
}

// acc[l] (l < L) runs over rows[l][0..n) in order. The L chains are independent, so their adds
// pipeline instead of waiting on one another; each chain's own order is the reference's.
template <bool IsMax, int L>
inline void accumulateRows(const float* const* rows, float* acc, int64_t n) {
  float a[L];
  for (int l = 0; l < L; ++l) a[l] = acc[l];
  for (int64_t k = 0; k < n; ++k)
    for (int l = 0; l < L; ++l) a[l] = accumulate<IsMax>(a[l], rows[l][k]);
  for (int l = 0; l < L; ++l) acc[l] = a[l];
}

class ReduceStep final : public CpuStep {
 public:
  enum Kind { Sum, Mean, Max };
  ReduceStep(Kind kind, int32_t in, DType inType, int32_t out, DType outType, int64_t outer, int64_t r, int64_t inner)
      : kind_(kind), in_(in), out_(out), inType_(inType), outType_(outType), outer_(outer), r_(r), inner_(inner) {}

  absl::Status run(BufferPtrs ptr) override {
    if (inner_ == 1) {
      if (kind_ == Max) lastDim<true>(ptr); else lastDim<false>(ptr);
    } else if (inner_ < kChunk) {
      if (kind_ == Max) smallInner<true>(ptr); else smallInner<false>(ptr);
    } else {
      if (kind_ == Max) chunked<true>(ptr); else chunked<false>(ptr);
    }
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kChunk = 256;  // outputs per task where inner is large
  static constexpr int64_t kTile = 1024;  // f32 elements of one converted block of inputs
  static constexpr int kRows = 8;         // rows summed together over the last dim
  static_assert(kTile % AMP_SUM_BLOCK == 0, "a converted tile holds whole blocks of the sum's order");

  float initial(bool isMax) const { return isMax ? -std::numeric_limits<float>::infinity() : 0.0f; }

  // The inputs [r0, r1) of the block that starts at r0: a sum's blocks of the contract's order, a
  // max's one run over all R.
  template <bool IsMax>
  int64_t blockEnd(int64_t r0) const {
    return IsMax ? r_ : std::min<int64_t>(r_, r0 + AMP_SUM_BLOCK);
  }

  // A sum's block of acc[0..n) is done: up the columns' trees, and acc restarts from +0. A max has
  // no blocks.
  template <bool IsMax>
  static void closeBlock(float* acc, ColumnSums& sums, int64_t n) {
    if constexpr (!IsMax) sums.closeBlock(acc, n);
  }
  template <bool IsMax>
  static void finishSums(float* acc, const ColumnSums& sums, int64_t n) {
    if constexpr (!IsMax) sums.result(acc, n);
  }

  // Mean's one division, then the rounding to the result type.
  void finish(float* acc, int64_t n, uint8_t* out) const {
    if (kind_ == Mean)
      for (int64_t j = 0; j < n; ++j) acc[j] = acc[j] / static_cast<float>(r_);
    convertBuffer(DType::F32, acc, outType_, out, n);
  }

  // inner == 1 (e.g. softmax's backward sum over the keys): output o reduces the contiguous row
  // x[o, 0..r). kRows rows at a time, each converted to f32 a tile at a time (f32 is read in
  // place), accumulated by interleaved chains; a tile holds whole blocks of the sum's order.
  template <bool IsMax>
  void lastDim(BufferPtrs ptr) const {
    const size_t es = dtypeSize(inType_), eo = dtypeSize(outType_);
    const bool f32 = inType_ == DType::F32;
    const int64_t groups = (outer_ + kRows - 1) / kRows;
    parallelFor(groups, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, r_ * kRows)), [&](int64_t begin, int64_t end) {
      alignas(64) float tile[kRows][kTile];
      float acc[kRows];
      alignas(64) float levels[AMP_SUM_LEVELS * kRows];  // on the stack: a step allocates nothing
      ColumnSums sums(levels, kRows);
      const float* rows[kRows];
      for (int64_t g = begin; g < end; ++g) {
        const int64_t o0 = g * kRows, nRows = std::min<int64_t>(kRows, outer_ - o0);
        for (int l = 0; l < kRows; ++l) acc[l] = initial(IsMax);
        sums.reset();
        for (int64_t k0 = 0; k0 < r_; k0 += kTile) {
          const int64_t n = std::min(kTile, r_ - k0);
          for (int64_t l = 0; l < nRows; ++l) {
            const uint8_t* src = ptr[in_] + ((o0 + l) * r_ + k0) * es;
            if (f32) {
              rows[l] = reinterpret_cast<const float*>(src);
            } else {
              convertBuffer(inType_, src, DType::F32, tile[l], n);
              rows[l] = tile[l];
            }
          }
          for (int64_t b0 = 0; b0 < n;) {
            const int64_t b1 = blockEnd<IsMax>(k0 + b0) - k0;  // within the tile: kTile % AMP_SUM_BLOCK == 0
            const float* blockRows[kRows];
            for (int64_t l = 0; l < nRows; ++l) blockRows[l] = rows[l] + b0;
            if (nRows == kRows) {
              accumulateRows<IsMax, kRows>(blockRows, acc, std::min(b1, n) - b0);
            } else {
              for (int64_t l = 0; l < nRows; ++l) accumulateRows<IsMax, 1>(blockRows + l, acc + l, std::min(b1, n) - b0);
            }
            b0 = std::min(b1, n);
            if (b1 <= n) closeBlock<IsMax>(acc, sums, kRows);
          }
        }
        finishSums<IsMax>(acc, sums, kRows);
        finish(acc, nRows, ptr[out_] + o0 * eo);
      }
    });
  }

  // 1 < inner < kChunk: output (o, j) reduces x[o, 0..r, j]. Consecutive r rows of one outer are
  // contiguous, so a whole block of them converts in one call; the adds run across j.
  template <bool IsMax>
  void smallInner(BufferPtrs ptr) const {
    const size_t es = dtypeSize(inType_), eo = dtypeSize(outType_);
    const bool f32 = inType_ == DType::F32;
    const int64_t rowsPerTile = kTile / inner_;  // >= 4, as inner < kChunk
    parallelFor(outer_, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, r_ * inner_)), [&](int64_t begin, int64_t end) {
      alignas(64) float tile[kTile];
      alignas(64) float acc[kChunk];
      alignas(64) float levels[AMP_SUM_LEVELS * kChunk];
      ColumnSums sums(levels, kChunk);
      for (int64_t o = begin; o < end; ++o) {
        for (int64_t j = 0; j < inner_; ++j) acc[j] = initial(IsMax);
        sums.reset();
        for (int64_t r0 = 0, blockR1 = blockEnd<IsMax>(0); r0 < r_;) {
          const int64_t nr = std::min(rowsPerTile, blockR1 - r0);  // a tile never crosses a block
          const uint8_t* src = ptr[in_] + (o * r_ + r0) * inner_ * es;
          const float* block = reinterpret_cast<const float*>(src);
          if (!f32) {
            convertBuffer(inType_, src, DType::F32, tile, nr * inner_);
            block = tile;
          }
          for (int64_t r = 0; r < nr; ++r)
            for (int64_t j = 0; j < inner_; ++j) acc[j] = accumulate<IsMax>(acc[j], block[r * inner_ + j]);
          r0 += nr;
          if (r0 == blockR1) {
            closeBlock<IsMax>(acc, sums, inner_);
            blockR1 = blockEnd<IsMax>(r0);
          }
        }
        finishSums<IsMax>(acc, sums, inner_);
        finish(acc, inner_, ptr[out_] + o * inner_ * eo);
      }
    });
  }

  // inner >= kChunk: tasks own kChunk consecutive outputs of one outer; each r row of the chunk is
  // converted and added across the chunk.
  template <bool IsMax>
  void chunked(BufferPtrs ptr) const {
    const size_t es = dtypeSize(inType_), eo = dtypeSize(outType_);
    const int64_t chunksPerOuter = (inner_ + kChunk - 1) / kChunk;
    const int64_t tasks = outer_ * chunksPerOuter;
    parallelFor(tasks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, r_ * kChunk)), [&](int64_t begin, int64_t end) {
      alignas(64) float acc[kChunk], row[kChunk];
      alignas(64) float levels[AMP_SUM_LEVELS * kChunk];
      ColumnSums sums(levels, kChunk);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / chunksPerOuter, j0 = (t % chunksPerOuter) * kChunk;
        const int64_t n = std::min(kChunk, inner_ - j0);
        for (int64_t j = 0; j < n; ++j) acc[j] = initial(IsMax);
        sums.reset();
        for (int64_t r = 0, blockR1 = blockEnd<IsMax>(0); r < r_; ++r) {
          convertBuffer(inType_, ptr[in_] + ((o * r_ + r) * inner_ + j0) * es, DType::F32, row, n);
          for (int64_t j = 0; j < n; ++j) acc[j] = accumulate<IsMax>(acc[j], row[j]);
          if (r + 1 == blockR1) {
            closeBlock<IsMax>(acc, sums, n);
            blockR1 = blockEnd<IsMax>(r + 1);
          }
        }
        finishSums<IsMax>(acc, sums, n);
        finish(acc, n, ptr[out_] + (o * inner_ + j0) * eo);
      }
    });
  }

  Kind kind_;
  int32_t in_, out_;
  DType inType_, outType_;
  int64_t outer_, r_, inner_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeReductionStep(const StepContext& c) {
  ReduceStep::Kind kind;
  if (c.code == OpCode::ReduceSum) kind = ReduceStep::Sum;
  else if (c.code == OpCode::ReduceMean) kind = ReduceStep::Mean;
  else if (c.code == OpCode::ReduceMax) kind = ReduceStep::Max;
  else return nullptr;
  if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
  const BufferDesc &x = c.operand(0), &y = c.result(0);
  if (x.dtype != y.dtype || (x.dtype != DType::F32 && x.dtype != DType::BF16 && x.dtype != DType::F16)) return nullptr;
  auto dims = c.step.withAttrsOf<ReduceSumAttrs, ReduceMeanAttrs, ReduceMaxAttrs>([](const auto& a) { return a.dims; });
  if (!dims.ok()) return dims.status();
  auto keepdim = c.step.withAttrsOf<ReduceSumAttrs, ReduceMeanAttrs, ReduceMaxAttrs>([](const auto& a) { return a.keepdim; });
  if (!keepdim.ok()) return keepdim.status();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  for (size_t i = 0; i < dims->size(); ++i)
    if ((*dims)[i] < 0 || (*dims)[i] >= rank || (i > 0 && (*dims)[i] <= (*dims)[i - 1]))
      return c.error(absl::StrCat("attribute 'dims' must be sorted, unique and in [0, ", rank, ")"));
  Shape expected;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = std::find(dims->begin(), dims->end(), d) != dims->end();
    if (!reduced || *keepdim) expected.push_back(reduced ? 1 : x.shape[d]);
  }
  if (expected != y.shape) return c.error(absl::StrCat("result shape must be ", shapeToString(expected)));
  if (dims->empty() || dims->back() - dims->front() + 1 != static_cast<int64_t>(dims->size()))
    return nullptr;  // not a contiguous run of dims
  int64_t outer = 1, r = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < dims->front()) outer *= x.shape[d];
    else if (d <= dims->back()) r *= x.shape[d];
    else inner *= x.shape[d];
  }
  if (kind == ReduceStep::Max && r == 0 && outer * inner > 0) return nullptr;  // the reference reports it
  return std::unique_ptr<CpuStep>(
      new ReduceStep(kind, c.step.operands[0], x.dtype, c.step.results[0], y.dtype, outer, r, inner));
}

}  // namespace amp::rt::cpu
