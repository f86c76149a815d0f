// amp.fused steps on the cpu device: the generated kernel from the bundle's code object, split by
// rows across threads. The step re-derives how the kernel indexes each input from the plan (the
// iteration shape, scalars, leading-dim broadcasts whose period divides the row) and refuses a
// plan where that does not hold, so an edited bundle cannot make a kernel read out of bounds.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/NativeCode.h"
#include "runtime/plan/KernelBinding.h"

namespace amp::rt::cpu {
namespace {

class FusedStep final : public CpuStep {
 public:
  FusedStep(FusedKernel kernel, std::vector<int32_t> in, std::vector<int32_t> out, int64_t rows, int64_t rowLength,
            bool byColumns)
      : kernel_(kernel), in_(std::move(in)), out_(std::move(out)), inPtrs_(in_.size()), outPtrs_(out_.size()),
        rows_(rows), rowLength_(rowLength), byColumns_(byColumns) {}
  bool elementwiseInPlace() const override { return false; }
  absl::Status run(BufferPtrs ptr) override {
    for (size_t i = 0; i < in_.size(); ++i) inPtrs_[i] = ptr[in_[i]];
    for (size_t r = 0; r < out_.size(); ++r) outPtrs_[r] = ptr[out_[r]];
    auto kernel = [&](int64_t begin, int64_t end) { kernel_(inPtrs_.data(), outPtrs_.data(), begin, end); };
    // A kernel with row reductions takes column ranges (every row in order, for the sums' order).
    if (byColumns_) parallelFor(rowLength_, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rows_)), kernel);
    else parallelFor(rows_, std::max<int64_t>(1, 16384 / rowLength_), kernel);
    return absl::OkStatus();
  }

 private:
  FusedKernel kernel_;
  std::vector<int32_t> in_, out_;
  std::vector<const uint8_t*> inPtrs_;
  std::vector<uint8_t*> outPtrs_;
  int64_t rows_, rowLength_;
  bool byColumns_;
};

// Period of a leading-dim broadcast of `in` over `space` (its element count), 1 for a scalar,
// 0 for the space itself, -1 when the kernel could not index it.
int64_t broadcastPeriod(const Shape& in, const Shape& space) {
  if (in == space) return 0;
  const int64_t n = numElements(in);
  if (n == 1) return 1;
  size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  const size_t k = in.size() - lead;
  if (k <= space.size() && std::equal(in.begin() + lead, in.end(), space.end() - k)) return n;
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeFusedStep(const StepContext& c) {
  if (c.code != OpCode::Fused) return nullptr;
  if (!c.native) return nullptr;  // no code object for this CPU: interpreted from the body
  auto kernel = c.step.withAttrsOf<FusedAttrs>([](const auto& a) { return a.kernel; });
  if (!kernel.ok()) return kernel.status();
  auto rowLength = c.step.attrs.getInt(c.step.op, "row_length");
  if (!rowLength.ok()) return rowLength.status();
  if (c.step.results.empty() || c.step.body.empty() || c.step.body[0].results.size() != 1)
    return c.error("a fused step needs a body and results");
  // Results listed in "reduced_results" are column sums [row_length] of the iteration space.
  std::vector<char> reduced(c.step.results.size(), 0);
  if (c.step.attrs.has("reduced_results")) {
    auto list = c.step.attrs.getInts(c.step.op, "reduced_results");
    if (!list.ok()) return list.status();
    for (int64_t r : *list) {
      if (r < 0 || r >= static_cast<int64_t>(reduced.size())) return c.error("reduced_results names no result");
      reduced[r] = 1;
    }
  }
  const bool byColumns = std::find(reduced.begin(), reduced.end(), 1) != reduced.end();
  // The iteration space: the body's first (elementwise) value, typed by the validated locals.
  const Shape& space = c.step.locals[c.step.body[0].results[0]].shape;
  const int64_t n = numElements(space);
  if (*rowLength < 1 || (n > 0 && n % *rowLength != 0))
    return c.error(absl::StrCat("row_length ", *rowLength, " does not divide the ", n, "-element iteration space"));
  if (byColumns && (space.size() < 2 || space.back() != *rowLength))
    return c.error("a fused step with reductions must have row_length = the iteration space's last dim");
  for (size_t r = 0; r < c.step.results.size(); ++r)
    if (c.result(r).shape != (reduced[r] ? Shape{*rowLength} : space))
      return c.error(absl::StrCat("fused result ", r, " ", shapeToString(c.result(r).shape), " does not fit the ",
                                  shapeToString(space), " iteration space"));
  for (size_t i = 0; i < c.step.operands.size(); ++i) {
    const int64_t period = broadcastPeriod(c.operand(i).shape, space);
    if (period < 0 || (period > 1 && *rowLength % period != 0 && (!byColumns || period % *rowLength != 0)))
      return c.error(absl::StrCat("input ", i, " ", shapeToString(c.operand(i).shape),
                                  " is not indexable by the generated kernel over ", shapeToString(space)));
  }
  // The kernel computing this step: its id ("symbol", shared by identical bodies) and this step's
  // region must match one entry of the object's kernel table (runtime/plan/KernelBinding.h).
  auto id = c.step.attrs.getString(c.step.op, "symbol");
  if (!id.ok()) return id.status();
  auto fn = c.native->bind(*id, fusedBodyHash(c.step));
  if (!fn.ok()) return c.error(fn.status().message());
  return std::unique_ptr<CpuStep>(
      new FusedStep(*fn, c.step.operands, c.step.results, *rowLength > 0 ? n / *rowLength : 0, *rowLength, byColumns));
}

}  // namespace amp::rt::cpu
