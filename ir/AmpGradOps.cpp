// Verifiers and type inference of the gradient ops (ir/AmpGradOps.td). The op classes themselves
// are generated into AmpOps.cpp.inc (AmpGradOps.td is included from AmpOps.td).
#include "ir/AmpOps.h"
#include "ir/InferSupport.h"
#include "ir/ShapeRules.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::amp;

namespace {

RankedTensorType tensorOf(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

LogicalResult checkPair(Operation* op, StringRef attr, ArrayRef<int64_t> v, int64_t minValue) {
  if (v.size() != 2)
    return op->emitOpError() << attr << " must have 2 entries (h, w), got " << v.size();
  for (int64_t x : v)
    if (x < minValue)
      return op->emitOpError() << attr << " entries must be >= " << minValue << ", got "
                               << shapeStr(v);
  return success();
}

// The forward conv2d's output shape for input `in` and weight `w`, or failure with a diagnostic.
FailureOr<SmallVector<int64_t>> convOutputShape(Operation* op, ArrayRef<int64_t> in,
                                                ArrayRef<int64_t> w, ArrayRef<int64_t> stride,
                                                ArrayRef<int64_t> padding,
                                                ArrayRef<int64_t> dilation, int64_t groups) {
  if (failed(checkPair(op, "stride", stride, 1)) || failed(checkPair(op, "padding", padding, 0)) ||
      failed(checkPair(op, "dilation", dilation, 1)))
    return failure();
  if (in.size() != 4 || w.size() != 4)
    return op->emitOpError("input [N,C,H,W] and weight [O,C/groups,KH,KW] must have rank 4");
  if (groups < 1 || in[1] % groups != 0 || w[0] % groups != 0 || w[1] != in[1] / groups)
    return op->emitOpError() << "groups = " << groups << " does not fit input " << shapeStr(in)
                             << " and weight " << shapeStr(w);
  int64_t oh = windowOutputSize(in[2], w[2], stride[0], padding[0], dilation[0]);
  int64_t ow = windowOutputSize(in[3], w[3], stride[1], padding[1], dilation[1]);
  if (oh <= 0 || ow <= 0)
    return op->emitOpError() << "kernel " << shapeStr(w.drop_front(2))
                             << " does not fit the padded input " << shapeStr(in.drop_front(2));
  return SmallVector<int64_t>{in[0], w[0], oh, ow};
}

// The forward pool's output shape for input `in`, or failure with a diagnostic.
FailureOr<SmallVector<int64_t>> poolOutputShape(Operation* op, ArrayRef<int64_t> in,
                                                ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                                                ArrayRef<int64_t> padding) {
  if (in.size() != 4) return op->emitOpError("input must be NCHW (rank 4)");
  if (failed(checkPair(op, "kernel", kernel, 1)) || failed(checkPair(op, "stride", stride, 1)) ||
      failed(checkPair(op, "padding", padding, 0)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (padding[i] > kernel[i] / 2)  // padding * 2 > kernel, without overflow
      return op->emitOpError() << "padding " << shapeStr(padding)
                               << " must be at most half the kernel " << shapeStr(kernel);
  int64_t oh = windowOutputSize(in[2], kernel[0], stride[0], padding[0], 1);
  int64_t ow = windowOutputSize(in[3], kernel[1], stride[1], padding[1], 1);
  if (oh <= 0 || ow <= 0)
    return op->emitOpError() << "kernel " << shapeStr(kernel) << " does not fit the padded input "
                             << shapeStr(in.drop_front(2));
  return SmallVector<int64_t>{in[0], in[1], oh, ow};
}

LogicalResult expectSameElement(Operation* op, StringRef what, RankedTensorType a,
                                RankedTensorType b) {
  if (a.getElementType() != b.getElementType())
    return op->emitOpError() << what << " must have the same element type, got "
                             << a.getElementType() << " and " << b.getElementType();
  return success();
}

LogicalResult expectGradShape(Operation* op, ArrayRef<int64_t> forwardResult, RankedTensorType grad) {
  if (grad.getShape() != forwardResult)
    return op->emitOpError() << "grad has shape " << shapeStr(grad.getShape())
                             << " but the forward op's result has shape "
                             << shapeStr(forwardResult);
  return success();
}

// Normalised shape and element type for the norm gradients; failure with a diagnostic.
LogicalResult inferNormGrad(StringRef op, std::optional<Location> loc, Value input, Value weight,
                            Value grad, IntegerAttr ndimAttr, unsigned numResults,
                            SmallVectorImpl<Type>& out) {
  auto it = tensorOf(input), gt = tensorOf(grad);
  if (!it || !gt)
    return emitOptionalError(loc, "'amp.", op, "' op input and grad must be ranked tensors");
  if (it != gt)
    return emitOptionalError(loc, "'amp.", op, "' op grad must have the input's type ", it,
                             ", got ", gt);
  int64_t ndim = ndimAttr.getInt();
  if (ndim < 1 || ndim > it.getRank())
    return emitOptionalError(loc, "'amp.", op, "' op normalized_ndim must be in [1, ",
                             it.getRank(), "], got ", ndim);
  auto normalized = RankedTensorType::get(it.getShape().take_back(ndim), it.getElementType());
  if (weight && tensorOf(weight) != normalized)
    return emitOptionalError(loc, "'amp.", op, "' op weight must be ", normalized, ", got ",
                             weight.getType());
  out.push_back(it);
  for (unsigned i = 1; i < numResults; ++i) out.push_back(normalized);
  return success();
}

}  // namespace

//===----------------------------------------------------------------------===//
// conv2d / pooling gradients
//===----------------------------------------------------------------------===//

LogicalResult Conv2DGradInputOp::verify() {
  auto dy = getGrad().getType(), w = getWeight().getType(), dx = getResult().getType();
  if (failed(expectSameElement(*this, "grad and weight", dy, w)) ||
      failed(expectSameElement(*this, "grad and result", dy, dx)))
    return failure();
  auto shape = convOutputShape(*this, dx.getShape(), w.getShape(), getStride(), getPadding(),
                               getDilation(), getGroups());
  if (failed(shape)) return failure();
  return expectGradShape(*this, *shape, dy);
}

LogicalResult Conv2DGradWeightOp::verify() {
  auto x = getInput().getType(), dy = getGrad().getType(), dw = getResult().getType();
  if (failed(expectSameElement(*this, "input and grad", x, dy)) ||
      failed(expectSameElement(*this, "input and result", x, dw)))
    return failure();
  auto shape = convOutputShape(*this, x.getShape(), dw.getShape(), getStride(), getPadding(),
                               getDilation(), getGroups());
  if (failed(shape)) return failure();
  return expectGradShape(*this, *shape, dy);
}

LogicalResult MaxPool2DGradOp::verify() {
  auto x = getInput().getType(), dy = getGrad().getType();
  if (failed(expectSameElement(*this, "input and grad", x, dy))) return failure();
  auto shape = poolOutputShape(*this, x.getShape(), getKernel(), getStride(), getPadding());
  if (failed(shape)) return failure();
  return expectGradShape(*this, *shape, dy);
}

LogicalResult AvgPool2DGradOp::verify() {
  auto dy = getGrad().getType(), dx = getResult().getType();
  if (failed(expectSameElement(*this, "grad and result", dy, dx))) return failure();
  auto shape = poolOutputShape(*this, dx.getShape(), getKernel(), getStride(), getPadding());
  if (failed(shape)) return failure();
  return expectGradShape(*this, *shape, dy);
}

//===----------------------------------------------------------------------===//
// norm gradients
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc,
                                                Adaptor a, SmallVectorImpl<Type>& out) {
  auto ndim = inherent(a, a.getNormalizedNdimAttr(), "normalized_ndim",
                       odsDefaults<LayerNormGradOp>(ctx).normalized_ndim);
  return inferNormGrad("layer_norm_grad", loc, a.getInput(), a.getWeight(), a.getGrad(), ndim, 3, out);
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc, Adaptor a,
                                              SmallVectorImpl<Type>& out) {
  auto ndim = inherent(a, a.getNormalizedNdimAttr(), "normalized_ndim",
                       odsDefaults<RmsNormGradOp>(ctx).normalized_ndim);
  return inferNormGrad("rms_norm_grad", loc, a.getInput(), a.getWeight(), a.getGrad(), ndim, 2, out);
}

LogicalResult BatchNormGradOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc,
                                                Adaptor a, SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getInput());
  if (!it)
    return emitOptionalError(loc, "'amp.batch_norm_grad' op input must be a ranked tensor");
  if (it.getRank() < 2)
    return emitOptionalError(loc, "'amp.batch_norm_grad' op input must be [N, C, ...] (rank >= 2), got ", it);
  auto channels = RankedTensorType::get({it.getDimSize(1)}, Float32Type::get(ctx));
  out.push_back(it);
  out.push_back(channels);
  out.push_back(channels);
  return success();
}

LogicalResult BatchNormGradOp::verify() {
  auto channels = RankedTensorType::get({getInput().getType().getDimSize(1)}, Float32Type::get(getContext()));
  if (getScale().getType() != channels)
    return emitOpError("scale and running statistics must be ") << channels << ", got " << getScale().getType();
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError("epsilon must be positive, got ") << getEpsilon().convertToDouble();
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  auto y = getOutput().getType(), g = getGrad().getType();
  if (y.getShape() != g.getShape())
    return emitOpError("output and grad must have the same shape, got ") << y << " and " << g;
  const int64_t axis = getAxisAttr().getInt();  // signed: getAxis() reads it as unsigned
  if (axis < 0 || axis >= y.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank " << y.getRank();
  // grad is widened exactly: its type is the output's, or bf16/f16 under an f32 output.
  Type ye = y.getElementType(), ge = g.getElementType();
  if (ge != ye && !(ye.isF32() && (ge.isBF16() || ge.isF16())))
    return emitOpError("grad's element type must be the output's, or bf16/f16 under an f32 output, got ")
           << g << " for " << y;
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError("eps must be positive, got ") << getEps().convertToDouble();
  return success();
}

LogicalResult RmsNormGradOp::verify() {
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError("eps must be positive, got ") << getEps().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// embedding_grad, cross_entropy_grad, slice_grad
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc,
                                                Adaptor a, SmallVectorImpl<Type>& out) {
  auto it = tensorOf(a.getIds()), gt = tensorOf(a.getGrad());
  if (!it || !gt)
    return emitOptionalError(loc, "'amp.embedding_grad' op ids and grad must be ranked tensors");
  auto v = inherent(a, a.getNumEmbeddingsAttr(), "num_embeddings");
  if (!v) return emitOptionalError(loc, "'amp.embedding_grad' op requires attribute 'num_embeddings'");
  if (v.getInt() < 1)
    return emitOptionalError(loc, "'amp.embedding_grad' op num_embeddings must be >= 1, got ",
                             v.getInt());
  if (gt.getRank() != it.getRank() + 1 || gt.getShape().drop_back() != it.getShape())
    return emitOptionalError(loc, "'amp.embedding_grad' op grad must have shape ids + [D] = ",
                             shapeStr(it.getShape()), " + [D], got ", gt);
  out.push_back(RankedTensorType::get({v.getInt(), gt.getShape().back()}, gt.getElementType()));
  return success();
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc,
                                                   Adaptor a, SmallVectorImpl<Type>& out) {
  auto lt = tensorOf(a.getLogits()), yt = tensorOf(a.getLabels()), gt = tensorOf(a.getGrad());
  if (!lt || !yt || !gt)
    return emitOptionalError(loc, "'amp.cross_entropy_grad' op operands must be ranked tensors");
  if (lt.getRank() != 2 || yt.getRank() != 1 || yt.getDimSize(0) != lt.getDimSize(0))
    return emitOptionalError(loc, "'amp.cross_entropy_grad' op needs logits [N, C] and labels [N], got ",
                             lt, " and ", yt);
  if (gt.getRank() != 0 || gt.getElementType() != lt.getElementType())
    return emitOptionalError(loc, "'amp.cross_entropy_grad' op grad must be a rank-0 tensor of ",
                             lt.getElementType(), " (the loss type), got ", gt);
  out.push_back(lt);
  return success();
}

LogicalResult SliceGradOp::verify() {
  auto dy = getGrad().getType(), dx = getResult().getType();
  if (failed(expectSameElement(*this, "grad and result", dy, dx))) return failure();
  ArrayRef<int64_t> starts = getStarts(), limits = getLimits(), strides = getStrides();
  int64_t rank = dx.getRank();
  if (static_cast<int64_t>(starts.size()) != rank || static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOpError("starts, limits and strides need one entry per result dimension (rank ")
           << rank << ")";
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > dx.getDimSize(d) || strides[d] < 1)
      return emitOpError("dimension ") << d << ": need 0 <= start (" << starts[d] << ") <= limit ("
                                       << limits[d] << ") <= size (" << dx.getDimSize(d)
                                       << ") and stride (" << strides[d] << ") >= 1";
    shape.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
  }
  return expectGradShape(*this, shape, dy);
}
