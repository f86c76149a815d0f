// Folding at import time: the shape arithmetic exporters write (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape), Constant nodes and masks built from them (ConstantOfShape -> Trilu -> Where)
// become values known on the host, so every amp shape is static and no integer arithmetic reaches
// the model.
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>

#include "import/onnx/FoldSupport.h"
#include "import/onnx/GraphTranslator.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {
namespace {

using namespace fold;

// An integer converted to a narrower ONNX integer type as C and NumPy do (the low bits, two's
// complement): Cast between integer types is defined by ONNX.
int64_t wrapToIntegerType(int32_t dataType, int64_t v) {
  switch (dataType) {
    case TensorProto::INT32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    case TensorProto::INT16: return static_cast<int16_t>(static_cast<uint16_t>(v));
    case TensorProto::INT8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case TensorProto::UINT8: return static_cast<uint8_t>(v);
    case TensorProto::UINT16: return static_cast<uint16_t>(v);
    case TensorProto::UINT32: return static_cast<uint32_t>(v);
    default: return v;
  }
}

// The doubles [lo, hi) whose truncation is a value of the integer type.
std::pair<double, double> integerRange(int32_t dataType) {
  switch (dataType) {
    case TensorProto::INT32: return {-2147483648.0, 2147483648.0};
    case TensorProto::INT16: return {-32768.0, 32768.0};
    case TensorProto::INT8: return {-128.0, 128.0};
    case TensorProto::UINT8: return {0.0, 256.0};
    case TensorProto::UINT16: return {0.0, 65536.0};
    case TensorProto::UINT32: return {0.0, 4294967296.0};
    case TensorProto::UINT64: return {0.0, 18446744073709551616.0};
    default: return {-9223372036854775808.0, 9223372036854775808.0};
  }
}


// A copy of `t` with the elements at `indices` (flat, into t) in order, and shape `shape`.
HostTensor gatherFlat(const HostTensor& t, const std::vector<int64_t>& indices, Shape shape) {
  HostTensor out;
  out.dataType = t.dataType;
  out.shape = std::move(shape);
  for (int64_t i : indices) {
    if (t.isFloat())
      out.floats.push_back(t.floats[i]);
    else
      out.ints.push_back(t.ints[i]);
  }
  return out;
}

// Rounds a float result to the precision of its ONNX type (double arithmetic on f32 operands,
// rounded once, is the f32 result for + - * /).
double roundTo(int32_t dataType, double v) {
  return dataType == TensorProto::FLOAT ? static_cast<double>(static_cast<float>(v)) : v;
}

LogicalResult foldConstant(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"value", "value_float", "value_floats", "value_int", "value_ints"}))) return failure();
  HostTensor value;
  std::string error;
  if (const auto* a = t.attribute("value")) {
    auto decoded = decodeTensor(a->t(), &error);
    if (!decoded) return t.refuse() << error;
    value = std::move(*decoded);
  } else if (const auto* a = t.attribute("value_float")) {
    value.dataType = TensorProto::FLOAT;
    value.floats = {a->f()};
  } else if (const auto* a = t.attribute("value_floats")) {
    value.dataType = TensorProto::FLOAT;
    value.floats.assign(a->floats().begin(), a->floats().end());
    value.shape = {static_cast<int64_t>(value.floats.size())};
  } else if (const auto* a = t.attribute("value_int")) {
    value = HostTensor::ofInts({a->i()}, {});
  } else if (const auto* a = t.attribute("value_ints")) {
    value = HostTensor::ofInts({a->ints().begin(), a->ints().end()}, {a->ints_size()});
  } else {
    return t.refuse() << "a Constant needs one of value, value_float(s), value_int(s)";
  }
  t.setOutputConstant(0, std::move(value));
  return success();
}

LogicalResult foldShape(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"start", "end"}))) return failure();
  RankedTensorType type = t.inputType(0);
  const int64_t rank = type.getRank();
  auto clampAxis = [&](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
  const int64_t start = clampAxis(t.intAttribute("start", 0)), end = clampAxis(t.intAttribute("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(type.getDimSize(d));
  t.setOutputConstant(0, HostTensor::ofInts(dims, {static_cast<int64_t>(dims.size())}));
  return success();
}

LogicalResult foldCast(GraphTranslator& t, const HostTensor& in) {
  if (failed(t.onlyAttributes({"to", "saturate"}))) return failure();
  HostTensor out;
  out.dataType = static_cast<int32_t>(t.intAttribute("to", TensorProto::FLOAT));
  out.shape = in.shape;
  if (out.isFloat()) {
    for (int64_t i = 0; i < in.numel(); ++i) out.floats.push_back(roundTo(out.dataType, in.floatAt(i)));
  } else if (out.dataType == TensorProto::STRING) {
    return t.refuse() << "Cast to string is not supported";
  } else {
    const auto [lo, hi] = integerRange(out.dataType);
    for (int64_t i = 0; i < in.numel(); ++i) {
      if (out.dataType == TensorProto::BOOL) {
        out.ints.push_back(in.floatAt(i) != 0);
      } else if (in.isFloat()) {
        // NaN, infinities and values out of the target's range have no integer: C++ makes the
        // conversion undefined, ONNX leaves it to the implementation; ampc refuses the model.
        const double v = std::trunc(in.floats[i]);
        if (!(v >= lo && v < hi))
          return t.refuse() << "Cast of the known value " << in.floats[i] << " (element " << i << ") to "
                            << dataTypeName(out.dataType) << " is undefined (NaN, infinite or out of range)";
        out.ints.push_back(out.dataType == TensorProto::UINT64 && v >= 9223372036854775808.0
                               ? static_cast<int64_t>(static_cast<uint64_t>(v))
                               : static_cast<int64_t>(v));
      } else {
        out.ints.push_back(wrapToIntegerType(out.dataType, in.ints[i]));
      }
    }
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

LogicalResult foldGather(GraphTranslator& t, const HostTensor& data, const HostTensor& indices) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  auto axis = normalizeAxis(t.intAttribute("axis", 0), rank);
  if (!axis || rank == 0) return t.refuse() << "axis out of range for a rank-" << rank << " tensor";
  const int64_t n = data.shape[*axis];
  Shape outShape(data.shape.begin(), data.shape.begin() + *axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  if (failed(checkFoldedShape(t, outShape))) return failure();
  const int64_t outer = product(Shape(data.shape.begin(), data.shape.begin() + *axis));
  const int64_t inner = product(Shape(data.shape.begin() + *axis + 1, data.shape.end()));
  std::vector<int64_t> flat;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < indices.numel(); ++k) {
      int64_t index = indices.intAt(k);
      if (index < -n || index >= n) return t.refuse() << "index " << index << " is out of range for size " << n;
      if (index < 0) index += n;
      for (int64_t i = 0; i < inner; ++i) flat.push_back((o * n + index) * inner + i);
    }
  t.setOutputConstant(0, gatherFlat(data, flat, outShape));
  return success();
}

LogicalResult reshapeTo(GraphTranslator& t, const HostTensor& data, Shape shape) {
  HostTensor out = data;
  out.shape = std::move(shape);
  t.setOutputConstant(0, std::move(out));
  return success();
}

LogicalResult foldUnsqueeze(GraphTranslator& t, const HostTensor& data, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(data.shape.size() + axes.size());
  Shape shape;
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    auto axis = normalizeAxis(a, rank);
    if (!axis || inserted[*axis]) return t.refuse() << "Unsqueeze axes are out of range or repeated";
    inserted[*axis] = true;
  }
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : data.shape[next++]);
  return reshapeTo(t, data, shape);
}

LogicalResult foldSqueeze(GraphTranslator& t, const HostTensor& data, std::optional<std::vector<int64_t>> axes) {
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  std::vector<bool> drop(rank, false);
  if (!axes) {
    for (int64_t d = 0; d < rank; ++d) drop[d] = data.shape[d] == 1;
  } else {
    for (int64_t a : *axes) {
      auto axis = normalizeAxis(a, rank);
      if (!axis || data.shape[*axis] != 1) return t.refuse() << "Squeeze axis " << a << " is not a dim of size 1";
      drop[*axis] = true;
    }
  }
  Shape shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d]) shape.push_back(data.shape[d]);
  return reshapeTo(t, data, shape);
}

LogicalResult foldConcat(GraphTranslator& t, const std::vector<const HostTensor*>& inputs) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  const int64_t rank = static_cast<int64_t>(inputs[0]->shape.size());
  auto axis = normalizeAxis(t.intAttribute("axis", 0), rank);
  if (!axis) return t.refuse() << "axis out of range";
  HostTensor out;
  out.dataType = inputs[0]->dataType;
  out.shape = inputs[0]->shape;
  out.shape[*axis] = 0;
  for (const HostTensor* in : inputs) {
    if (in->shape.size() != inputs[0]->shape.size() || in->isFloat() != inputs[0]->isFloat())
      return t.refuse() << "the inputs differ in rank or type";
    for (size_t d = 0; d < in->shape.size(); ++d)
      if (static_cast<int64_t>(d) != *axis && in->shape[d] != inputs[0]->shape[d])
        return t.refuse() << "the inputs differ in dim " << d << " (" << in->shape[d] << " and "
                          << inputs[0]->shape[d] << ")";
    if (__builtin_add_overflow(out.shape[*axis], in->shape[*axis], &out.shape[*axis]))
      return t.refuse() << "the concatenated dim overflows";
  }
  if (failed(checkFoldedShape(t, out.shape))) return failure();
  const int64_t outer = product(Shape(out.shape.begin(), out.shape.begin() + *axis));
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor* in : inputs) {
      const int64_t chunk = product(Shape(in->shape.begin() + *axis, in->shape.end()));
      for (int64_t i = 0; i < chunk; ++i) {
        if (out.isFloat())
          out.floats.push_back(in->floatAt(o * chunk + i));
        else
          out.ints.push_back(in->intAt(o * chunk + i));
      }
    }
  t.setOutputConstant(0, std::move(out));
  return success();
}


template <typename Op>
LogicalResult foldBinary(GraphTranslator& t, const HostTensor& a, const HostTensor& b, Op op) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto shape = Broadcast::of({&a, &b});
  if (!shape) return t.refuse() << "the operands do not broadcast";
  if (failed(shape->check(t))) return failure();
  HostTensor out;
  out.dataType = a.dataType;
  out.shape = shape->shape;
  for (int64_t i = 0; i < shape->numel(); ++i) {
    const int64_t ia = shape->source(0, i), ib = shape->source(1, i);
    if (out.isFloat()) {
      out.floats.push_back(roundTo(out.dataType, op(a.floatAt(ia), b.floatAt(ib))));
      continue;
    }
    // Integer arithmetic overflow-checked: a fold that overflows int64 or the tensor's type is
    // refused, never wrapped into a different shape or index.
    const int64_t x = a.ints[ia], y = b.ints[ib];
    int64_t r = 0;
    bool overflow = false;
    if constexpr (std::is_same_v<Op, std::plus<>>) {
      overflow = __builtin_add_overflow(x, y, &r);
    } else if constexpr (std::is_same_v<Op, std::minus<>>) {
      overflow = __builtin_sub_overflow(x, y, &r);
    } else if constexpr (std::is_same_v<Op, std::multiplies<>>) {
      overflow = __builtin_mul_overflow(x, y, &r);
    } else {
      static_assert(std::is_same_v<Op, std::divides<>>);
      if (y == 0) return t.refuse() << "integer division by zero";
      overflow = x == std::numeric_limits<int64_t>::min() && y == -1;
      if (!overflow) r = x / y;
    }
    if (overflow || !fitsIntegerType(out.dataType, r))
      return t.refuse() << "the integer " << t.node().op_type() << " of the known values " << x << " and " << y
                        << " overflows " << dataTypeName(out.dataType);
    out.ints.push_back(r);
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

// Where(condition, x, y) on known values: the masks exporters build (a causal mask turned into
// -inf/0 scores) fold into one constant.
LogicalResult foldWhere(GraphTranslator& t, const HostTensor& condition, const HostTensor& x, const HostTensor& y) {
  if (failed(t.onlyAttributes({}))) return failure();
  if (x.isFloat() != y.isFloat()) return t.refuse() << "X and Y must have one type";
  auto shape = Broadcast::of({&condition, &x, &y});
  if (!shape) return t.refuse() << "the inputs do not broadcast";
  if (failed(shape->check(t))) return failure();
  HostTensor out;
  out.dataType = x.dataType;
  out.shape = shape->shape;
  for (int64_t i = 0; i < shape->numel(); ++i) {
    const HostTensor& pick = condition.intAt(shape->source(0, i)) != 0 ? x : y;
    const int64_t k = shape->source(&pick == &x ? 1 : 2, i);
    if (out.isFloat())
      out.floats.push_back(pick.floats[k]);
    else
      out.ints.push_back(pick.ints[k]);
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

// Trilu on a known value (a causal mask): the upper (or lower) triangle of the last two dims from
// diagonal k, zeros elsewhere.
LogicalResult foldTrilu(GraphTranslator& t, const HostTensor& in, const HostTensor* k) {
  if (failed(t.onlyAttributes({"upper"}))) return failure();
  const size_t rank = in.shape.size();
  if (rank < 2) return t.refuse() << "Trilu needs a tensor of rank 2 or more";
  if (k && k->numel() != 1) return t.refuse() << "k must be a scalar";
  const int64_t diagonal = k ? k->intAt(0) : 0;
  const bool upper = t.intAttribute("upper", 1) != 0;
  const int64_t rows = in.shape[rank - 2], cols = in.shape[rank - 1];
  HostTensor out = in;
  for (int64_t i = 0; i < in.numel(); ++i) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    if (upper ? c - r >= diagonal : c - r <= diagonal) continue;
    if (out.isFloat())
      out.floats[i] = 0;
    else
      out.ints[i] = 0;
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

LogicalResult foldSlice(GraphTranslator& t, const HostTensor& data) {
  auto starts = t.constantInts(1, "starts");
  auto ends = t.constantInts(2, "ends");
  if (failed(starts) || failed(ends)) return failure();
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> axes, steps;
  if (failed(t.sliceAxesAndSteps(starts->size(), axes, steps))) return failure();
  Shape begin(rank, 0), step(rank, 1), count(data.shape);
  for (size_t k = 0; k < axes.size(); ++k) {
    auto axis = normalizeAxis(axes[k], rank);
    if (!axis || steps[k] == 0) return t.refuse() << "Slice axis out of range or step 0";
    const int64_t n = data.shape[*axis], s = steps[k];
    int64_t b = (*starts)[k], e = (*ends)[k];
    b = b < 0 ? b + n : b;
    e = e < 0 ? e + n : e;
    // Counted in 128 bits: a step near INT64_MIN or INT64_MAX must not overflow.
    if (s > 0) {
      b = std::clamp(b, int64_t{0}, n);
      e = std::clamp(e, int64_t{0}, n);
      count[*axis] = e > b ? static_cast<int64_t>((static_cast<__int128>(e) - b - 1) / s + 1) : 0;
    } else {
      b = std::clamp(b, int64_t{0}, n - 1);
      e = std::clamp(e, int64_t{-1}, n - 1);
      count[*axis] =
          b > e ? static_cast<int64_t>((static_cast<__int128>(b) - e - 1) / -static_cast<__int128>(s) + 1) : 0;
    }
    begin[*axis] = b;
    step[*axis] = s;
  }
  auto strides = stridesOf(data.shape), outStrides = stridesOf(count);
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < product(count); ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += (begin[d] + ((i / outStrides[d]) % count[d]) * step[d]) * strides[d];
    flat.push_back(src);
  }
  t.setOutputConstant(0, gatherFlat(data, flat, count));
  return success();
}

// Expand of a known value to a known shape (numpy's broadcast of the two shapes): Swin's mask
// indices are expanded ranges.
LogicalResult foldExpand(GraphTranslator& t, const HostTensor& data, const HostTensor& shape) {
  if (failed(t.onlyAttributes({}))) return failure();
  if (shape.isFloat() || shape.shape.size() != 1) return t.refuse() << "the shape must be a 1-D integer tensor";
  HostTensor target;
  target.shape = shape.ints;
  auto b = Broadcast::of({&data, &target});
  if (!b) return t.refuse() << "the input does not broadcast to the shape " << shapeText(shape.ints);
  if (failed(b->check(t))) return failure();
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < b->numel(); ++i) flat.push_back(b->source(0, i));
  t.setOutputConstant(0, gatherFlat(data, flat, b->shape));
  return success();
}

// Transpose of a known value (Swin's shifted-window padding reverses a pads list with one).
LogicalResult foldTranspose(GraphTranslator& t, const HostTensor& data) {
  if (failed(t.onlyAttributes({"perm"}))) return failure();
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  Shape perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);  // ONNX's default reverses the dims
  if (auto given = t.intsAttribute("perm")) perm = *given;
  if (static_cast<int64_t>(perm.size()) != rank) return t.refuse() << "perm must have " << rank << " entries";
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank) return t.refuse() << "perm entry " << perm[d] << " is out of range";
    out[d] = data.shape[perm[d]];
  }
  const Shape strides = stridesOf(data.shape), outStrides = stridesOf(out);
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < product(out); ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += ((i / outStrides[d]) % out[d]) * strides[perm[d]];
    flat.push_back(src);
  }
  t.setOutputConstant(0, gatherFlat(data, flat, out));
  return success();
}

LogicalResult foldConstantOfShape(GraphTranslator& t, const HostTensor& shape) {
  if (failed(t.onlyAttributes({"value"}))) return failure();
  HostTensor fill;
  fill.dataType = TensorProto::FLOAT;
  fill.floats = {0.0};
  if (const auto* a = t.attribute("value")) {
    std::string error;
    auto decoded = decodeTensor(a->t(), &error);
    if (!decoded || decoded->numel() != 1) return t.refuse() << "value must be a one-element tensor";
    fill = *decoded;
  }
  if (shape.isFloat() || shape.shape.size() != 1)
    return t.refuse() << "the shape input must be a 1-D integer tensor";
  if (failed(checkFoldedShape(t, shape.ints))) return failure();
  HostTensor out;
  out.dataType = fill.dataType;
  out.shape = shape.ints;
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (out.isFloat())
      out.floats.push_back(fill.floats[0]);
    else
      out.ints.push_back(fill.ints[0]);
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

LogicalResult foldRange(GraphTranslator& t, const HostTensor& start, const HostTensor& limit, const HostTensor& delta) {
  HostTensor out;
  out.dataType = start.dataType;
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1 || start.isFloat() != limit.isFloat() ||
      start.isFloat() != delta.isFloat())
    return t.refuse() << "start, limit and delta must be scalars of one type";
  const double s = start.floatAt(0), l = limit.floatAt(0), d = delta.floatAt(0);
  if (d == 0) return t.refuse() << "Range with delta 0";
  // The count, checked before the value is allocated: in 128-bit integers for integer ranges, in
  // doubles (finite, in range) for float ones.
  int64_t n = 0;
  if (out.isFloat()) {
    const double count = std::ceil((l - s) / d);
    if (!std::isfinite(count) || count > static_cast<double>(kMaxFoldedElements))
      return t.refuse() << "Range from " << s << " to " << l << " by " << d << " would have more than "
                        << kMaxFoldedElements << " elements (ampc folds at most that many at import time)";
    n = std::max<int64_t>(0, static_cast<int64_t>(count));
  } else {
    const __int128 span = static_cast<__int128>(limit.ints[0]) - start.ints[0], step = delta.ints[0];
    const __int128 count = span == 0 || (span > 0) != (step > 0) ? 0 : (span + step - (step > 0 ? 1 : -1)) / step;
    if (count > kMaxFoldedElements)
      return t.refuse() << "Range from " << start.ints[0] << " to " << limit.ints[0] << " by " << delta.ints[0]
                        << " would have more than " << kMaxFoldedElements
                        << " elements (ampc folds at most that many at import time)";
    n = static_cast<int64_t>(count);
  }
  out.shape = {n};
  (out.isFloat() ? out.floats.reserve(n) : out.ints.reserve(n));  // one allocation, not log2(n)
  for (int64_t i = 0; i < n; ++i) {
    if (out.isFloat())
      out.floats.push_back(roundTo(out.dataType, s + i * d));
    else
      out.ints.push_back(static_cast<int64_t>(start.ints[0] + static_cast<__int128>(i) * delta.ints[0]));
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

}  // namespace

// ONNX Reshape's target: 0 copies the input dim (unless allowzero), one -1 is inferred.
FailureOr<std::vector<int64_t>> reshapeTarget(GraphTranslator& t, const std::vector<int64_t>& in,
                                              const std::vector<int64_t>& target) {
  const bool allowZero = t.intAttribute("allowzero", 0) != 0;
  Shape out;
  int inferred = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    int64_t v = target[d];
    if (v == 0 && !allowZero) {
      if (d >= in.size()) return t.refuse() << "shape entry " << d << " is 0 (copy), but the input has rank " << in.size(), failure();
      v = in[d];
    }
    if (v == -1) {
      if (inferred >= 0) return t.refuse() << "the shape has more than one -1", failure();
      inferred = static_cast<int>(d);
      v = 1;
    } else if (v < 0) {
      return t.refuse() << "the shape has the invalid entry " << v, failure();
    }
    out.push_back(v);
  }
  const std::optional<int64_t> knownCount = checkedNumel(out), totalCount = checkedNumel(in);
  if (!knownCount || !totalCount) return t.refuse() << "the shape " << shapeText(out) << " overflows", failure();
  const int64_t known = *knownCount, total = *totalCount;
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return t.refuse() << "cannot infer the -1 of the shape for " << total << " elements", failure();
    out[inferred] = total / known;
  }
  if (*checkedNumel(out) != total)
    return t.refuse() << "the shape holds " << product(out) << " elements, the input " << total, failure();
  return out;
}

std::optional<LogicalResult> foldNode(GraphTranslator& t) {
  const std::string& op = t.node().op_type();
  if (op == "Constant") return foldConstant(t);
  if (op == "Shape") {
    // Only the type is needed, and it is always static here.
    if (!t.inputType(0)) return t.refuse() << "the input's type is unknown", failure();
    return foldShape(t);
  }
  // Everything else folds when every input it reads is known.
  std::vector<const HostTensor*> in;
  for (unsigned i = 0; i < t.numInputs(); ++i) {
    if (!t.hasInput(i)) {
      in.push_back(nullptr);
      continue;
    }
    const HostTensor* c = t.constantInput(i);
    if (!c) return std::nullopt;
    in.push_back(c);
  }
  if (in.empty() || !in[0]) return std::nullopt;
  if (op == "Identity") {
    t.setOutputConstant(0, *in[0]);
    return success();
  }
  if (op == "Cast") return foldCast(t, *in[0]);
  if (op == "Gather" && in.size() == 2) return foldGather(t, *in[0], *in[1]);
  if (op == "Unsqueeze" && in.size() == 2) return foldUnsqueeze(t, *in[0], in[1]->ints);
  if (op == "Squeeze") {
    if (failed(t.onlyAttributes({}))) return failure();
    return foldSqueeze(t, *in[0], in.size() > 1 && in[1] ? std::optional(in[1]->ints) : std::nullopt);
  }
  if (op == "Concat") {
    if (llvm::is_contained(in, nullptr)) return std::nullopt;
    return foldConcat(t, in);
  }
  if (op == "Reshape" && in.size() == 2) {
    if (failed(t.onlyAttributes({"allowzero"}))) return failure();
    auto shape = reshapeTarget(t, in[0]->shape, in[1]->ints);
    if (failed(shape)) return failure();
    return reshapeTo(t, *in[0], *shape);
  }
  if (op == "Flatten") {
    if (failed(t.onlyAttributes({"axis"}))) return failure();
    const int64_t rank = static_cast<int64_t>(in[0]->shape.size());
    int64_t axis = t.intAttribute("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return t.refuse() << "axis out of range", failure();
    const Shape& s = in[0]->shape;
    return reshapeTo(t, *in[0], {product(Shape(s.begin(), s.begin() + axis)), product(Shape(s.begin() + axis, s.end()))});
  }
  if (in.size() == 2 && in[1] && in[0]->isFloat() == in[1]->isFloat()) {
    if (op == "Add") return foldBinary(t, *in[0], *in[1], std::plus<>());
    if (op == "Sub") return foldBinary(t, *in[0], *in[1], std::minus<>());
    if (op == "Mul") return foldBinary(t, *in[0], *in[1], std::multiplies<>());
    if (op == "Div") return foldBinary(t, *in[0], *in[1], std::divides<>());
  }
  if (op == "Slice" && in.size() >= 3) return foldSlice(t, *in[0]);
  if (op == "Transpose" && in.size() == 1) return foldTranspose(t, *in[0]);
  if (op == "Expand" && in.size() == 2) return foldExpand(t, *in[0], *in[1]);
  if (op == "ConstantOfShape") return foldConstantOfShape(t, *in[0]);
  if (op == "Range" && in.size() == 3) return foldRange(t, *in[0], *in[1], *in[2]);
  if (op == "Where" && in.size() == 3 && in[1] && in[2]) return foldWhere(t, *in[0], *in[1], *in[2]);
  if (op == "Trilu") return foldTrilu(t, *in[0], in.size() > 1 ? in[1] : nullptr);
  return foldLogicNode(t, in);
}

}  // namespace mlir::amp::onnx_import
