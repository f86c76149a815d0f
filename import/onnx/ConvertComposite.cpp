// Converters of ONNX ops that the amp dialect spells as a few of its own ops: comparisons, Where
// and Trilu as masks and amp.select, Clip, LeakyRelu, HardSigmoid and HardSwish from
// maximum/minimum/select, Split as slices, Sum/Mean as adds and Pad as concats of fills. Each computes what ONNX's
// reference does, rounding where it rounds (each amp op rounds once, as each numpy step does in
// the operand type), so these ops need no kernels, VJPs or precision rules of their own.
#include <algorithm>
#include <cmath>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"

namespace mlir::amp::onnx_import {
namespace {

Type elementOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

// x * alpha (one rounding, as numpy's `x * alpha` in x's type).
FailureOr<Value> scaled(GraphTranslator& t, Value x, double alpha) {
  return build<MulOp>(t, {x, scalarConstant(t, alpha, elementOf(x))});
}

// ONNX's comparisons on float tensors: amp.compare's i1 mask (NaN compares false).
template <ComparePredicate P>
LogicalResult convertCompare(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto a = t.input(0);
  auto b = failed(a) ? a : t.input(1);
  if (failed(b)) return failure();
  if (!isa<FloatType>(elementOf(*a)) || elementOf(*a) != elementOf(*b))
    return t.refuse() << "comparisons are supported on two float tensors of one type; got " << a->getType() << " and "
                      << b->getType();
  return bind(t, build<CompareOp>(t, {*a, *b}, {named(t, "predicate", ComparePredicateAttr::get(t.context(), P))}));
}

// Where(cond, X, Y) with a computed operand (known ones fold): amp.select.
LogicalResult convertWhere(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto cond = t.input(0);
  auto x = failed(cond) ? cond : floatInput(t, 1);
  auto y = failed(x) ? x : floatInput(t, 2);
  if (failed(y)) return failure();
  if (!elementOf(*cond).isInteger(1)) return t.refuse() << "the condition must be bool; got " << cond->getType();
  if (elementOf(*x) != elementOf(*y)) return t.refuse() << "X and Y have different element types";
  return bind(t, build<SelectOp>(t, {*cond, *x, *y}));
}

// Trilu of a computed tensor: a known i1 mask of the last two dims selects the kept triangle,
// and +0 fills the rest (as numpy's triu/tril write zeros).
LogicalResult convertTrilu(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"upper"}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  int64_t diagonal = 0;
  if (t.hasInput(1)) {
    auto k = t.constantInts(1, "k");
    if (failed(k)) return failure();
    if (k->size() != 1) return t.refuse() << "k must be a scalar";
    diagonal = k->front();
  }
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() < 2) return t.refuse() << "Trilu needs a tensor of rank 2 or more";
  const bool upper = t.intAttribute("upper", 1) != 0;
  const int64_t rows = type.getDimSize(type.getRank() - 2), cols = type.getDimSize(type.getRank() - 1);
  // The mask is folded on the host: capped as every fold is, before anything is allocated (a
  // 16384x32768 Trilu asked for 4 GiB here, found by fuzz-onnx).
  const std::optional<int64_t> count = checkedNumel({rows, cols});
  if (!count || *count > kMaxFoldedElements)
    return t.refuse() << "Trilu's mask would have shape " << rows << "x" << cols << ", more than the "
                      << kMaxFoldedElements << " elements ampc folds at import time";
  HostTensor mask = HostTensor::ofInts({}, {rows, cols}, onnx::TensorProto::BOOL);
  mask.ints.reserve(*count);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) mask.ints.push_back(upper ? c - r >= diagonal : c - r <= diagonal);
  return bind(t, build<SelectOp>(t, {t.constant(mask), *x, scalarConstant(t, 0.0, type.getElementType())}));
}

// min(max(x, lo), hi), NaN-propagating like numpy's clip; an absent bound is no bound.
FailureOr<Value> clip(GraphTranslator& t, Value x, std::optional<Value> lo, std::optional<Value> hi) {
  FailureOr<Value> y = x;
  if (lo) y = build<MaximumOp>(t, {*y, *lo});
  if (succeeded(y) && hi) y = build<MinimumOp>(t, {*y, *hi});
  return y;
}

LogicalResult convertClip(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  std::optional<Value> bounds[2];
  for (unsigned i : {1u, 2u}) {
    if (!t.hasInput(i)) continue;
    auto b = floatInput(t, i);
    if (failed(b)) return failure();
    if (cast<RankedTensorType>(b->getType()).getRank() != 0 || elementOf(*b) != elementOf(*x))
      return t.refuse() << "Clip's bounds must be scalars of the input's type; got " << b->getType();
    bounds[i - 1] = *b;
  }
  return bind(t, clip(t, *x, bounds[0], bounds[1]));
}

// x < 0 ? alpha * x : x (ONNX's reference: np.where(x < 0, alpha * x, x); NaN stays NaN).
LogicalResult convertLeakyRelu(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"alpha"}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  auto negative = build<CompareOp>(t, {*x, scalarConstant(t, 0.0, elementOf(*x))},
                                   {named(t, "predicate", ComparePredicateAttr::get(t.context(), ComparePredicate::Lt))});
  auto leak = failed(negative) ? negative : scaled(t, *x, t.floatAttribute("alpha", 0.01f));
  if (failed(leak)) return failure();
  return bind(t, build<SelectOp>(t, {*negative, *leak, *x}));
}

// clip(alpha * x + beta, 0, 1), rounded after the product and after the sum as numpy does.
FailureOr<Value> hardSigmoid(GraphTranslator& t, Value x, double alpha, double beta) {
  const Type e = elementOf(x);
  auto y = scaled(t, x, alpha);
  if (succeeded(y)) y = build<AddOp>(t, {*y, scalarConstant(t, beta, e)});
  if (failed(y)) return failure();
  return clip(t, *y, scalarConstant(t, 0.0, e), scalarConstant(t, 1.0, e));
}

LogicalResult convertHardSigmoid(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"alpha", "beta"}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  return bind(t, hardSigmoid(t, *x, t.floatAttribute("alpha", 0.2f), t.floatAttribute("beta", 0.5f)));
}

// x * hardsigmoid(x) with alpha = 1/6 and beta = 0.5, as ONNX defines it.
LogicalResult convertHardSwish(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  auto gate = hardSigmoid(t, *x, 1.0f / 6.0f, 0.5);
  if (failed(gate)) return failure();
  return bind(t, build<MulOp>(t, {*x, *gate}));
}

// Split along `axis` into the known `split` sizes, or into equal parts (one per output).
LogicalResult convertSplit(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  auto x = t.input(0);
  if (failed(x)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  auto axis = normalizeAxis(t.intAttribute("axis", 0), type.getRank());
  if (!axis) return t.refuse() << "axis " << t.intAttribute("axis", 0) << " is out of range for " << type;
  const int64_t length = type.getDimSize(*axis);
  std::vector<int64_t> sizes;
  if (t.hasInput(1)) {
    auto split = t.constantInts(1, "split");
    if (failed(split)) return failure();
    sizes = *split;
  } else {
    const int64_t parts = t.numOutputs();
    if (length % parts != 0)
      return t.refuse() << "dim " << *axis << " (" << length << ") does not split into " << parts << " equal parts";
    sizes.assign(parts, length / parts);
  }
  int64_t total = 0;
  bool overflow = false;
  for (int64_t s : sizes) overflow |= __builtin_add_overflow(total, s, &total);
  if (overflow || sizes.size() != t.numOutputs() || total != length ||
      llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return t.refuse() << "split sizes must be " << t.numOutputs() << " non-negative numbers summing to " << length;
  Shape begin(type.getRank(), 0), limit(type.getShape()), stride(type.getRank(), 1);
  for (unsigned i = 0; i < sizes.size(); ++i) {
    limit[*axis] = begin[*axis] + sizes[i];
    auto part = build<SliceOp>(t, *x, {i64Array(t, "starts", begin), i64Array(t, "limits", limit),
                                       i64Array(t, "strides", stride)});
    if (failed(part) || failed(t.setOutput(i, *part))) return failure();
    begin[*axis] = limit[*axis];
  }
  return success();
}

// Sum and Mean of any number of inputs: adds from the left (as ONNX's reference sums them), then
// one division by the count for Mean.
LogicalResult convertVariadicSum(GraphTranslator& t, bool mean) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto sum = floatInput(t, 0);
  for (unsigned i = 1; i < t.numInputs() && succeeded(sum); ++i) {
    auto next = floatInput(t, i);
    if (failed(next)) return failure();
    if (elementOf(*next) != elementOf(*sum)) return t.refuse() << "the inputs have different element types";
    sum = build<AddOp>(t, {*sum, *next});
  }
  if (failed(sum)) return failure();
  if (mean && t.numInputs() > 1)
    sum = build<DivOp>(t, {*sum, scalarConstant(t, static_cast<double>(t.numInputs()), elementOf(*sum))});
  return bind(t, sum);
}

// One padded side of `x` along `axis`, `count` elements wide (ONNX's modes, as numpy.pad): the
// constant broadcast, the border element broadcast (edge), or the mirrored elements without the
// border (reflect), each as amp ops whose gradients exist already.
FailureOr<llvm::SmallVector<Value>> padSide(GraphTranslator& t, Value x, int64_t axis, int64_t count, bool low,
                                           llvm::StringRef mode, double value) {
  auto type = cast<RankedTensorType>(x.getType());
  const int64_t n = type.getDimSize(axis);
  Shape sideShape(type.getShape());
  sideShape[axis] = count;
  const auto sideType = RankedTensorType::get(sideShape, type.getElementType());
  auto element = [&](int64_t at) {  // x[..., at:at+1, ...] along the axis
    Shape begin(type.getRank(), 0), limit(type.getShape()), stride(type.getRank(), 1);
    begin[axis] = at;
    limit[axis] = at + 1;
    return build<SliceOp>(t, x, {i64Array(t, "starts", begin), i64Array(t, "limits", limit),
                                 i64Array(t, "strides", stride)});
  };
  llvm::SmallVector<Value> parts;
  if (mode == "constant") {
    parts.push_back(t.create<BroadcastToOp>(sideType, scalarConstant(t, value, type.getElementType())));
  } else if (mode == "edge") {
    auto border = element(low ? 0 : n - 1);
    if (failed(border)) return failure();
    parts.push_back(t.create<BroadcastToOp>(sideType, *border));
  } else {
    // reflect: low side x[count], ..., x[1]; high side x[n-2], ..., x[n-1-count].
    for (int64_t k = 1; k <= count; ++k) {
      auto e = element(low ? count + 1 - k : n - 1 - k);
      if (failed(e)) return failure();
      parts.push_back(*e);
    }
  }
  return parts;
}

// Pad with known pads (and constant value): negative pads crop (a slice), positive ones add a
// side per axis (padSide) joined by one amp.concat. Composed of slice, broadcast_to and concat, so
// it needs no kernel, VJP or precision rule of its own; the fill is exact in every mode.
LogicalResult convertPad(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"mode"}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  const std::string mode = t.stringAttribute("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return t.refuse() << "mode '" << mode << "' is not an ONNX Pad mode (constant, edge, reflect)";
  if (t.hasInput(3)) return t.refuse() << "the axes input (opset 18) is not supported; give pads for every axis";
  auto pads = t.constantInts(1, "pads");
  if (failed(pads)) return failure();
  const int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (static_cast<int64_t>(pads->size()) != 2 * rank)
    return t.refuse() << "pads has " << pads->size() << " values; a rank-" << rank << " input needs " << 2 * rank;
  double value = 0.0;
  if (t.hasInput(2)) {
    const HostTensor* v = t.constantInput(2);
    if (!v || v->shape.size() > 1 || v->floats.size() + v->ints.size() != 1)
      return t.refuse() << "the constant value must be a scalar known at import time";
    value = v->floatAt(0);
  }
  Value y = *x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    const int64_t lo = (*pads)[axis], hi = (*pads)[rank + axis];
    auto type = cast<RankedTensorType>(y.getType());
    const int64_t n = type.getDimSize(axis);
    if (lo < -n || hi < -n) return t.refuse() << "pads crop more than the " << n << " elements of axis " << axis;
    if (lo < 0 || hi < 0) {  // crop first, as numpy's slicing of the padded result does
      const int64_t begin = std::max<int64_t>(0, -lo), end = n - std::max<int64_t>(0, -hi);
      if (begin > end) return t.refuse() << "pads crop more than the " << n << " elements of axis " << axis;
      Shape starts(rank, 0), limits(type.getShape()), strides(rank, 1);
      starts[axis] = begin;
      limits[axis] = end;
      auto cropped = build<SliceOp>(t, y, {i64Array(t, "starts", starts), i64Array(t, "limits", limits),
                                           i64Array(t, "strides", strides)});
      if (failed(cropped)) return failure();
      y = *cropped;
    }
    const int64_t before = std::max<int64_t>(lo, 0), after = std::max<int64_t>(hi, 0);
    if (before == 0 && after == 0) continue;
    const int64_t size = cast<RankedTensorType>(y.getType()).getDimSize(axis);
    if (mode != "constant" && size == 0) return t.refuse() << "axis " << axis << " is empty: nothing to " << mode;
    if (mode == "reflect" && (before >= size || after >= size))
      return t.refuse() << "reflect pads of " << before << " and " << after << " on axis " << axis << " (" << size
                        << " elements) must be below its size";
    llvm::SmallVector<Value> parts;
    for (bool low : {true, false}) {
      const int64_t count = low ? before : after;
      if (!low) parts.push_back(y);
      if (count == 0) continue;
      auto side = padSide(t, y, axis, count, low, mode, value);
      if (failed(side)) return failure();
      parts.append(side->begin(), side->end());
    }
    auto joined = build<ConcatOp>(t, parts, {i64(t, "axis", axis)});
    if (failed(joined)) return failure();
    y = *joined;
  }
  return bind(t, y);
}

}  // namespace

void addCompositeConverters(llvm::StringMap<Converter>& converters) {
  converters.insert({
      {"Clip", convertClip},
      {"Equal", convertCompare<ComparePredicate::Eq>},
      {"Greater", convertCompare<ComparePredicate::Gt>},
      {"GreaterOrEqual", convertCompare<ComparePredicate::Ge>},
      {"HardSigmoid", convertHardSigmoid},
      {"HardSwish", convertHardSwish},
      {"LeakyRelu", convertLeakyRelu},
      {"Less", convertCompare<ComparePredicate::Lt>},
      {"LessOrEqual", convertCompare<ComparePredicate::Le>},
      {"Mean", [](GraphTranslator& t) { return convertVariadicSum(t, true); }},
      {"Pad", convertPad},
      {"Split", convertSplit},
      {"Sum", [](GraphTranslator& t) { return convertVariadicSum(t, false); }},
      {"Trilu", convertTrilu},
      {"Where", convertWhere},
  });
}

}  // namespace mlir::amp::onnx_import
