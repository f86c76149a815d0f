// The general forms the fast kernels leave out, so that no step of these ops needs the reference
// fallback:
// - reduce_sum / reduce_mean / reduce_max over any set of dims (empty, non-contiguous) and any
//   float type (f8 included): each output takes its reduced elements in row-major order of the
//   input, a sum in the contract's blocked pairwise order (SumOrder.h, ColumnSums.h), as the
//   reference; outputs whose trailing dims are contiguous are vector lanes.
// - compare on integer, bool and f8 operands (exact int64 / f32 comparisons, numpy broadcasting).
// - transpose of a rank-0 tensor (a copy).
// (CpuReduction.cpp and CpuElementwise.cpp take the common cases first; the executor asks them
// before this file.)
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/steps/ColumnSums.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kChunk = 256;

class GeneralReduceStep final : public CpuStep {
 public:
  enum Kind { Sum, Mean, Max };
  // Output element (o, j), o over the kept dims before the last reduced dim (input offset
  // outerBase[o]) and j over the `inner` trailing kept dims (contiguous); reduced element r at
  // input offset reducedOff[r] (row-major order of the reduced dims).
  GeneralReduceStep(Kind kind, int32_t in, int32_t out, DType dtype, std::vector<int64_t> outerBase,
                    std::vector<int64_t> reducedOff, int64_t inner)
      : kind_(kind), in_(in), out_(out), dtype_(dtype), outerBase_(std::move(outerBase)),
        reducedOff_(std::move(reducedOff)), inner_(inner) {}
  int64_t scratchBytes() const override {
    return static_cast<int64_t>((outerBase_.size() + reducedOff_.size()) * sizeof(int64_t));
  }

  absl::Status run(BufferPtrs ptr) override {
    const int64_t outer = static_cast<int64_t>(outerBase_.size()), r = static_cast<int64_t>(reducedOff_.size());
    const int64_t chunksPerOuter = (inner_ + kChunk - 1) / kChunk;
    const size_t es = dtypeSize(dtype_);
    const uint8_t* x = ptr[in_];
    uint8_t* y = ptr[out_];
    parallelFor(outer * chunksPerOuter, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, r * kChunk)),
                [&](int64_t t0, int64_t t1) {
                  alignas(64) float acc[kChunk], row[kChunk];
                  alignas(64) float levels[AMP_SUM_LEVELS * kChunk];  // on the stack: no allocation
                  ColumnSums sums(levels, kChunk);
                  for (int64_t t = t0; t < t1; ++t) {
                    const int64_t o = t / chunksPerOuter, j0 = (t % chunksPerOuter) * kChunk;
                    const int64_t n = std::min(kChunk, inner_ - j0);
                    for (int64_t j = 0; j < n; ++j) acc[j] = kind_ == Max ? -std::numeric_limits<float>::infinity() : 0.0f;
                    sums.reset();
                    for (int64_t k = 0; k < r; ++k) {
                      convertBuffer(dtype_, x + (outerBase_[o] + reducedOff_[k] + j0) * es, DType::F32, row, n);
                      if (kind_ == Max) {
                        for (int64_t j = 0; j < n; ++j)
                          if (row[j] > acc[j] || std::isnan(row[j])) acc[j] = row[j];  // NaN propagates and sticks
                      } else {
                        for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
                        if ((k + 1) % AMP_SUM_BLOCK == 0 || k + 1 == r)  // the contract's blocked pairwise order
                          sums.closeBlock(acc, n);
                      }
                    }
                    if (kind_ != Max)
                      sums.result(acc, n);
                    if (kind_ == Mean)
                      for (int64_t j = 0; j < n; ++j) acc[j] = acc[j] / static_cast<float>(r);  // 0 elements: NaN
                    narrowRun(acc, dtype_, y, o * inner_ + j0, n);
                  }
                });
    return absl::OkStatus();
  }

 private:
  Kind kind_;
  int32_t in_, out_;
  DType dtype_;
  std::vector<int64_t> outerBase_, reducedOff_;
  int64_t inner_;
};

// Offsets (in elements of `strides`) of every multi-index over `dims` of `shape`, row-major.
std::vector<int64_t> offsetsOf(const Shape& shape, const std::vector<int64_t>& strides, const std::vector<size_t>& dims) {
  int64_t count = 1;
  for (size_t d : dims) count *= shape[d];
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(count, 0)));
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t pos = 0;
  for (int64_t i = 0; i < count; ++i) {
    out[i] = pos;
    for (size_t k = dims.size(); k-- > 0;) {  // odometer increment
      const size_t d = dims[k];
      pos += strides[d];
      if (++idx[k] < shape[d]) break;
      pos -= strides[d] * shape[d];
      idx[k] = 0;
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeGeneralReduce(const StepContext& c) {
  GeneralReduceStep::Kind kind = c.code == OpCode::ReduceSum    ? GeneralReduceStep::Sum
                                 : c.code == OpCode::ReduceMean ? GeneralReduceStep::Mean
                                                           : GeneralReduceStep::Max;
  if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
  const BufferDesc &x = c.operand(0), &y = c.result(0);
  if (!isKernelFloat(x.dtype)) return c.error("operand 0 must have a float element type");
  if (y.dtype != x.dtype) return c.error("the result must have the operand's element type");
  auto dims = c.step.withAttrsOf<ReduceSumAttrs, ReduceMeanAttrs, ReduceMaxAttrs>([](const auto& a) { return a.dims; });
  if (!dims.ok()) return dims.status();
  auto keepdim = c.step.withAttrsOf<ReduceSumAttrs, ReduceMeanAttrs, ReduceMaxAttrs>([](const auto& a) { return a.keepdim; });
  if (!keepdim.ok()) return keepdim.status();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < dims->size(); ++i) {
    if ((*dims)[i] < 0 || (*dims)[i] >= rank || (i > 0 && (*dims)[i] <= (*dims)[i - 1]))
      return c.error(absl::StrCat("attribute 'dims' must be sorted, unique and in [0, ", rank, ")"));
    reduced[(*dims)[i]] = true;
  }
  Shape expected;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d] || *keepdim) expected.push_back(reduced[d] ? 1 : x.shape[d]);
  if (expected != y.shape) return c.error(absl::StrCat("result shape must be ", shapeToString(expected)));
  const int64_t last = dims->empty() ? -1 : dims->back();  // dims after it are the contiguous lanes
  std::vector<size_t> outerDims, reducedDims;
  int64_t inner = 1, count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      reducedDims.push_back(static_cast<size_t>(d));
      count *= x.shape[d];
    } else if (d < last) {
      outerDims.push_back(static_cast<size_t>(d));
    } else {
      inner *= x.shape[d];
    }
  }
  if (kind == GeneralReduceStep::Max && count == 0 && numElements(y.shape) > 0)
    return c.error("maximum over an empty set of elements");
  const std::vector<int64_t> strides = rowMajor(x.shape);
  std::vector<int64_t> outerBase = offsetsOf(x.shape, strides, outerDims);
  std::vector<int64_t> reducedOff = offsetsOf(x.shape, strides, reducedDims);
  if (inner == 0) outerBase.clear();  // nothing to write
  return std::unique_ptr<CpuStep>(new GeneralReduceStep(kind, c.step.operands[0], c.step.results[0], x.dtype,
                                                        std::move(outerBase), std::move(reducedOff), inner));
}

// compare on operands the elementwise kernel leaves out: integers and bool (exact int64) and f8
// (widened to f32). Broadcast index maps are built at prepare.
class GeneralCompareStep final : public CpuStep {
 public:
  GeneralCompareStep(int predicate, DType dtype, int32_t a, int32_t b, int32_t out, std::vector<int64_t> ia,
                     std::vector<int64_t> ib)
      : p_(predicate), dtype_(dtype), a_(a), b_(b), out_(out), ia_(std::move(ia)), ib_(std::move(ib)) {}
  int64_t scratchBytes() const override { return static_cast<int64_t>((ia_.size() + ib_.size()) * sizeof(int64_t)); }

  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* a = ptr[a_];
    const uint8_t* b = ptr[b_];
    uint8_t* y = ptr[out_];
    const bool flt = isFloat(dtype_);
    parallelFor(static_cast<int64_t>(ia_.size()), 16384, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        bool r;
        if (flt) r = cmp(loadAsF32(dtype_, a, ia_[i]), loadAsF32(dtype_, b, ib_[i]));
        else r = cmp(loadInt(a, ia_[i]), loadInt(b, ib_[i]));
        y[i] = r ? 1 : 0;
      }
    });
    return absl::OkStatus();
  }

 private:
  template <class T>
  bool cmp(T x, T y) const {  // IEEE: every predicate but ne is false on NaN
    switch (p_) {
      case 0: return x == y;
      case 1: return x != y;
      case 2: return x < y;
      case 3: return x <= y;
      case 4: return x > y;
      default: return x >= y;
    }
  }
  int64_t loadInt(const uint8_t* p, int64_t i) const {
    switch (dtype_) {
      case DType::I64: return reinterpret_cast<const int64_t*>(p)[i];
      case DType::I32: return reinterpret_cast<const int32_t*>(p)[i];
      default: return p[i];  // U8, Bool
    }
  }
  int p_;
  DType dtype_;
  int32_t a_, b_, out_;
  std::vector<int64_t> ia_, ib_;
};

// For each element of `out`, the element of `in` it reads under numpy broadcasting.
std::vector<int64_t> broadcastMap(const Shape& in, const Shape& out) {
  const size_t off = out.size() - in.size();
  const std::vector<int64_t> inStrides = rowMajor(in);
  std::vector<int64_t> st(out.size(), 0);
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 ? 0 : inStrides[d];
  std::vector<size_t> all(out.size());
  for (size_t d = 0; d < out.size(); ++d) all[d] = d;
  return offsetsOf(out, st, all);
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeGeneralCompare(const StepContext& c) {
  if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
  const BufferDesc &a = c.operand(0), &b = c.operand(1), &y = c.result(0);
  if (a.dtype != b.dtype) return c.error("operands must have the same element type");
  if (a.dtype == DType::F64) return c.error("f64 operands are not supported");
  auto attrs = c.step.typedAttrs<CompareAttrs>();
  if (!attrs.ok()) return attrs.status();
  const int p = static_cast<int>(attrs->predicate);  // eq, ne, lt, le, gt, ge
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  Shape shape(rank, 1);
  for (const Shape* s : {&a.shape, &b.shape})
    for (size_t d = 0; d < s->size(); ++d) {
      int64_t& o = shape[rank - s->size() + d];
      if ((*s)[d] == o || (*s)[d] == 1) continue;
      if (o != 1) return c.error("operand shapes are not broadcast-compatible");
      o = (*s)[d];
    }
  if (y.dtype != DType::Bool || y.shape != shape) return c.error(absl::StrCat("the result must be i1", shapeToString(shape)));
  return std::unique_ptr<CpuStep>(new GeneralCompareStep(p, a.dtype, c.step.operands[0], c.step.operands[1],
                                                         c.step.results[0], broadcastMap(a.shape, shape),
                                                         broadcastMap(b.shape, shape)));
}

class CopyStep final : public CpuStep {
 public:
  CopyStep(int32_t in, int32_t out, size_t bytes) : in_(in), out_(out), bytes_(bytes) {}
  absl::Status run(BufferPtrs ptr) override {
    std::memcpy(ptr[out_], ptr[in_], bytes_);
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  size_t bytes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeSlowPathStep(const StepContext& c) {
  if (c.code == OpCode::ReduceSum || c.code == OpCode::ReduceMean || c.code == OpCode::ReduceMax) return makeGeneralReduce(c);
  if (c.code == OpCode::Compare) return makeGeneralCompare(c);
  if (c.code == OpCode::Transpose && c.step.operands.size() == 1 && c.step.results.size() == 1 &&
      c.operand(0).shape.empty()) {
    // makeLayoutStep validates the permutation of every other rank; a scalar has only [].
    auto perm = c.step.withAttrsOf<TransposeAttrs>([](const auto& a) { return a.permutation; });
    if (!perm.ok()) return perm.status();
    if (!perm->empty() || c.result(0).dtype != c.operand(0).dtype || !c.result(0).shape.empty())
      return c.error("a scalar's permutation is [] and its result is a scalar of its type");
    return std::unique_ptr<CpuStep>(new CopyStep(c.step.operands[0], c.step.results[0], dtypeSize(c.operand(0).dtype)));
  }
  return nullptr;
}

}  // namespace amp::rt::cpu
