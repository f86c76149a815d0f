// Type inference, verifiers and folders of the amp ops. Every diagnostic names the rule broken.
#include "ir/AmpOps.h"

#include "ir/InferSupport.h"
#include "ir/ShapeRules.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::amp;

namespace {

// Operand types may not be checked yet when inference runs from the parser: guard every access.
RankedTensorType tensorOf(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

LogicalResult notATensor(std::optional<Location> loc, StringRef op, StringRef what) {
  return emitOptionalError(loc, "'amp.", op, "' op ", what, " must be a ranked tensor");
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

LogicalResult inferBroadcast(StringRef op, std::optional<Location> loc, Value lhs, Value rhs,
                             Type resultElement, SmallVectorImpl<Type>& out) {
  auto lt = tensorOf(lhs), rt = tensorOf(rhs);
  if (!lt || !rt) return notATensor(loc, op, "each operand");
  if (lt.getElementType() != rt.getElementType())
    return emitOptionalError(loc, "'amp.", op, "' op operands must have the same element type, got ",
                             lt.getElementType(), " and ", rt.getElementType(),
                             " (insert an amp.cast)");
  auto shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (!shape)
    return emitOptionalError(loc, "'amp.", op, "' op shapes ", shapeStr(lt.getShape()), " and ",
                             shapeStr(rt.getShape()), " are not broadcast-compatible");
  out.push_back(RankedTensorType::get(*shape, resultElement ? resultElement : lt.getElementType()));
  return success();
}

// Checks that `dims` are distinct and within [0, rank).
LogicalResult checkDims(StringRef op, std::optional<Location> loc, ArrayRef<int64_t> dims,
                        int64_t rank, StringRef attr) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return emitOptionalError(loc, "'amp.", op, "' op ", attr, " entry ", d,
                               " is out of range for rank ", rank);
    if (!seen.insert(d).second)
      return emitOptionalError(loc, "'amp.", op, "' op ", attr, " entry ", d, " is repeated");
  }
  return success();
}

LogicalResult missingAttr(std::optional<Location> loc, StringRef op, StringRef attr) {
  return emitOptionalError(loc, "'amp.", op, "' op requires attribute '", attr, "'");
}

}  // namespace

bool mlir::amp::attrWithin(Attribute attr, double lo, double hi, bool loOpen, bool hiOpen) {
  double v;
  if (auto f = dyn_cast<FloatAttr>(attr)) v = f.getValueAsDouble();
  else if (auto i = dyn_cast<IntegerAttr>(attr)) v = static_cast<double>(i.getValue().getSExtValue());
  else return false;
  return (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
}

//===----------------------------------------------------------------------===//
// constant
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define AMP_BROADCAST_BINARY(Op, name)                                                         \
  LogicalResult Op::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,     \
                                     SmallVectorImpl<Type>& out) {                             \
    return inferBroadcast(name, loc, a.getLhs(), a.getRhs(), Type(), out);                     \
  }
AMP_BROADCAST_BINARY(AddOp, "add")
AMP_BROADCAST_BINARY(SubOp, "sub")
AMP_BROADCAST_BINARY(MulOp, "mul")
AMP_BROADCAST_BINARY(DivOp, "div")
AMP_BROADCAST_BINARY(MaximumOp, "maximum")
AMP_BROADCAST_BINARY(MinimumOp, "minimum")
AMP_BROADCAST_BINARY(PowOp, "pow")
#undef AMP_BROADCAST_BINARY

LogicalResult CompareOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                          SmallVectorImpl<Type>& out) {
  return inferBroadcast("compare", loc, a.getLhs(), a.getRhs(), IntegerType::get(ctx, 1), out);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type>& out) {
  SmallVector<Type, 1> values;
  if (failed(inferBroadcast("select", loc, a.getTrueValue(), a.getFalseValue(), Type(), values)))
    return failure();
  auto vt = cast<RankedTensorType>(values[0]);
  auto ct = tensorOf(a.getCond());
  if (!ct) return notATensor(loc, "select", "cond");
  auto shape = broadcastShapes(ct.getShape(), vt.getShape());
  if (!shape)
    return emitOptionalError(loc, "'amp.select' op condition shape ", shapeStr(ct.getShape()),
                             " is not broadcast-compatible with value shape ",
                             shapeStr(vt.getShape()));
  out.push_back(RankedTensorType::get(*shape, vt.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type>& out) {
  auto lt = tensorOf(a.getLhs()), rt = tensorOf(a.getRhs());
  if (!lt || !rt) return notATensor(loc, "matmul", "each operand");
  if (lt.getRank() < 2 || rt.getRank() < 2)
    return emitOptionalError(loc, "'amp.matmul' op operands must have rank >= 2, got ranks ",
                             lt.getRank(), " and ", rt.getRank());
  if (lt.getElementType() != rt.getElementType())
    return emitOptionalError(loc, "'amp.matmul' op operands must have the same element type, got ",
                             lt.getElementType(), " and ", rt.getElementType());
  ArrayRef<int64_t> ls = lt.getShape(), rs = rt.getShape();
  bool transposeA = static_cast<bool>(inherent(a, a.getTransposeAAttr(), "transpose_a"));
  bool transposeB = static_cast<bool>(inherent(a, a.getTransposeBAttr(), "transpose_b"));
  int64_t m = transposeA ? ls[ls.size() - 1] : ls[ls.size() - 2];
  int64_t k = transposeA ? ls[ls.size() - 2] : ls[ls.size() - 1];
  int64_t k2 = transposeB ? rs[rs.size() - 1] : rs[rs.size() - 2];
  int64_t n = transposeB ? rs[rs.size() - 2] : rs[rs.size() - 1];
  if (k != k2)
    return emitOptionalError(loc, "'amp.matmul' op contraction dimensions differ: lhs ",
                             shapeStr(ls), " gives K = ", k, ", rhs ", shapeStr(rs), " gives K = ",
                             k2);
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "'amp.matmul' op batch dimensions ", shapeStr(ls.drop_back(2)),
                             " and ", shapeStr(rs.drop_back(2)), " are not broadcast-compatible");
  SmallVector<int64_t> shape(*batch);
  shape.push_back(m);
  shape.push_back(n);
  out.push_back(RankedTensorType::get(shape, lt.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type>& out) {
  auto xt = tensorOf(a.getInput()), wt = tensorOf(a.getWeight());
  if (!xt || !wt) return notATensor(loc, "linear", "input and weight");
  bool transposeW =
      inherent(a, a.getTransposeWAttr(), "transpose_w", odsDefaults<LinearOp>(ctx).transpose_w).getValue();
  const char* layout = transposeW ? "[out, in] (transpose_w = true)" : "[in, out] (transpose_w = false)";
  if (xt.getRank() < 2)
    return emitOptionalError(loc, "'amp.linear' op input must be [..., in] with rank >= 2, got ",
                             xt);
  if (wt.getRank() != 2)
    return emitOptionalError(loc, "'amp.linear' op weight must be ", layout, " (rank 2), got ", wt);
  Type e = xt.getElementType();
  if (wt.getElementType() != e)
    return emitOptionalError(loc, "'amp.linear' op input, weight and bias must have one element "
                                  "type, got ", e, " and ", wt.getElementType(), " (insert an amp.cast)");
  int64_t in = transposeW ? wt.getDimSize(1) : wt.getDimSize(0);
  int64_t outFeatures = transposeW ? wt.getDimSize(0) : wt.getDimSize(1);
  if (xt.getShape().back() != in)
    return emitOptionalError(loc, "'amp.linear' op input ", shapeStr(xt.getShape()), " has ",
                             xt.getShape().back(), " features but weight ", shapeStr(wt.getShape()),
                             " read as ", layout, " takes in = ", in);
  if (Value bias = a.getBias()) {
    auto bt = tensorOf(bias);
    if (!bt) return notATensor(loc, "linear", "bias");
    if (bt.getElementType() != e)
      return emitOptionalError(loc, "'amp.linear' op input, weight and bias must have one element "
                                    "type, got ", e, " and bias ", bt.getElementType(),
                               " (insert an amp.cast)");
    if (bt.getRank() != 1 || bt.getDimSize(0) != outFeatures)
      return emitOptionalError(loc, "'amp.linear' op bias must be [out] = [", outFeatures, "], got ",
                               bt);
  }
  SmallVector<int64_t> shape(xt.getShape().drop_back());
  shape.push_back(outFeatures);
  out.push_back(RankedTensorType::get(shape, e));
  return success();
}

//===----------------------------------------------------------------------===//
// conv2d and pooling
//===----------------------------------------------------------------------===//

static LogicalResult checkPair(StringRef op, std::optional<Location> loc, StringRef attr,
                               ArrayRef<int64_t> v, int64_t minValue) {
  if (v.size() != 2)
    return emitOptionalError(loc, "'amp.", op, "' op ", attr, " must have 2 entries (h, w), got ",
                             v.size());
  for (int64_t x : v)
    if (x < minValue)
      return emitOptionalError(loc, "'amp.", op, "' op ", attr, " entries must be >= ", minValue,
                               ", got ", shapeStr(v));
  return success();
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getInput()), wt = tensorOf(a.getWeight());
  if (!it || !wt) return notATensor(loc, "conv2d", "input and weight");
  if (it.getRank() != 4 || wt.getRank() != 4)
    return emitOptionalError(loc, "'amp.conv2d' op input [N,C,H,W] and weight [O,C/groups,KH,KW] "
                                  "must have rank 4, got ranks ", it.getRank(), " and ", wt.getRank());
  if (it.getElementType() != wt.getElementType())
    return emitOptionalError(loc, "'amp.conv2d' op input and weight must have the same element "
                                  "type, got ", it.getElementType(), " and ", wt.getElementType());
  Conv2DOp::Properties defaults = odsDefaults<Conv2DOp>(ctx);
  ArrayRef<int64_t> stride = inherent(a, a.getStrideAttr(), "stride", defaults.stride).asArrayRef();
  ArrayRef<int64_t> padding = inherent(a, a.getPaddingAttr(), "padding", defaults.padding).asArrayRef();
  ArrayRef<int64_t> dilation = inherent(a, a.getDilationAttr(), "dilation", defaults.dilation).asArrayRef();
  if (failed(checkPair("conv2d", loc, "stride", stride, 1)) ||
      failed(checkPair("conv2d", loc, "padding", padding, 0)) ||
      failed(checkPair("conv2d", loc, "dilation", dilation, 1)))
    return failure();
  int64_t groups = inherent(a, a.getGroupsAttr(), "groups", defaults.groups).getInt();
  ArrayRef<int64_t> in = it.getShape(), w = wt.getShape();
  if (groups < 1 || in[1] % groups != 0 || w[0] % groups != 0)
    return emitOptionalError(loc, "'amp.conv2d' op groups = ", groups,
                             " must be >= 1 and divide input channels ", in[1],
                             " and output channels ", w[0]);
  if (w[1] != in[1] / groups)  // groups divides in[1]; w[1] * groups could overflow
    return emitOptionalError(loc, "'amp.conv2d' op weight has ", w[1],
                             " input channels per group but input has ", in[1], " channels in ",
                             groups, " group(s)");
  if (Value bias = a.getBias()) {
    auto bt = tensorOf(bias);
    if (!bt) return notATensor(loc, "conv2d", "bias");
    if (bt.getRank() != 1 || bt.getDimSize(0) != w[0] || bt.getElementType() != it.getElementType())
      return emitOptionalError(loc, "'amp.conv2d' op bias must be [", w[0], "] of ",
                               it.getElementType(), ", got ", bt);
  }
  int64_t oh = windowOutputSize(in[2], w[2], stride[0], padding[0], dilation[0]);
  int64_t ow = windowOutputSize(in[3], w[3], stride[1], padding[1], dilation[1]);
  if (oh <= 0 || ow <= 0)
    return emitOptionalError(loc, "'amp.conv2d' op kernel ", shapeStr(w.drop_front(2)),
                             " does not fit the padded input ", shapeStr(in.drop_front(2)));
  out.push_back(RankedTensorType::get({in[0], w[0], oh, ow}, it.getElementType()));
  return success();
}

static LogicalResult inferPool(StringRef op, std::optional<Location> loc, Value input,
                               ArrayRef<int64_t> kernel, std::optional<ArrayRef<int64_t>> stride,
                               ArrayRef<int64_t> padding, SmallVectorImpl<Type>& out) {
  auto it = tensorOf(input);
  if (!it) return notATensor(loc, op, "input");
  if (it.getRank() != 4)
    return emitOptionalError(loc, "'amp.", op, "' op input must be NCHW (rank 4), got rank ",
                             it.getRank());
  ArrayRef<int64_t> s = stride ? *stride : kernel;
  if (failed(checkPair(op, loc, "kernel", kernel, 1)) ||
      failed(checkPair(op, loc, "stride", s, 1)) || failed(checkPair(op, loc, "padding", padding, 0)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (padding[i] > kernel[i] / 2)  // padding * 2 > kernel, without overflow
      return emitOptionalError(loc, "'amp.", op, "' op padding ", shapeStr(padding),
                               " must be at most half the kernel ", shapeStr(kernel));
  ArrayRef<int64_t> in = it.getShape();
  int64_t oh = windowOutputSize(in[2], kernel[0], s[0], padding[0], 1);
  int64_t ow = windowOutputSize(in[3], kernel[1], s[1], padding[1], 1);
  if (oh <= 0 || ow <= 0)
    return emitOptionalError(loc, "'amp.", op, "' op kernel ", shapeStr(kernel),
                             " does not fit the padded input ", shapeStr(in.drop_front(2)));
  out.push_back(RankedTensorType::get({in[0], in[1], oh, ow}, it.getElementType()));
  return success();
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  auto kernel = inherent(a, a.getKernelAttr(), "kernel");
  if (!kernel) return missingAttr(loc, "max_pool2d", "kernel");
  std::optional<ArrayRef<int64_t>> stride;
  if (auto s = inherent(a, a.getStrideAttr(), "stride")) stride = s.asArrayRef();
  auto padding = inherent(a, a.getPaddingAttr(), "padding", odsDefaults<MaxPool2DOp>(ctx).padding);
  return inferPool("max_pool2d", loc, a.getInput(), kernel.asArrayRef(), stride, padding.asArrayRef(), out);
}
LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  auto kernel = inherent(a, a.getKernelAttr(), "kernel");
  if (!kernel) return missingAttr(loc, "avg_pool2d", "kernel");
  std::optional<ArrayRef<int64_t>> stride;
  if (auto s = inherent(a, a.getStrideAttr(), "stride")) stride = s.asArrayRef();
  auto padding = inherent(a, a.getPaddingAttr(), "padding", odsDefaults<AvgPool2DOp>(ctx).padding);
  return inferPool("avg_pool2d", loc, a.getInput(), kernel.asArrayRef(), stride, padding.asArrayRef(), out);
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(StringRef op, std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> dims, bool keepdim, SmallVectorImpl<Type>& out) {
  auto it = tensorOf(input);
  if (!it) return notATensor(loc, op, "input");
  if (dims.empty())
    return emitOptionalError(loc, "'amp.", op, "' op dims must name at least one dimension");
  if (failed(checkDims(op, loc, dims, it.getRank(), "dims"))) return failure();
  // The runtime requires them ascending (it reads them in order); one rule for both.
  if (!llvm::is_sorted(dims))
    return emitOptionalError(loc, "'amp.", op, "' op dims must be in ascending order");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < it.getRank(); ++d) {
    if (llvm::is_contained(dims, d)) {
      if (keepdim) shape.push_back(1);
    } else {
      shape.push_back(it.getDimSize(d));
    }
  }
  out.push_back(RankedTensorType::get(shape, it.getElementType()));
  return success();
}

#define AMP_REDUCE(Op, name)                                                                   \
  LogicalResult Op::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,     \
                                     SmallVectorImpl<Type>& out) {                             \
    auto dims = inherent(a, a.getDimsAttr(), "dims");                                          \
    if (!dims) return missingAttr(loc, name, "dims");                                          \
    bool keepdim = static_cast<bool>(inherent(a, a.getKeepdimAttr(), "keepdim"));              \
    return inferReduce(name, loc, a.getInput(), dims.asArrayRef(), keepdim, out);              \
  }
AMP_REDUCE(ReduceSumOp, "reduce_sum")
AMP_REDUCE(ReduceMeanOp, "reduce_mean")
AMP_REDUCE(ReduceMaxOp, "reduce_max")
#undef AMP_REDUCE

static LogicalResult verifyAxis(Operation* op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifyAxis(*this, getAxis(), getInput().getType().getRank()); }
LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

// weight/bias of a norm: the trailing `ndim` dims of the input, same element type.
static LogicalResult verifyNormParams(Operation* op, RankedTensorType input, int64_t ndim,
                                      double eps, std::initializer_list<std::pair<StringRef, Value>> params) {
  if (ndim < 1 || ndim > input.getRank())
    return op->emitOpError("normalized_ndim must be in [1, ") << input.getRank() << "], got " << ndim;
  if (!(eps > 0.0)) return op->emitOpError("eps must be positive, got ") << eps;
  ArrayRef<int64_t> trailing = input.getShape().take_back(ndim);
  for (auto [name, value] : params) {
    if (!value) continue;
    auto t = cast<RankedTensorType>(value.getType());
    if (t.getShape() != trailing || t.getElementType() != input.getElementType())
      return op->emitOpError() << name << " must have the normalised shape " << shapeStr(trailing)
                               << " and element type " << input.getElementType() << ", got " << t;
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNormParams(*this, getInput().getType(), getNormalizedNdim(),
                          getEps().convertToDouble(), {{"weight", getWeight()}, {"bias", getBias()}});
}

LogicalResult RmsNormOp::verify() {
  return verifyNormParams(*this, getInput().getType(), getNormalizedNdim(),
                          getEps().convertToDouble(), {{"weight", getWeight()}});
}

// batch_norm: [N, C, ...] (channels are dim 1); the per-channel operands and statistics are f32 [C].
LogicalResult BatchNormOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getInput());
  if (!it) return notATensor(loc, "batch_norm", "input");
  if (it.getRank() < 2)
    return emitOptionalError(loc, "'amp.batch_norm' op input must be [N, C, ...] (rank >= 2), got ", it);
  auto channels = RankedTensorType::get({it.getDimSize(1)}, Float32Type::get(ctx));
  out.push_back(it);
  out.push_back(channels);
  out.push_back(channels);
  return success();
}

LogicalResult BatchNormOp::verify() {
  auto it = getInput().getType();
  auto channels = RankedTensorType::get({it.getDimSize(1)}, Float32Type::get(getContext()));
  // Statistics and the affine transform stay f32 when the input is bf16/f16 (PyTorch, cuDNN).
  if (getScale().getType() != channels)
    return emitOpError("scale, bias and running statistics must be ")
           << channels << " (f32, one per channel of " << it << "), got " << getScale().getType();
  double eps = getEpsilon().convertToDouble(), momentum = getMomentum().convertToDouble();
  if (!(eps > 0.0)) return emitOpError("epsilon must be positive, got ") << eps;
  if (!(momentum >= 0.0 && momentum <= 1.0)) return emitOpError("momentum must be in [0, 1], got ") << momentum;
  if (getTraining() && it.getNumElements() / it.getDimSize(1) < 2)
    return emitOpError("training needs more than one value per channel (the running variance is "
                       "unbiased), got ") << it;
  return success();
}

//===----------------------------------------------------------------------===//
// embedding, dropout
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  auto tt = tensorOf(a.getTable()), it = tensorOf(a.getIds());
  if (!tt || !it) return notATensor(loc, "embedding", "table and ids");
  if (tt.getRank() != 2)
    return emitOptionalError(loc, "'amp.embedding' op table must be [V, D] (rank 2), got rank ",
                             tt.getRank());
  SmallVector<int64_t> shape(it.getShape());
  shape.push_back(tt.getDimSize(1));
  out.push_back(RankedTensorType::get(shape, tt.getElementType()));
  return success();
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0)) return emitOpError("rate must be in [0, 1), got ") << rate;
  if (static_cast<int64_t>(getSeed()) < 0)
    return emitOpError("seed must be non-negative, got ") << static_cast<int64_t>(getSeed());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change (") << in.getElementType() << " -> "
                                                         << out.getElementType() << "); use amp.cast";
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("element count must not change: ")
           << shapeStr(in.getShape()) << " has " << in.getNumElements() << ", "
           << shapeStr(out.getShape()) << " has " << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType()) return getInput();
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getInput());
  if (!it) return notATensor(loc, "transpose", "input");
  auto permutation = inherent(a, a.getPermutationAttr(), "permutation");
  if (!permutation) return missingAttr(loc, "transpose", "permutation");
  ArrayRef<int64_t> perm = permutation.asArrayRef();
  if (static_cast<int64_t>(perm.size()) != it.getRank())
    return emitOptionalError(loc, "'amp.transpose' op permutation has ", perm.size(),
                             " entries but the input has rank ", it.getRank());
  if (failed(checkDims("transpose", loc, perm, it.getRank(), "permutation"))) return failure();
  SmallVector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(it.getDimSize(p));
  out.push_back(RankedTensorType::get(shape, it.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change (") << in.getElementType() << " -> "
                                                         << out.getElementType() << ")";
  if (!broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError("shape ") << shapeStr(in.getShape()) << " does not broadcast to "
                                 << shapeStr(out.getShape());
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getInput());
  if (!it) return notATensor(loc, "slice", "input");
  int64_t rank = it.getRank();
  auto startsAttr = inherent(a, a.getStartsAttr(), "starts");
  auto limitsAttr = inherent(a, a.getLimitsAttr(), "limits");
  if (!startsAttr || !limitsAttr) return missingAttr(loc, "slice", "starts/limits");
  ArrayRef<int64_t> starts = startsAttr.asArrayRef(), limits = limitsAttr.asArrayRef();
  SmallVector<int64_t> strides(rank, 1);
  if (auto s = inherent(a, a.getStridesAttr(), "strides"))
    strides.assign(s.asArrayRef().begin(), s.asArrayRef().end());
  if (static_cast<int64_t>(starts.size()) != rank || static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "'amp.slice' op starts, limits and strides need one entry per "
                                  "dimension (rank ", rank, ")");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > it.getDimSize(d))
      return emitOptionalError(loc, "'amp.slice' op dimension ", d, ": need 0 <= start (",
                               starts[d], ") <= limit (", limits[d], ") <= size (",
                               it.getDimSize(d), ")");
    if (strides[d] < 1)
      return emitOptionalError(loc, "'amp.slice' op dimension ", d, ": stride must be >= 1, got ",
                               strides[d]);
    // ceil((limit - start) / stride), without the overflow of limit - start + stride - 1 near 2^63.
    const int64_t extent = limits[d] - starts[d];
    shape.push_back(extent == 0 ? 0 : (extent - 1) / strides[d] + 1);
  }
  out.push_back(RankedTensorType::get(shape, it.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type>& out) {
  ValueRange inputs = a.getInputs();
  if (inputs.empty()) return emitOptionalError(loc, "'amp.concat' op needs at least one input");
  auto first = tensorOf(inputs[0]);
  if (!first) return notATensor(loc, "concat", "each input");
  auto axisAttr = inherent(a, a.getAxisAttr(), "axis");
  if (!axisAttr) return missingAttr(loc, "concat", "axis");
  int64_t axis = axisAttr.getInt(), rank = first.getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "'amp.concat' op axis ", axis, " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    auto t = tensorOf(v);
    if (!t) return notATensor(loc, "concat", "each input");
    if (t.getElementType() != first.getElementType() || t.getRank() != rank)
      return emitOptionalError(loc, "'amp.concat' op input #", i + 1, " (", t,
                               ") must have the element type and rank of input #0 (", first, ")");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "'amp.concat' op input #", i + 1, " differs from input #0 in "
                                 "dimension ", d, " (", t.getDimSize(d), " vs ", first.getDimSize(d),
                                 "), which is not the concat axis");
    if (__builtin_add_overflow(shape[axis], t.getDimSize(axis), &shape[axis]))
      return emitOptionalError(loc, "'amp.concat' op the size of the concatenated dimension ", axis,
                               " overflows 64 bits");
  }
  out.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                               SmallVectorImpl<Type>& out) {
  auto lt = tensorOf(a.getLogits()), yt = tensorOf(a.getLabels());
  if (!lt || !yt) return notATensor(loc, "cross_entropy", "logits and labels");
  if (lt.getRank() != 2)
    return emitOptionalError(loc, "'amp.cross_entropy' op logits must be [N, C] (rank 2), got ",
                             lt);
  if (yt.getRank() != 1 || yt.getDimSize(0) != lt.getDimSize(0))
    return emitOptionalError(loc, "'amp.cross_entropy' op labels must be [", lt.getDimSize(0),
                             "] to match logits [N, C], got ", yt);
  double smoothing = inherent(a, a.getLabelSmoothingAttr(), "label_smoothing",
                              odsDefaults<CrossEntropyOp>(ctx).label_smoothing)
                         .getValueAsDouble();
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return emitOptionalError(loc, "'amp.cross_entropy' op label_smoothing must be in [0, 1], got ",
                             smoothing);
  out.push_back(RankedTensorType::get({}, lt.getElementType()));
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                          SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getInput()), tt = tensorOf(a.getTarget());
  if (!it || !tt) return notATensor(loc, "mse_loss", "input and target");
  if (it != tt)
    return emitOptionalError(loc, "'amp.mse_loss' op input and target must have the same type, got ",
                             it, " and ", tt);
  out.push_back(RankedTensorType::get({}, it.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getShape() != out.getShape())
    return emitOpError("shape must not change: ") << shapeStr(in.getShape()) << " -> "
                                                  << shapeStr(out.getShape());
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  // Identity cast.
  if (getInput().getType() == getResult().getType()) return getInput();
  return {};
}

#include "ir/AmpInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "ir/AmpOps.cpp.inc"
