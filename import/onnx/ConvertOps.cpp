// One converter per supported ONNX op: each maps the node onto amp ops that compute exactly what
// ONNX specifies, or refuses it with what would work instead. Attributes a converter does not
// read are refused (onlyAttributes), so no attribute is ever ignored.
#include <numeric>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {
namespace {

template <typename OpT>
LogicalResult convertUnary(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  return bind(t, build<OpT>(t, *x));
}

template <typename OpT>
LogicalResult convertBinary(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  if (t.numInputs() != 2) return t.refuse() << "only the two-operand form is supported";
  auto a = floatInput(t, 0);
  auto b = failed(a) ? a : floatInput(t, 1);
  if (failed(b)) return failure();
  if (cast<RankedTensorType>(a->getType()).getElementType() != cast<RankedTensorType>(b->getType()).getElementType())
    return t.refuse() << "the operands have different element types";
  return bind(t, build<OpT>(t, {*a, *b}));
}

LogicalResult convertIdentity(GraphTranslator& t) {
  auto x = t.input(0);
  return failed(x) ? failure() : t.setOutput(0, *x);
}

LogicalResult convertCast(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"to"}))) return failure();
  auto x = t.input(0);
  if (failed(x)) return failure();
  auto to = elementTypeFor(static_cast<int32_t>(t.intAttribute("to", 0)), t.context());
  if (!to || *to != cast<RankedTensorType>(x->getType()).getElementType())
    return t.refuse() << "Cast of a computed tensor to "
                      << dataTypeName(static_cast<int32_t>(t.intAttribute("to", 0)))
                      << " is not supported (only a cast to its own type; precision is ampc's to choose)";
  return t.setOutput(0, *x);
}

LogicalResult convertMatMul(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto a = floatInput(t, 0);
  auto b = failed(a) ? a : floatInput(t, 1);
  if (failed(b)) return failure();
  // numpy.matmul: a 1-D lhs is a row, a 1-D rhs a column, and that dim is dropped afterwards.
  auto ta = cast<RankedTensorType>(a->getType()), tb = cast<RankedTensorType>(b->getType());
  Value lhs = *a, rhs = *b;
  if (ta.getRank() == 1) lhs = reshape(t, lhs, {1, ta.getDimSize(0)});
  if (tb.getRank() == 1) rhs = reshape(t, rhs, {tb.getDimSize(0), 1});
  auto product = build<MatmulOp>(t, {lhs, rhs});
  if (failed(product)) return failure();
  Value y = *product;
  if (ta.getRank() == 1 || tb.getRank() == 1) {
    auto shape = cast<RankedTensorType>(y.getType()).getShape().vec();
    if (tb.getRank() == 1) shape.pop_back();
    if (ta.getRank() == 1) shape.erase(shape.end() - (tb.getRank() == 1 ? 1 : 2));
    y = reshape(t, y, shape);
  }
  return t.setOutput(0, y);
}

// Y = alpha * A' B' + beta * C: one amp.linear (x·Wᵀ + b or x·W + b, the bias added before the
// one rounding) when alpha = beta = 1 and C is a bias vector, else matmul, scale and add.
LogicalResult convertGemm(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"alpha", "beta", "transA", "transB"}))) return failure();
  auto a = floatInput(t, 0);
  auto b = failed(a) ? a : floatInput(t, 1);
  if (failed(b)) return failure();
  const float alpha = t.floatAttribute("alpha", 1.0f), beta = t.floatAttribute("beta", 1.0f);
  const bool transA = t.intAttribute("transA", 0) != 0, transB = t.intAttribute("transB", 0) != 0;
  FailureOr<Value> c = Value();
  if (t.hasInput(2)) c = floatInput(t, 2);
  if (failed(c)) return failure();
  auto cType = *c ? cast<RankedTensorType>(c->getType()) : RankedTensorType();
  auto bShape = cast<RankedTensorType>(b->getType()).getShape();
  const int64_t outFeatures = bShape.size() == 2 ? bShape[transB ? 0 : 1] : -1;
  const bool biasVector = *c && cType.getRank() == 1 && cType.getDimSize(0) == outFeatures;
  if (alpha == 1.0f && !transA && (!*c || (beta == 1.0f && biasVector))) {
    llvm::SmallVector<Value> operands = {*a, *b};
    if (*c) operands.push_back(*c);
    return bind(t, build<LinearOp>(t, operands, {named(t, "transpose_w", t.builder().getBoolAttr(transB))}));
  }
  llvm::SmallVector<NamedAttribute> flags;
  if (transA) flags.push_back(named(t, "transpose_a", t.builder().getUnitAttr()));
  if (transB) flags.push_back(named(t, "transpose_b", t.builder().getUnitAttr()));
  auto y = build<MatmulOp>(t, {*a, *b}, flags);
  if (failed(y)) return failure();
  Type element = cast<RankedTensorType>(y->getType()).getElementType();
  if (alpha != 1.0f) y = build<MulOp>(t, {*y, scalarConstant(t, alpha, element)});
  if (failed(y) || !*c || beta == 0.0f) return bind(t, y);
  Value bias = *c;
  if (beta != 1.0f) {
    auto scaled = build<MulOp>(t, {bias, scalarConstant(t, beta, element)});
    if (failed(scaled)) return failure();
    bias = *scaled;
  }
  return bind(t, build<AddOp>(t, {*y, bias}));
}

LogicalResult convertSoftmaxLike(GraphTranslator& t, bool log) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  const int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  auto axis = normalizeAxis(t.intAttribute("axis", -1), rank);
  if (!axis) return t.refuse() << "axis " << t.intAttribute("axis", -1) << " is out of range for rank " << rank;
  llvm::SmallVector<NamedAttribute> attrs = {i64(t, "axis", *axis)};
  return bind(t, log ? build<LogSoftmaxOp>(t, *x, attrs) : build<SoftmaxOp>(t, *x, attrs));
}

LogicalResult convertReshape(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"allowzero"}))) return failure();
  auto x = t.input(0);
  auto target = failed(x) ? FailureOr<std::vector<int64_t>>(failure()) : t.constantInts(1, "the target shape");
  if (failed(target)) return failure();
  auto shape = reshapeTarget(t, cast<RankedTensorType>(x->getType()).getShape().vec(), *target);
  if (failed(shape)) return failure();
  return t.setOutput(0, reshape(t, *x, *shape));
}

LogicalResult convertFlatten(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  auto x = t.input(0);
  if (failed(x)) return failure();
  auto shape = cast<RankedTensorType>(x->getType()).getShape();
  const int64_t rank = shape.size();
  int64_t axis = t.intAttribute("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return t.refuse() << "axis " << t.intAttribute("axis", 1) << " is out of range";
  auto product = [](llvm::ArrayRef<int64_t> dims) {
    return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
  };
  return t.setOutput(0, reshape(t, *x, {product(shape.take_front(axis)), product(shape.drop_front(axis))}));
}

LogicalResult convertSqueezeLike(GraphTranslator& t, bool unsqueeze) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = t.input(0);
  if (failed(x)) return failure();
  Shape in = cast<RankedTensorType>(x->getType()).getShape().vec();
  std::optional<std::vector<int64_t>> axes;
  if (t.hasInput(1)) {
    auto given = t.constantInts(1, "axes");
    if (failed(given)) return failure();
    axes = *given;
  }
  Shape out;
  if (unsqueeze) {
    if (!axes) return t.refuse() << "Unsqueeze needs axes";
    const int64_t rank = in.size() + axes->size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : *axes) {
      auto axis = normalizeAxis(a, rank);
      if (!axis || inserted[*axis]) return t.refuse() << "axes are out of range or repeated";
      inserted[*axis] = true;
    }
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d) out.push_back(inserted[d] ? 1 : in[next++]);
  } else {
    const int64_t rank = in.size();
    std::vector<bool> drop(rank, false);
    for (int64_t d = 0; d < rank; ++d) drop[d] = !axes && in[d] == 1;
    for (int64_t a : axes.value_or(std::vector<int64_t>{})) {
      auto axis = normalizeAxis(a, rank);
      if (!axis || in[*axis] != 1) return t.refuse() << "axis " << a << " is not a dim of size 1";
      drop[*axis] = true;
    }
    for (int64_t d = 0; d < rank; ++d)
      if (!drop[d]) out.push_back(in[d]);
  }
  return t.setOutput(0, reshape(t, *x, out));
}

LogicalResult convertTranspose(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"perm"}))) return failure();
  auto x = t.input(0);
  if (failed(x)) return failure();
  const int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::vector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);  // ONNX's default reverses the dims
  if (auto given = t.intsAttribute("perm")) perm = *given;
  return bind(t, build<TransposeOp>(t, *x, {i64Array(t, "permutation", perm)}));
}

LogicalResult convertConcat(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  llvm::SmallVector<Value> inputs;
  for (unsigned i = 0; i < t.numInputs(); ++i) {
    auto v = t.input(i);
    if (failed(v)) return failure();
    inputs.push_back(*v);
  }
  const int64_t rank = cast<RankedTensorType>(inputs[0].getType()).getRank();
  auto axis = normalizeAxis(t.intAttribute("axis", 0), rank);
  if (!axis) return t.refuse() << "axis out of range";
  return bind(t, build<ConcatOp>(t, inputs, {i64(t, "axis", *axis)}));
}

LogicalResult convertGlobalAveragePool(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  const int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (rank < 3) return t.refuse() << "the input needs spatial dims (rank >= 3)";
  Shape dims(rank - 2);
  std::iota(dims.begin(), dims.end(), 2);
  return bind(t, build<ReduceMeanOp>(t, *x, {i64Array(t, "dims", dims), named(t, "keepdim", t.builder().getUnitAttr())}));
}

// Dropout in inference mode is the identity; in training mode amp.dropout, whose mask is drawn
// from a counter-based generator keyed by the seed (ONNX specifies none). Without a seed
// attribute the node's index is the seed, so two dropouts never share a mask.
LogicalResult convertDropout(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"seed"}))) return failure();
  if (t.outputUsed(1)) return t.refuse() << "the mask output is not supported";
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  double ratio = 0.5;
  bool training = false;
  if (t.hasInput(1)) {
    const HostTensor* r = t.constantInput(1);
    if (!r || r->numel() != 1) return t.refuse() << "the ratio must be a known scalar";
    ratio = r->floatAt(0);
  }
  if (t.hasInput(2)) {
    const HostTensor* m = t.constantInput(2);
    if (!m || m->numel() != 1) return t.refuse() << "training_mode must be a known scalar";
    training = m->floatAt(0) != 0;
  }
  if (!training || ratio == 0) return t.setOutput(0, *x);
  if (ratio < 0 || ratio >= 1) return t.refuse() << "ratio " << ratio << " is outside [0, 1)";
  return bind(t, build<DropoutOp>(t, *x,
                                  {named(t, "rate", t.builder().getF64FloatAttr(ratio)),
                                   i64(t, "seed", t.intAttribute("seed", t.nodeIndex()))}));
}

// ReduceMean/ReduceMax take axes as an attribute in opsets 13-17, ReduceSum as an input.
template <typename OpT>
LogicalResult convertReduce(GraphTranslator& t, bool axesInput) {
  if (failed(axesInput ? t.onlyAttributes({"keepdims", "noop_with_empty_axes"}) : t.onlyAttributes({"axes", "keepdims"})))
    return failure();
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  const int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::vector<int64_t> axes;
  if (axesInput && t.hasInput(1)) {
    auto given = t.constantInts(1, "axes");
    if (failed(given)) return failure();
    axes = *given;
  } else if (!axesInput) {
    axes = t.intsAttribute("axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty()) {
    if (axesInput && t.intAttribute("noop_with_empty_axes", 0) != 0) return t.setOutput(0, *x);
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) {
    auto axis = normalizeAxis(a, rank);
    if (!axis) return t.refuse() << "axis " << a << " is out of range for rank " << rank;
    a = *axis;
  }
  llvm::sort(axes);
  llvm::SmallVector<NamedAttribute> attrs = {i64Array(t, "dims", axes)};
  if (t.intAttribute("keepdims", 1) != 0) attrs.push_back(named(t, "keepdim", t.builder().getUnitAttr()));
  return bind(t, build<OpT>(t, *x, attrs));
}

// Gather along axis 0 of a float table by integer indices is an embedding lookup.
// Gather of computed data at indices known at import (`y[-1]` of an RNN's outputs, a token picked
// by position): one amp.slice per index along the axis, joined, then reshaped to ONNX's shape
// data.shape[:axis] + indices.shape + data.shape[axis+1:].
LogicalResult gatherKnownIndices(GraphTranslator& t, Value data, const HostTensor& indices) {
  auto shape = cast<RankedTensorType>(data.getType()).getShape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto axis = normalizeAxis(t.intAttribute("axis", 0), rank);
  if (!axis) return t.refuse() << "axis out of range";
  const int64_t n = shape[*axis];
  llvm::SmallVector<Value> pieces;
  for (int64_t index : indices.ints) {
    if (index < -n || index >= n) return t.refuse() << "index " << index << " is out of range for a dim of size " << n;
    if (index < 0) index += n;
    Shape starts(rank, 0), limits(shape.begin(), shape.end());
    starts[*axis] = index;
    limits[*axis] = index + 1;
    auto piece = build<SliceOp>(t, data, {i64Array(t, "starts", starts), i64Array(t, "limits", limits)});
    if (failed(piece)) return failure();
    pieces.push_back(*piece);
  }
  if (pieces.empty()) return t.refuse() << "Gather with no indices is not supported";
  Value joined = pieces.front();
  if (pieces.size() > 1) {
    auto concat = build<ConcatOp>(t, pieces, {i64(t, "axis", *axis)});
    if (failed(concat)) return failure();
    joined = *concat;
  }
  Shape out(shape.begin(), shape.begin() + *axis);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), shape.begin() + *axis + 1, shape.end());
  return t.setOutput(0, reshape(t, joined, out));
}

LogicalResult convertGather(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"axis"}))) return failure();
  auto table = floatInput(t, 0);
  if (failed(table)) return failure();
  auto tableType = cast<RankedTensorType>(table->getType());
  const HostTensor* known = t.constantInput(1);
  if ((t.intAttribute("axis", 0) != 0 || tableType.getRank() != 2) && known && !known->isFloat())
    return gatherKnownIndices(t, *table, *known);
  auto ids = t.input(1);
  if (failed(ids)) return failure();
  if (t.intAttribute("axis", 0) != 0 || tableType.getRank() != 2)
    return t.refuse() << "Gather of computed data is supported along axis 0 of a 2-D table (an embedding lookup) "
                         "or at indices known at import; Gather on shapes and constants is folded";
  if (!isa<IntegerType>(cast<RankedTensorType>(ids->getType()).getElementType()))
    return t.refuse() << "the indices must be integers";
  return bind(t, build<EmbeddingOp>(t, {*table, *ids}));
}

LogicalResult convertSlice(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = t.input(0);
  auto starts = failed(x) ? FailureOr<std::vector<int64_t>>(failure()) : t.constantInts(1, "starts");
  auto ends = failed(starts) ? starts : t.constantInts(2, "ends");
  if (failed(ends)) return failure();
  Shape shape = cast<RankedTensorType>(x->getType()).getShape().vec();
  const int64_t rank = shape.size();
  std::vector<int64_t> axes, steps;
  if (failed(t.sliceAxesAndSteps(starts->size(), axes, steps))) return failure();
  Shape begin(rank, 0), limit(shape), stride(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    auto axis = normalizeAxis(axes[k], rank);
    if (!axis) return t.refuse() << "axis " << axes[k] << " is out of range";
    if (steps[k] <= 0) return t.refuse() << "negative or zero steps are not supported on computed tensors";
    const int64_t n = shape[*axis];
    int64_t b = starts->at(k), e = ends->at(k);
    b = std::clamp(b < 0 ? b + n : b, int64_t{0}, n);
    e = std::clamp(e < 0 ? e + n : e, int64_t{0}, n);
    begin[*axis] = b;
    limit[*axis] = std::max(b, e);
    stride[*axis] = steps[k];
  }
  return bind(t, build<SliceOp>(t, *x,
                                {i64Array(t, "starts", begin), i64Array(t, "limits", limit),
                                 i64Array(t, "strides", stride)}));
}

LogicalResult convertExpand(GraphTranslator& t) {
  if (failed(t.onlyAttributes({}))) return failure();
  auto x = t.input(0);
  auto target = failed(x) ? FailureOr<std::vector<int64_t>>(failure()) : t.constantInts(1, "the shape");
  if (failed(target)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  Shape in = type.getShape().vec(), want = *target;
  for (int64_t d : want)
    if (d < 0) return t.refuse() << "the shape has the negative entry " << d;
  const size_t rank = std::max(in.size(), want.size());
  in.insert(in.begin(), rank - in.size(), 1);
  want.insert(want.begin(), rank - want.size(), 1);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (in[d] != want[d] && in[d] != 1 && want[d] != 1) return t.refuse() << "the shapes do not broadcast";
    out[d] = in[d] == 1 ? want[d] : in[d];
  }
  auto outType = RankedTensorType::get(out, type.getElementType());
  if (outType == type) return t.setOutput(0, *x);
  return t.setOutput(0, t.create<BroadcastToOp>(outType, *x));
}

// LayerNormalization (opset 17) over the dims from `axis` on: amp.layer_norm with
// normalized_ndim = rank - axis, when Scale and B have exactly the normalised shape.
LogicalResult convertLayerNormalization(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"axis", "epsilon", "stash_type"}))) return failure();
  if (t.outputUsed(1) || t.outputUsed(2)) return t.refuse() << "the Mean and InvStdDev outputs are not supported";
  if (t.intAttribute("stash_type", 1) != 1)
    return t.refuse() << "stash_type=" << t.intAttribute("stash_type", 1)
                      << " is not supported (the statistics are computed in float, stash_type=1)";
  auto x = floatInput(t, 0);
  auto scale = failed(x) ? x : floatInput(t, 1);
  if (failed(scale)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  auto axis = normalizeAxis(t.intAttribute("axis", -1), type.getRank());
  if (!axis) return t.refuse() << "axis " << t.intAttribute("axis", -1) << " is out of range for rank " << type.getRank();
  Value bias;
  if (t.hasInput(2)) {
    auto b = floatInput(t, 2);
    if (failed(b)) return failure();
    bias = *b;
  }
  auto normalized = type.getShape().drop_front(*axis);
  for (Value v : {*scale, bias})
    if (v && cast<RankedTensorType>(v.getType()).getShape() != normalized)
      return t.refuse() << "Scale and B must have the normalised shape exactly (no broadcasting); got "
                        << v.getType();
  const double eps = t.floatAttribute("epsilon", 1e-5f);
  return t.setOutput(0, t.create<LayerNormOp>(type, *x, *scale, bias,
                                              static_cast<uint64_t>(type.getRank() - *axis), llvm::APFloat(eps)));
}

}  // namespace

const llvm::StringMap<Converter>& opConverters() {
  static const llvm::StringMap<Converter> converters = [] {
    llvm::StringMap<Converter> all = {
        {"Abs", convertUnary<AbsOp>},
        {"Add", convertBinary<AddOp>},
        {"Cast", convertCast},
        {"Concat", convertConcat},
        {"Div", convertBinary<DivOp>},
        {"Dropout", convertDropout},
        {"Erf", convertUnary<ErfOp>},
        {"Exp", convertUnary<ExpOp>},
        {"Expand", convertExpand},
        {"Flatten", convertFlatten},
        {"Gather", convertGather},
        {"Gemm", convertGemm},
        {"GlobalAveragePool", convertGlobalAveragePool},
        {"Identity", convertIdentity},
        {"LayerNormalization", convertLayerNormalization},
        {"Log", convertUnary<LogOp>},
        {"LogSoftmax", [](GraphTranslator& t) { return convertSoftmaxLike(t, true); }},
        {"MatMul", convertMatMul},
        {"Max", convertBinary<MaximumOp>},
        {"Min", convertBinary<MinimumOp>},
        {"Mul", convertBinary<MulOp>},
        {"Neg", convertUnary<NegOp>},
        {"Pow", convertBinary<PowOp>},
        {"Reciprocal", convertUnary<ReciprocalOp>},
        {"ReduceMax", [](GraphTranslator& t) { return convertReduce<ReduceMaxOp>(t, false); }},
        {"ReduceMean", [](GraphTranslator& t) { return convertReduce<ReduceMeanOp>(t, false); }},
        {"ReduceSum", [](GraphTranslator& t) { return convertReduce<ReduceSumOp>(t, true); }},
        {"Relu", convertUnary<ReluOp>},
        {"Reshape", convertReshape},
        {"Sigmoid", convertUnary<SigmoidOp>},
        {"Slice", convertSlice},
        {"Softmax", [](GraphTranslator& t) { return convertSoftmaxLike(t, false); }},
        {"Sqrt", convertUnary<SqrtOp>},
        {"Squeeze", [](GraphTranslator& t) { return convertSqueezeLike(t, false); }},
        {"Sub", convertBinary<SubOp>},
        {"Tanh", convertUnary<TanhOp>},
        {"Transpose", convertTranspose},
        {"Unsqueeze", [](GraphTranslator& t) { return convertSqueezeLike(t, true); }},
    };
    addCompositeConverters(all);
    addBatchNormConverter(all);
    addWindowConverters(all);
    addResizeConverters(all);
    addRecurrentConverters(all);
    return all;
  }();
  return converters;
}

}  // namespace mlir::amp::onnx_import
