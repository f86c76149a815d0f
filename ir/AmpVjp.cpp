// The VJP rule of every differentiable amp op. Notation: x, w are the forward operands, y the
// forward result, dy its cotangent; "reduce" is reduceToShape (undo numpy broadcasting). Every
// rule builds ops in the operand/result types of the forward op, so a backward op runs in the
// precision of its forward op; constants are rank-0 tensors of that element type.
//
//   neg         dx = -dy                          abs      dx = x<0 ? -dy : (x>0 ? dy : 0)
//   exp         dx = dy*y                         log      dx = dy/x
//   sqrt        dx = dy/(y+y)                     rsqrt    dx = (dy*(y/x))*(-0.5)
//   reciprocal  dx = -(dy*(y*y))                  tanh     dx = dy*(1-y*y)
//   erf         dx = dy*(2/sqrt(pi)*exp(-(x*x)))
//   sigmoid     dx = dy*(y*(1-y))                 relu     dx = x>0 ? dy : 0
//   silu        dx = dy*(s*(1+x*(1-s))), s = sigmoid(x)
//   gelu        dx = amp.gelu_grad(x, dy)
//   add/sub     dx = reduce(dy), dw = reduce(+-dy)
//   mul         dx = reduce(dy*w), dw = reduce(dy*x)
//   div         dx = reduce(dy/w), dw = reduce(-((dy*y)/w))
//   maximum/minimum  dx = reduce(dy*m), dw = reduce(dy*(1-m)), m = 1 where x wins, 1/2 on ties
//   pow         dx = reduce(dy*(w*x^(w-1))), dw = reduce(dy*(y*log x))
//   select      da = reduce(select(c, dy, 0)), db = reduce(select(c, 0, dy)); no cotangent for c
//   matmul      transposed matmuls (4 transpose cases), reduce over broadcast batch dims; a 2-D
//               rhs with a batched lhs gets one flattened [B*M, K]^T x [B*M, N] matmul
//   linear      dx = dy·W (transpose_w) or dy·Wᵀ; dW = dyᵀ·x or xᵀ·dy over the flattened rows;
//               db = reduce_sum(dy) over every dim but the last
//   conv2d      amp.conv2d_grad_input, amp.conv2d_grad_weight, bias: reduce_sum over [0, 2, 3]
//   conv2d_grad_input (transposed conv)  amp.conv2d, amp.conv2d_grad_weight
//   max_pool2d / avg_pool2d   amp.max_pool2d_grad / amp.avg_pool2d_grad
//   reduce_sum  broadcast_to(reshape(dy))        reduce_mean  the same of dy/count
//   reduce_max  dy shared equally by the maxima of each group (torch.amax)
//   softmax     dx = y*(dy - sum(dy*y, axis))     log_softmax  dx = dy - exp(y)*sum(dy, axis)
//   layer_norm / rms_norm     amp.layer_norm_grad / amp.rms_norm_grad
//   batch_norm  amp.batch_norm_grad (d input, d scale, d bias; the running statistics get none)
//   embedding   dtable = amp.embedding_grad(ids, dy)
//   dropout     dx = amp.dropout(dy) with the same rate and seed (the same mask and scale)
//   reshape / transpose / broadcast_to   reshape back / inverse permutation / reduce
//   slice       amp.slice_grad                    concat   slices of dy
//   cross_entropy  amp.cross_entropy_grad         mse_loss dp = ((d*dl)+(d*dl))/n, dt = -dp
//   cast        dx = cast(dy) back to the operand type (f32 params get f32 gradients)
//   constant, compare   no cotangents (no operands; an i1 result)
//
// Each rule is the body of its op's DifferentiableOpInterface::buildVjp (defined at the end): an
// op declared as a model op (ir/AmpOps.td) without a definition here does not link.
#include "ir/AmpVjp.h"

#include <algorithm>

#include "ir/AmpOps.h"
#include "llvm/ADT/StringMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::amp {
namespace {

// The state one rule works with.
struct Vjp {
  OpBuilder& b;
  Operation* op;
  Location loc;
  ArrayRef<Value> dys;
  ArrayRef<bool> need;
  SmallVectorImpl<Value>& grads;

  Value x(unsigned i = 0) const { return op->getOperand(i); }
  Value y(unsigned i = 0) const { return op->getResult(i); }
  Value dy(unsigned i = 0) const { return dys[i]; }
  bool needs(unsigned i) const { return need[i]; }
  void set(unsigned i, Value g) { grads[i] = g; }

  static RankedTensorType type(Value v) { return cast<RankedTensorType>(v.getType()); }
  static Type elem(Value v) { return type(v).getElementType(); }

  // Rank-0 constant of element type `e`.
  Value scalar(double v, Type e) {
    auto t = RankedTensorType::get({}, e);
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(t, ArrayRef<Attribute>{b.getFloatAttr(e, v)}));
  }
  Value scalarLike(double v, Value like) { return scalar(v, elem(like)); }

  Value add(Value a, Value c) { return b.create<AddOp>(loc, a, c); }
  Value sub(Value a, Value c) { return b.create<SubOp>(loc, a, c); }
  Value mul(Value a, Value c) { return b.create<MulOp>(loc, a, c); }
  Value div(Value a, Value c) { return b.create<DivOp>(loc, a, c); }
  Value neg(Value a) { return b.create<NegOp>(loc, a.getType(), a); }
  Value cmp(ComparePredicate p, Value a, Value c) { return b.create<CompareOp>(loc, p, a, c); }
  Value select(Value c, Value t, Value f) { return b.create<SelectOp>(loc, c, t, f); }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto t = RankedTensorType::get(shape, elem(v));
    if (t == v.getType()) return v;
    return b.create<ReshapeOp>(loc, t, v);
  }
  Value reduce(Value g, Value like) { return reduceToShape(b, loc, g, type(like)); }
};

using Rule = LogicalResult (*)(Vjp&);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult vjpNeg(Vjp& v) { v.set(0, v.neg(v.dy())); return success(); }

LogicalResult vjpAbs(Vjp& v) {
  Value zero = v.scalarLike(0.0, v.x());
  Value pos = v.select(v.cmp(ComparePredicate::Gt, v.x(), zero), v.dy(), zero);
  v.set(0, v.select(v.cmp(ComparePredicate::Lt, v.x(), zero), v.neg(v.dy()), pos));
  return success();
}

LogicalResult vjpExp(Vjp& v) { v.set(0, v.mul(v.dy(), v.y())); return success(); }
LogicalResult vjpLog(Vjp& v) { v.set(0, v.div(v.dy(), v.x())); return success(); }
LogicalResult vjpSqrt(Vjp& v) { v.set(0, v.div(v.dy(), v.add(v.y(), v.y()))); return success(); }

LogicalResult vjpRsqrt(Vjp& v) {
  v.set(0, v.mul(v.mul(v.dy(), v.div(v.y(), v.x())), v.scalarLike(-0.5, v.x())));
  return success();
}

LogicalResult vjpReciprocal(Vjp& v) {
  v.set(0, v.neg(v.mul(v.dy(), v.mul(v.y(), v.y()))));
  return success();
}

LogicalResult vjpTanh(Vjp& v) {
  v.set(0, v.mul(v.dy(), v.sub(v.scalarLike(1.0, v.x()), v.mul(v.y(), v.y()))));
  return success();
}

LogicalResult vjpErf(Vjp& v) {
  Value gauss = v.b.create<ExpOp>(v.loc, v.x().getType(), v.neg(v.mul(v.x(), v.x())));
  v.set(0, v.mul(v.dy(), v.mul(v.scalarLike(1.12837916709551257390, v.x()), gauss)));  // 2/sqrt(pi)
  return success();
}

LogicalResult vjpSigmoid(Vjp& v) {
  v.set(0, v.mul(v.dy(), v.mul(v.y(), v.sub(v.scalarLike(1.0, v.x()), v.y()))));
  return success();
}

// The mask reads the output: relu(x) > 0 exactly where x > 0 (NaN in neither), so the input need
// not outlive the forward and a linear layer can absorb the relu (amp-fuse).
LogicalResult vjpRelu(Vjp& v) {
  Value zero = v.scalarLike(0.0, v.y());
  v.set(0, v.select(v.cmp(ComparePredicate::Gt, v.y(), zero), v.dy(), zero));
  return success();
}

LogicalResult vjpSilu(Vjp& v) {
  Value one = v.scalarLike(1.0, v.x());
  Value s = v.b.create<SigmoidOp>(v.loc, v.x().getType(), v.x());
  Value inner = v.add(one, v.mul(v.x(), v.sub(one, s)));
  v.set(0, v.mul(v.dy(), v.mul(s, inner)));
  return success();
}

LogicalResult vjpGelu(Vjp& v) {
  auto gelu = cast<GeluOp>(v.op);
  v.set(0, v.b.create<GeluGradOp>(v.loc, v.x().getType(), v.x(), v.dy(), gelu.getApproximateAttr()));
  return success();
}

LogicalResult vjpAdd(Vjp& v) {
  if (v.needs(0)) v.set(0, v.reduce(v.dy(), v.x(0)));
  if (v.needs(1)) v.set(1, v.reduce(v.dy(), v.x(1)));
  return success();
}

LogicalResult vjpSub(Vjp& v) {
  if (v.needs(0)) v.set(0, v.reduce(v.dy(), v.x(0)));
  if (v.needs(1)) v.set(1, v.neg(v.reduce(v.dy(), v.x(1))));
  return success();
}

LogicalResult vjpMul(Vjp& v) {
  if (v.needs(0)) v.set(0, v.reduce(v.mul(v.dy(), v.x(1)), v.x(0)));
  if (v.needs(1)) v.set(1, v.reduce(v.mul(v.dy(), v.x(0)), v.x(1)));
  return success();
}

LogicalResult vjpDiv(Vjp& v) {
  if (v.needs(0)) v.set(0, v.reduce(v.div(v.dy(), v.x(1)), v.x(0)));
  if (v.needs(1)) v.set(1, v.reduce(v.neg(v.div(v.mul(v.dy(), v.y()), v.x(1))), v.x(1)));
  return success();
}

// maximum (pred gt) / minimum (pred lt): the winner takes dy, ties split it (torch).
LogicalResult vjpMinMax(Vjp& v, ComparePredicate pred) {
  Value one = v.scalarLike(1.0, v.x()), half = v.scalarLike(0.5, v.x()), zero = v.scalarLike(0.0, v.x());
  Value tie = v.select(v.cmp(ComparePredicate::Eq, v.x(0), v.x(1)), half, zero);
  Value m = v.select(v.cmp(pred, v.x(0), v.x(1)), one, tie);  // broadcast shape
  if (v.needs(0)) v.set(0, v.reduce(v.mul(v.dy(), m), v.x(0)));
  if (v.needs(1)) v.set(1, v.reduce(v.mul(v.dy(), v.sub(one, m)), v.x(1)));
  return success();
}
LogicalResult vjpMaximum(Vjp& v) { return vjpMinMax(v, ComparePredicate::Gt); }
LogicalResult vjpMinimum(Vjp& v) { return vjpMinMax(v, ComparePredicate::Lt); }

LogicalResult vjpPow(Vjp& v) {
  Value x = v.x(0), w = v.x(1);
  if (v.needs(0)) {
    Value p = v.b.create<PowOp>(v.loc, x, v.sub(w, v.scalarLike(1.0, w)));
    v.set(0, v.reduce(v.mul(v.dy(), v.mul(w, p)), x));
  }
  if (v.needs(1)) {
    Value logx = v.b.create<LogOp>(v.loc, x.getType(), x);
    v.set(1, v.reduce(v.mul(v.dy(), v.mul(v.y(), logx)), w));
  }
  return success();
}

LogicalResult vjpSelect(Vjp& v) {
  Value zero = v.scalarLike(0.0, v.dy());
  if (v.needs(1)) v.set(1, v.reduce(v.select(v.x(0), v.dy(), zero), v.x(1)));
  if (v.needs(2)) v.set(2, v.reduce(v.select(v.x(0), zero, v.dy()), v.x(2)));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and windows
//===----------------------------------------------------------------------===//

LogicalResult vjpMatmul(Vjp& v) {
  auto mm = cast<MatmulOp>(v.op);
  const bool ta = mm.getTransposeA(), tb = mm.getTransposeB();
  Value a = v.x(0), bm = v.x(1), dc = v.dy();
  auto matmul = [&](Value l, Value r, bool t1, bool t2) -> Value {
    return v.b.create<MatmulOp>(v.loc, l, r, t1, t2);
  };
  if (v.needs(0)) {
    Value g = !ta ? (!tb ? matmul(dc, bm, false, true) : matmul(dc, bm, false, false))
                  : (!tb ? matmul(bm, dc, false, true) : matmul(bm, dc, true, true));
    v.set(0, v.reduce(g, a));
  }
  if (v.needs(1)) {
    auto at = Vjp::type(a), bt = Vjp::type(bm);
    Value g;
    if (bt.getRank() == 2 && at.getRank() > 2 && !ta) {
      // Weight gradient of a batched x @ W: one GEMM over the flattened rows [B*M, K].
      int64_t k = at.getShape().back(), rows = at.getNumElements() / k;
      int64_t n = Vjp::type(dc).getShape().back();
      Value a2 = v.reshape(a, {rows, k}), dc2 = v.reshape(dc, {rows, n});
      g = !tb ? matmul(a2, dc2, true, false) : matmul(dc2, a2, true, false);
    } else {
      g = !ta ? (!tb ? matmul(a, dc, true, false) : matmul(dc, a, true, false))
              : (!tb ? matmul(a, dc, false, false) : matmul(dc, a, true, true));
    }
    v.set(1, v.reduce(g, bm));
  }
  return success();
}

// y = x·Wᵀ + b (transpose_w, W [out, in]) or x·W + b (W [in, out]). dx = dy·W or dy·Wᵀ; dW is one
// GEMM over the flattened rows [R, in] / [R, out] of x and dy: dyᵀ·x or xᵀ·dy; db sums dy over
// every dim but the last.
LogicalResult vjpLinear(Vjp& v) {
  auto lin = cast<LinearOp>(v.op);
  const bool tw = lin.getTransposeW();
  Value x = lin.getInput(), w = lin.getWeight(), dy = v.dy();
  if (lin.getActivation() == LinearActivation::Relu) {  // through the relu first, masked by the output as vjpRelu
    Value zero = v.scalarLike(0.0, v.y());
    dy = v.select(v.cmp(ComparePredicate::Gt, v.y(), zero), dy, zero);
  }
  auto matmul = [&](Value l, Value r, bool t1, bool t2) -> Value {
    return v.b.create<MatmulOp>(v.loc, l, r, t1, t2);
  };
  if (v.needs(0)) v.set(0, matmul(dy, w, false, !tw));
  ArrayRef<int64_t> ys = Vjp::type(dy).getShape();
  if (v.needs(1)) {
    int64_t in = Vjp::type(x).getShape().back(), out = ys.back(), rows = 1;
    for (int64_t d : ys.drop_back()) rows *= d;
    Value x2 = v.reshape(x, {rows, in}), dy2 = v.reshape(dy, {rows, out});
    v.set(1, tw ? matmul(dy2, x2, true, false) : matmul(x2, dy2, true, false));
  }
  if (lin.getBias() && v.needs(2)) {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d + 1 < static_cast<int64_t>(ys.size()); ++d) dims.push_back(d);
    v.set(2, v.b.create<ReduceSumOp>(v.loc, dy, dims, false));
  }
  return success();
}

LogicalResult vjpConv2d(Vjp& v) {
  auto conv = cast<Conv2DOp>(v.op);
  if (v.needs(0))
    v.set(0, v.b.create<Conv2DGradInputOp>(v.loc, conv.getInput().getType(), v.dy(), conv.getWeight(),
                                           conv.getStrideAttr(), conv.getPaddingAttr(),
                                           conv.getDilationAttr(), conv.getGroupsAttr()));
  if (v.needs(1))
    v.set(1, v.b.create<Conv2DGradWeightOp>(v.loc, conv.getWeight().getType(), conv.getInput(), v.dy(),
                                            conv.getStrideAttr(), conv.getPaddingAttr(),
                                            conv.getDilationAttr(), conv.getGroupsAttr()));
  if (conv.getBias() && v.needs(2))
    v.set(2, v.b.create<ReduceSumOp>(v.loc, v.dy(), ArrayRef<int64_t>{0, 2, 3}, false));
  return success();
}

// A transposed convolution is linear in both operands: its input's cotangent is the forward
// convolution of the result's cotangent, and its weight's is conv2d_grad_weight with the roles of
// the two activations swapped (the result's cotangent is the "input" the weight slid over).
LogicalResult vjpConvTranspose2d(Vjp& v) {
  auto conv = cast<Conv2DGradInputOp>(v.op);
  if (v.needs(0))
    v.set(0, v.b.create<Conv2DOp>(v.loc, conv.getGrad().getType(), v.dy(), conv.getWeight(), Value(),
                                  conv.getStrideAttr(), conv.getPaddingAttr(), conv.getDilationAttr(),
                                  conv.getGroupsAttr()));
  if (v.needs(1))
    v.set(1, v.b.create<Conv2DGradWeightOp>(v.loc, conv.getWeight().getType(), v.dy(), conv.getGrad(),
                                            conv.getStrideAttr(), conv.getPaddingAttr(),
                                            conv.getDilationAttr(), conv.getGroupsAttr()));
  return success();
}

LogicalResult vjpMaxPool(Vjp& v) {
  auto pool = cast<MaxPool2DOp>(v.op);
  auto stride = pool.getStrideAttr() ? pool.getStrideAttr() : pool.getKernelAttr();
  v.set(0, v.b.create<MaxPool2DGradOp>(v.loc, v.x().getType(), v.x(), v.dy(), pool.getKernelAttr(),
                                       stride, pool.getPaddingAttr()));
  return success();
}

LogicalResult vjpAvgPool(Vjp& v) {
  auto pool = cast<AvgPool2DOp>(v.op);
  auto stride = pool.getStrideAttr() ? pool.getStrideAttr() : pool.getKernelAttr();
  v.set(0, v.b.create<AvgPool2DGradOp>(v.loc, v.x().getType(), v.dy(), pool.getKernelAttr(), stride,
                                       pool.getPaddingAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, norms
//===----------------------------------------------------------------------===//

// The input shape with the reduced dims set to 1.
SmallVector<int64_t> keptShape(Value x, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(Vjp::type(x).getShape());
  for (int64_t d : dims) shape[d] = 1;
  return shape;
}

Value broadcastTo(Vjp& v, Value g, Value like) {
  if (g.getType() == like.getType()) return g;
  return v.b.create<BroadcastToOp>(v.loc, like.getType(), g);
}

LogicalResult vjpReduceSumMean(Vjp& v) {
  ArrayRef<int64_t> dims = v.op->getAttrOfType<DenseI64ArrayAttr>("dims").asArrayRef();
  Value g = v.dy();
  if (isa<ReduceMeanOp>(v.op)) {
    int64_t count = 1;
    for (int64_t d : dims) count *= Vjp::type(v.x()).getDimSize(d);
    g = v.div(g, v.scalarLike(static_cast<double>(count), g));
  }
  v.set(0, broadcastTo(v, v.reshape(g, keptShape(v.x(), dims)), v.x()));
  return success();
}

LogicalResult vjpReduceMax(Vjp& v) {
  ArrayRef<int64_t> dims = cast<ReduceMaxOp>(v.op).getDims();
  SmallVector<int64_t> kept = keptShape(v.x(), dims);
  Value m = v.reshape(v.y(), kept);
  Value ind = v.select(v.cmp(ComparePredicate::Eq, v.x(), m), v.scalarLike(1.0, v.x()), v.scalarLike(0.0, v.x()));
  Value count = v.b.create<ReduceSumOp>(v.loc, ind, dims, true);
  Value share = v.div(v.reshape(v.dy(), kept), count);
  v.set(0, v.mul(ind, share));
  return success();
}

// One amp.softmax_grad (the mul, reduce_sum, sub and mul of y * (dy - sum(dy * y)) without their
// intermediates). A cotangent that is an exact widening (bf16/f16 -> f32, the cast autocast puts
// after an f32 softmax) is read in its own type, so the f32 copy is not needed either.
LogicalResult vjpSoftmax(Vjp& v) {
  int64_t axis = cast<SoftmaxOp>(v.op).getAxis();
  Value dy = v.dy();
  if (auto widen = dy.getDefiningOp<CastOp>()) {
    Type from = getElementTypeOrSelf(widen.getInput().getType()), to = getElementTypeOrSelf(dy.getType());
    if (to.isF32() && (from.isBF16() || from.isF16())) dy = widen.getInput();
  }
  v.set(0, v.b.create<SoftmaxGradOp>(v.loc, v.y().getType(), v.y(), dy, v.b.getI64IntegerAttr(axis)));
  return success();
}

LogicalResult vjpLogSoftmax(Vjp& v) {
  int64_t axis = cast<LogSoftmaxOp>(v.op).getAxis();
  Value s = v.b.create<ReduceSumOp>(v.loc, v.dy(), ArrayRef<int64_t>{axis}, true);
  Value p = v.b.create<ExpOp>(v.loc, v.y().getType(), v.y());
  v.set(0, v.sub(v.dy(), v.mul(p, s)));
  return success();
}

LogicalResult vjpLayerNorm(Vjp& v) {
  auto ln = cast<LayerNormOp>(v.op);
  auto g = v.b.create<LayerNormGradOp>(v.loc, ln.getInput(), ln.getWeight(), v.dy(),
                                       ln.getNormalizedNdimAttr(), ln.getEpsAttr());
  unsigned next = 1;
  v.set(0, g.getInputGrad());
  if (ln.getWeight()) {
    if (v.needs(next)) v.set(next, g.getWeightGrad());
    ++next;
  }
  if (ln.getBias() && v.needs(next)) v.set(next, g.getBiasGrad());
  return success();
}

// The running statistics are buffers, not trained: they get no cotangent (nor do the new ones).
LogicalResult vjpBatchNorm(Vjp& v) {
  auto bn = cast<BatchNormOp>(v.op);
  auto g = v.b.create<BatchNormGradOp>(v.loc, bn.getInput(), v.dy(), bn.getScale(), bn.getRunningMean(),
                                       bn.getRunningVar(), bn.getEpsilonAttr(), bn.getTrainingAttr());
  v.set(0, g.getInputGrad());
  if (v.needs(1)) v.set(1, g.getScaleGrad());
  if (v.needs(2)) v.set(2, g.getBiasGrad());
  return success();
}

LogicalResult vjpRmsNorm(Vjp& v) {
  auto rms = cast<RmsNormOp>(v.op);
  auto g = v.b.create<RmsNormGradOp>(v.loc, rms.getInput(), rms.getWeight(), v.dy(),
                                     rms.getNormalizedNdimAttr(), rms.getEpsAttr());
  v.set(0, g.getInputGrad());
  if (rms.getWeight() && v.needs(1)) v.set(1, g.getWeightGrad());
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding, dropout, shapes, losses, cast
//===----------------------------------------------------------------------===//

LogicalResult vjpEmbedding(Vjp& v) {
  auto emb = cast<EmbeddingOp>(v.op);
  int64_t rows = emb.getTable().getType().getDimSize(0);
  v.set(0, v.b.create<EmbeddingGradOp>(v.loc, emb.getIds(), v.dy(), static_cast<uint64_t>(rows)));
  return success();
}

LogicalResult vjpDropout(Vjp& v) {
  auto d = cast<DropoutOp>(v.op);
  v.set(0, v.b.create<DropoutOp>(v.loc, v.dy().getType(), v.dy(), d.getRateAttr(), d.getSeedAttr()));
  return success();
}

LogicalResult vjpReshape(Vjp& v) {
  v.set(0, v.b.create<ReshapeOp>(v.loc, v.x().getType(), v.dy()));
  return success();
}

LogicalResult vjpTranspose(Vjp& v) {
  ArrayRef<int64_t> perm = cast<TransposeOp>(v.op).getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm)) inverse[p] = static_cast<int64_t>(i);
  v.set(0, v.b.create<TransposeOp>(v.loc, v.dy(), inverse));
  return success();
}

LogicalResult vjpBroadcastTo(Vjp& v) { v.set(0, v.reduce(v.dy(), v.x())); return success(); }

LogicalResult vjpSlice(Vjp& v) {
  auto s = cast<SliceOp>(v.op);
  SmallVector<int64_t> strides(Vjp::type(v.x()).getRank(), 1);
  if (auto st = s.getStridesAttr()) strides.assign(st.asArrayRef().begin(), st.asArrayRef().end());
  v.set(0, v.b.create<SliceGradOp>(v.loc, v.x().getType(), v.dy(), s.getStarts(), s.getLimits(), strides));
  return success();
}

LogicalResult vjpConcat(Vjp& v) {
  int64_t axis = cast<ConcatOp>(v.op).getAxis();
  ArrayRef<int64_t> out = Vjp::type(v.y()).getShape();
  int64_t offset = 0;
  for (unsigned i = 0; i < v.op->getNumOperands(); ++i) {
    int64_t size = Vjp::type(v.x(i)).getDimSize(axis);
    if (v.needs(i)) {
      SmallVector<int64_t> starts(out.size(), 0), limits(out);
      starts[axis] = offset;
      limits[axis] = offset + size;
      SmallVector<int64_t> strides(out.size(), 1);
      v.set(i, v.b.create<SliceOp>(v.loc, v.dy(), starts, limits, v.b.getDenseI64ArrayAttr(strides)));
    }
    offset += size;
  }
  return success();
}

LogicalResult vjpCrossEntropy(Vjp& v) {
  auto ce = cast<CrossEntropyOp>(v.op);
  v.set(0, v.b.create<CrossEntropyGradOp>(v.loc, ce.getLogits(), ce.getLabels(), v.dy(),
                                          ce.getIgnoreIndexAttr(), ce.getLabelSmoothingAttr()));
  return success();
}

LogicalResult vjpMseLoss(Vjp& v) {
  Value d = v.sub(v.x(0), v.x(1));
  Value s = v.mul(d, v.dy());  // dy is rank 0: broadcasts
  double n = static_cast<double>(Vjp::type(v.x(0)).getNumElements());
  Value g = v.div(v.add(s, s), v.scalarLike(n, d));  // 2 * d * dy / n
  if (v.needs(0)) v.set(0, g);
  if (v.needs(1)) v.set(1, v.neg(g));
  return success();
}

LogicalResult vjpCast(Vjp& v) {
  v.set(0, v.b.create<CastOp>(v.loc, v.x().getType(), v.dy()));
  return success();
}

LogicalResult vjpNone(Vjp&) { return success(); }

}  // namespace

Value reduceToShape(OpBuilder& b, Location loc, Value grad, RankedTensorType target) {
  auto gt = cast<RankedTensorType>(grad.getType());
  if (gt.getShape() == target.getShape()) return grad;
  ArrayRef<int64_t> gs = gt.getShape(), ts = target.getShape();
  int64_t lead = gt.getRank() - target.getRank();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < gt.getRank(); ++d)
    if (d < lead || (ts[d - lead] == 1 && gs[d] != 1)) dims.push_back(d);
  Value r = grad;
  if (!dims.empty()) r = b.create<ReduceSumOp>(loc, grad, dims, false);
  auto want = RankedTensorType::get(ts, gt.getElementType());
  if (r.getType() != want) r = b.create<ReshapeOp>(loc, want, r);
  return r;
}

namespace {

// What every op's buildVjp does around its rule: zero cotangents for unused results, then the
// rule, then no cotangent for operands that were not asked for.
LogicalResult runVjp(Rule rule, OpBuilder& b, Operation* op, ArrayRef<Value> resultGrads, ArrayRef<bool> needGrad,
                     SmallVectorImpl<Value>& operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  SmallVector<Value> dys(resultGrads);
  for (auto [i, r] : llvm::enumerate(op->getResults()))
    if (!dys[i]) {
      auto t = cast<RankedTensorType>(r.getType());
      if (!isa<FloatType>(t.getElementType())) continue;  // an i1 result has no cotangent
      dys[i] = b.create<ConstantOp>(op->getLoc(), DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
    }
  Vjp v{b, op, op->getLoc(), dys, needGrad, operandGrads};
  if (failed(rule(v))) return failure();
  // Integer/i1 operands never get a cotangent; drop anything not asked for.
  for (unsigned i = 0; i < operandGrads.size(); ++i)
    if (!needGrad[i]) operandGrads[i] = Value();
  return success();
}

}  // namespace

#define AMP_VJP(OP, RULE)                                                                              \
  LogicalResult OP::buildVjp(OpBuilder& b, ArrayRef<Value> resultGrads, ArrayRef<bool> needGrad,      \
                             SmallVectorImpl<Value>& operandGrads) {                                  \
    return runVjp(RULE, b, getOperation(), resultGrads, needGrad, operandGrads);                       \
  }
AMP_VJP(NegOp, vjpNeg)
AMP_VJP(AbsOp, vjpAbs)
AMP_VJP(ExpOp, vjpExp)
AMP_VJP(LogOp, vjpLog)
AMP_VJP(SqrtOp, vjpSqrt)
AMP_VJP(RsqrtOp, vjpRsqrt)
AMP_VJP(ReciprocalOp, vjpReciprocal)
AMP_VJP(TanhOp, vjpTanh)
AMP_VJP(ErfOp, vjpErf)
AMP_VJP(SigmoidOp, vjpSigmoid)
AMP_VJP(ReluOp, vjpRelu)
AMP_VJP(SiluOp, vjpSilu)
AMP_VJP(GeluOp, vjpGelu)
AMP_VJP(AddOp, vjpAdd)
AMP_VJP(SubOp, vjpSub)
AMP_VJP(MulOp, vjpMul)
AMP_VJP(DivOp, vjpDiv)
AMP_VJP(MaximumOp, vjpMaximum)
AMP_VJP(MinimumOp, vjpMinimum)
AMP_VJP(PowOp, vjpPow)
AMP_VJP(SelectOp, vjpSelect)
AMP_VJP(MatmulOp, vjpMatmul)
AMP_VJP(Conv2DOp, vjpConv2d)
AMP_VJP(Conv2DGradInputOp, vjpConvTranspose2d)
AMP_VJP(LinearOp, vjpLinear)
AMP_VJP(MaxPool2DOp, vjpMaxPool)
AMP_VJP(AvgPool2DOp, vjpAvgPool)
AMP_VJP(ReduceSumOp, vjpReduceSumMean)
AMP_VJP(ReduceMeanOp, vjpReduceSumMean)
AMP_VJP(ReduceMaxOp, vjpReduceMax)
AMP_VJP(SoftmaxOp, vjpSoftmax)
AMP_VJP(LogSoftmaxOp, vjpLogSoftmax)
AMP_VJP(LayerNormOp, vjpLayerNorm)
AMP_VJP(RmsNormOp, vjpRmsNorm)
AMP_VJP(BatchNormOp, vjpBatchNorm)
AMP_VJP(EmbeddingOp, vjpEmbedding)
AMP_VJP(DropoutOp, vjpDropout)
AMP_VJP(ReshapeOp, vjpReshape)
AMP_VJP(TransposeOp, vjpTranspose)
AMP_VJP(BroadcastToOp, vjpBroadcastTo)
AMP_VJP(SliceOp, vjpSlice)
AMP_VJP(ConcatOp, vjpConcat)
AMP_VJP(CrossEntropyOp, vjpCrossEntropy)
AMP_VJP(MseLossOp, vjpMseLoss)
AMP_VJP(CastOp, vjpCast)
AMP_VJP(ConstantOp, vjpNone)
AMP_VJP(CompareOp, vjpNone)
#undef AMP_VJP

}  // namespace mlir::amp
