// Data-movement ops: reshape, transpose, broadcast_to, slice, concat, embedding. They copy bits
// (any element type, no rounding); the result element type is the operand's.
#include <cstring>

#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {

absl::StatusOr<Tensor> evalReshape(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  const Shape& to = c.result().shape;
  if (numElements(to) != c.in(0).numel())
    return c.error("cannot reshape ", typeString(c.in(0)), " to ", shapeToString(to),
                   ": element counts differ");
  Tensor out = c.in(0);
  out.reshapeInPlace(to);
  return out;
}

absl::StatusOr<Tensor> evalTranspose(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  const std::vector<int64_t>& perm = c.attrsOf<TransposeAttrs>().permutation;
  const Shape& xs = c.in(0).shape();
  std::vector<bool> seen(xs.size(), false);
  bool ok = perm.size() == xs.size();
  for (size_t d = 0; ok && d < perm.size(); ++d) {
    ok = perm[d] >= 0 && perm[d] < static_cast<int64_t>(xs.size()) && !seen[perm[d]];
    if (ok) seen[perm[d]] = true;
  }
  if (!ok)
    return c.error("attribute 'permutation' ", shapeToString(perm), " is not a permutation of the ",
                   xs.size(), " dims of ", typeString(c.in(0)));
  // out[i_0..i_r] = x[j] with j[perm[d]] = i_d.
  std::vector<int64_t> inStrides = rowMajorStrides(xs), strides(xs.size());
  Shape outShape(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    outShape[d] = xs[perm[d]];
    strides[d] = inStrides[perm[d]];
  }
  return gatherElements(c.in(0), outShape, stridedIndexMap(outShape, strides, 0));
}

absl::StatusOr<Tensor> evalBroadcastTo(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  const Shape& xs = c.in(0).shape();
  const Shape& to = c.result().shape;
  bool ok = xs.size() <= to.size();
  for (size_t d = 0; ok && d < xs.size(); ++d) {
    const int64_t t = to[to.size() - xs.size() + d];
    ok = xs[d] == t || xs[d] == 1;
  }
  if (!ok) return c.error("cannot broadcast ", typeString(c.in(0)), " to ", shapeToString(to));
  return gatherElements(c.in(0), to, broadcastIndexMap(xs, to));
}

absl::StatusOr<Tensor> evalSlice(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  const SliceAttrs& a = c.attrsOf<SliceAttrs>();
  const std::vector<int64_t>& starts = a.starts;
  const std::vector<int64_t>& limits = a.limits;
  const std::vector<int64_t> steps = a.strides.value_or(std::vector<int64_t>(c.in(0).shape().size(), 1));
  const Shape& xs = c.in(0).shape();
  const size_t r = xs.size();
  if (starts.size() != r || limits.size() != r || steps.size() != r)
    return c.error("attributes 'starts', 'limits' and 'strides' must each have ", r, " entries for ",
                   typeString(c.in(0)));
  std::vector<int64_t> inStrides = rowMajorStrides(xs), strides(r);
  Shape outShape(r);
  int64_t offset = 0;
  for (size_t d = 0; d < r; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > xs[d] || steps[d] < 1)
      return c.error("dim ", d, ": need 0 <= start <= limit <= ", xs[d], " and stride >= 1, got start ",
                     starts[d], ", limit ", limits[d], ", stride ", steps[d]);
    outShape[d] = (limits[d] - starts[d] + steps[d] - 1) / steps[d];
    strides[d] = inStrides[d] * steps[d];
    offset += starts[d] * inStrides[d];
  }
  if (numElements(outShape) == 0) return Tensor(c.in(0).dtype(), outShape);
  return gatherElements(c.in(0), outShape, stridedIndexMap(outShape, strides, offset));
}

absl::StatusOr<Tensor> evalConcat(const OpCall& c) {
  if (c.numOperands() == 0) return c.error("expected at least 1 operand, got 0");
  const int64_t axis = c.attrsOf<ConcatAttrs>().axis;
  const Shape& s0 = c.in(0).shape();
  if (axis < 0 || axis >= c.in(0).rank())
    return c.error("attribute 'axis' = ", axis, " is out of range for ", typeString(c.in(0)));
  Shape outShape = s0;
  outShape[axis] = 0;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    REF_RETURN_IF_ERROR(expectSameDType(c, 0, i));
    const Shape& s = c.in(i).shape();
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int64_t>(d) == axis || s[d] == s0[d];
    if (!ok)
      return c.error("operand ", i, " ", typeString(c.in(i)), " does not match operand 0 ",
                     typeString(c.in(0)), " outside axis ", axis);
    outShape[axis] += s[axis];
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s0[d];
  for (int64_t d = axis + 1; d < c.in(0).rank(); ++d) inner *= s0[d];
  const size_t es = dtypeSize(c.in(0).dtype());
  Tensor out(c.in(0).dtype(), outShape);
  uint8_t* dst = out.data();
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < c.numOperands(); ++i) {  // operands in order along the axis
      const size_t chunk = static_cast<size_t>(c.in(i).shape()[axis] * inner) * es;
      if (chunk) std::memcpy(dst, c.in(i).data() + o * chunk, chunk);
      dst += chunk;
    }
  return out;
}

absl::StatusOr<Tensor> evalEmbedding(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectRank(c, 0, 2));
  const Tensor& table = c.in(0);
  const Tensor& ids = c.in(1);
  if (!isIndexType(ids.dtype()))
    return c.error("ids (operand 1) must have element type i32 or i64, got ", dtypeName(ids.dtype()));
  const int64_t V = table.shape()[0], D = table.shape()[1];
  Shape outShape = ids.shape();
  outShape.push_back(D);
  Tensor out(table.dtype(), outShape);
  const size_t row = static_cast<size_t>(D) * dtypeSize(table.dtype());
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int64_t id = loadIndex(ids, i);
    if (id < 0 || id >= V)
      return c.error("id ", id, " at position ", indexString(ids.shape(), i), " is out of range [0, ", V, ")");
    if (row) std::memcpy(out.data() + i * row, table.data() + id * row, row);
  }
  return out;
}

}  // namespace amp::rt::ref
