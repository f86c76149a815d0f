// reduce_sum / reduce_mean / reduce_max over a contiguous run of dims, seen as [outer, R, inner].
// Each output accumulates its R inputs in increasing order in f32, the reference's order, so
// results match the reference bit for bit; non-contiguous dims fall back to the reference kernel.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {
namespace {

class ReduceStep final : public CpuStep {
 public:
  enum Kind { Sum, Mean, Max };
  ReduceStep(Kind kind, int32_t in, DType inType, int32_t out, DType outType, int64_t outer, int64_t r, int64_t inner)
      : kind_(kind), in_(in), out_(out), inType_(inType), outType_(outType), outer_(outer), r_(r), inner_(inner) {}

  absl::Status run(BufferPtrs ptr) override {
    const size_t es = dtypeSize(inType_), eo = dtypeSize(outType_);
    // Split the (outer, inner-chunk) grid across threads; every output is owned by one thread.
    constexpr int64_t kChunk = 256;
    const int64_t chunksPerOuter = (inner_ + kChunk - 1) / kChunk;
    const int64_t tasks = outer_ * chunksPerOuter;
    parallelFor(tasks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, r_ * kChunk)), [&](int64_t begin, int64_t end) {
      alignas(64) float acc[kChunk], row[kChunk];
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / chunksPerOuter, j0 = (t % chunksPerOuter) * kChunk;
        const int64_t n = std::min(kChunk, inner_ - j0);
        for (int64_t j = 0; j < n; ++j) acc[j] = kind_ == Max ? -std::numeric_limits<float>::infinity() : 0.0f;
        for (int64_t r = 0; r < r_; ++r) {
          convertBuffer(inType_, ptr[in_] + ((o * r_ + r) * inner_ + j0) * es, DType::F32, row, n);
          if (kind_ == Max) {
            for (int64_t j = 0; j < n; ++j)
              if (row[j] > acc[j] || std::isnan(row[j])) acc[j] = row[j];  // NaN propagates and sticks
          } else {
            for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
          }
        }
        if (kind_ == Mean)
          for (int64_t j = 0; j < n; ++j) acc[j] = acc[j] / static_cast<float>(r_);
        convertBuffer(DType::F32, acc, outType_, ptr[out_] + (o * inner_ + j0) * eo, n);
      }
    });
    return absl::OkStatus();
  }

 private:
  Kind kind_;
  int32_t in_, out_;
  DType inType_, outType_;
  int64_t outer_, r_, inner_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeReductionStep(const StepContext& c) {
  const std::string& op = c.step.op;
  ReduceStep::Kind kind;
  if (c.code == OpCode::ReduceSum) kind = ReduceStep::Sum;
  else if (c.code == OpCode::ReduceMean) kind = ReduceStep::Mean;
  else if (c.code == OpCode::ReduceMax) kind = ReduceStep::Max;
  else return nullptr;
  if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
  const BufferDesc &x = c.operand(0), &y = c.result(0);
  if (x.dtype != y.dtype || (x.dtype != DType::F32 && x.dtype != DType::BF16 && x.dtype != DType::F16)) return nullptr;
  auto dims = c.step.attrs.getInts(op, "dims");
  if (!dims.ok()) return dims.status();
  auto keepdim = c.step.attrs.getBool(op, "keepdim", false);
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
