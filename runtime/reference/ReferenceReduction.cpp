// reduce_sum / reduce_mean / reduce_max and softmax / log_softmax, all accumulated in f32; sums in
// the contract's blocked pairwise order (runtime/kernels/math/SumOrder.h).
#include <cmath>
#include <limits>

#include "runtime/kernels/math/SumOrder.h"
#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {

absl::StatusOr<Tensor> evalReduce(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const auto [dims, keepdim] = c.withAttrsOf<ReduceSumAttrs, ReduceMeanAttrs, ReduceMaxAttrs>(
      [](const auto& a) { return std::pair{a.dims, a.keepdim}; });
  const Shape& xs = c.in(0).shape();
  std::vector<bool> reduced(xs.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= c.in(0).rank() || (i > 0 && dims[i] <= dims[i - 1]))
      return c.error("attribute 'dims' must be sorted, unique and in [0, ", c.in(0).rank(),
                     "), got ", shapeToString(dims));
    reduced[dims[i]] = true;
  }
  // Output index of each input element: the kept coordinates in row-major order. Visiting the
  // input in row-major order accumulates each output in row-major order of its reduced elements.
  Shape outShape, keptShape;
  std::vector<int64_t> inToOutStrides(xs.size(), 0);
  for (size_t d = 0; d < xs.size(); ++d) {
    if (!reduced[d]) keptShape.push_back(xs[d]);
    if (!reduced[d] || keepdim) outShape.push_back(reduced[d] ? 1 : xs[d]);
  }
  std::vector<int64_t> keptStrides = rowMajorStrides(keptShape);
  for (size_t d = 0, k = 0; d < xs.size(); ++d)
    if (!reduced[d]) inToOutStrides[d] = keptStrides[k++];
  std::vector<int64_t> map = stridedIndexMap(xs, inToOutStrides, 0);

  const bool isMax = c.code == OpCode::ReduceMax;
  const int64_t outN = numElements(outShape);
  int64_t reducedCount = 1;
  for (int64_t d : dims) reducedCount *= xs[d];
  if (isMax && reducedCount == 0 && outN > 0) return c.error("maximum over an empty set of elements");
  std::vector<float> x = widen(c.in(0));
  std::vector<float> acc(static_cast<size_t>(outN), isMax ? -std::numeric_limits<float>::infinity() : 0.0f);
  if (isMax) {
    for (size_t i = 0; i < map.size(); ++i) {
      float& a = acc[map[i]];
      if (x[i] > a || std::isnan(x[i])) a = x[i];  // NaN propagates and sticks
    }
  } else {
    // Each output's terms in row-major order of its reduced elements: the input indices grouped by
    // output (a stable counting sort keeps them increasing), then summed in the contract's order.
    std::vector<int64_t> start(static_cast<size_t>(outN) + 1, 0), byOutput(map.size());
    for (int64_t o : map) ++start[o + 1];
    for (int64_t o = 0; o < outN; ++o) start[o + 1] += start[o];
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (size_t i = 0; i < map.size(); ++i) byOutput[next[map[i]]++] = static_cast<int64_t>(i);
    for (int64_t o = 0; o < outN; ++o)
      acc[o] = amp_blocked_sum(start[o + 1] - start[o], [&](int64_t j) { return x[byOutput[start[o] + j]]; });
  }
  if (c.code == OpCode::ReduceMean)
    for (float& a : acc) a = a / static_cast<float>(reducedCount);  // 0 elements: 0/0 = NaN
  return narrow(c.in(0).dtype(), outShape, acc);
}

absl::StatusOr<Tensor> evalSoftmax(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const int64_t axis = c.withAttrsOf<SoftmaxAttrs, LogSoftmaxAttrs>([](const auto& a) { return a.axis; });
  const Shape& xs = c.in(0).shape();
  if (axis < 0 || axis >= c.in(0).rank())
    return c.error("attribute 'axis' = ", axis, " is out of range for ", typeString(c.in(0)));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (int64_t d = axis + 1; d < c.in(0).rank(); ++d) inner *= xs[d];
  const int64_t len = xs[axis];
  std::vector<float> x = widen(c.in(0)), y(x.size());
  const bool log = c.code == OpCode::LogSoftmax;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      softmaxSlice(x.data() + base, len, inner, log, y.data() + base);
    }
  return narrow(c.in(0).dtype(), xs, y);
}

}  // namespace amp::rt::ref
