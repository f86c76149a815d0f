// LSTM, GRU and RNN, unrolled at import over their static sequence length (docs/onnx-import.md,
// "Recurrent layers"). Per direction, the input projection of every step is one GEMM
// ([T*B, I] x W^T + the input bias); each step then adds the hidden projection (H R^T + the
// recurrent bias) and applies the gates with amp's elementwise ops, which amp-fuse merges. The
// gradient is amp-autodiff's through the unrolled graph: backpropagation through time.
// Gate orders are ONNX's (LSTM i, o, f, c; GRU z, r, h), which is what torch.onnx.export writes.
#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::amp::onnx_import {
namespace {

enum class Cell { Lstm, Gru, Rnn };

int gatesOf(Cell cell) { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }

// Rows [begin, end) of dim `dim` of x.
FailureOr<Value> sliceDim(GraphTranslator& t, Value x, int64_t dim, int64_t begin, int64_t end) {
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  Shape starts(shape.size(), 0), limits(shape.begin(), shape.end());
  starts[dim] = begin;
  limits[dim] = end;
  return build<SliceOp>(t, x, {i64Array(t, "starts", starts), i64Array(t, "limits", limits)});
}

// x[index] along dim 0, without that dim.
FailureOr<Value> take(GraphTranslator& t, Value x, int64_t index) {
  auto s = sliceDim(t, x, 0, index, index + 1);
  if (failed(s)) return failure();
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  return reshape(t, *s, Shape(shape.begin() + 1, shape.end()));
}

template <typename OpT>
FailureOr<Value> apply(GraphTranslator& t, FailureOr<Value> x) {
  if (failed(x)) return failure();
  return build<OpT>(t, *x);
}

template <typename OpT>
FailureOr<Value> combine(GraphTranslator& t, FailureOr<Value> a, FailureOr<Value> b) {
  if (failed(a) || failed(b)) return failure();
  return build<OpT>(t, {*a, *b});
}

struct Direction {
  Value w, r;            // [G*H, I], [G*H, H]
  Value inputBias;       // [G*H] or null: added to the input projection
  Value recurrentBias;   // [G*H] or null: added to the hidden projection
  Value h0, c0;          // [B, H]
};

// The activations attribute, where given, must be ONNX's defaults (what PyTorch's layers compute):
// per direction LSTM Sigmoid, Tanh, Tanh; GRU Sigmoid, Tanh; RNN Tanh.
LogicalResult checkActivations(GraphTranslator& t, Cell cell, int64_t dirs) {
  const onnx::AttributeProto* a = t.attribute("activations");
  if (!a) return success();
  std::vector<std::string> want = cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                  : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"};
  std::vector<std::string> got(a->strings().begin(), a->strings().end());
  for (int64_t d = 0; d < dirs; ++d)
    for (size_t k = 0; k < want.size(); ++k)
      if (d * want.size() + k >= got.size() || got[d * want.size() + k] != want[k])
        return t.refuse() << "activations other than " << llvm::join(want, ", ")
                          << " per direction are not supported";
  if (got.size() != dirs * want.size()) return t.refuse() << "activations must list " << dirs * want.size() << " functions";
  return success();
}

LogicalResult convertRecurrent(GraphTranslator& t, Cell cell) {
  const char* name = cell == Cell::Lstm ? "LSTM" : cell == Cell::Gru ? "GRU" : "RNN";
  if (cell == Cell::Lstm) {
    if (failed(t.onlyAttributes({"activations", "direction", "hidden_size", "layout", "input_forget"}))) return failure();
    if (t.intAttribute("input_forget", 0) != 0) return t.refuse() << "input_forget=1 is not supported";
    if (t.hasInput(7)) return t.refuse() << "peephole weights (input P) are not supported";
  } else if (cell == Cell::Gru) {
    if (failed(t.onlyAttributes({"activations", "direction", "hidden_size", "layout", "linear_before_reset"})))
      return failure();
  } else if (failed(t.onlyAttributes({"activations", "direction", "hidden_size", "layout"}))) {
    return failure();
  }
  // PyTorch's GRU (linear_before_reset=1, what torch.onnx.export writes) applies the reset gate to
  // the recurrent product; ONNX's default (0, Keras' GRU) applies it to the state before its product.
  const bool resetAfterProduct = t.intAttribute("linear_before_reset", 0) != 0;
  const std::string direction = t.stringAttribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return t.refuse() << "direction = " << direction << " is not forward, reverse or bidirectional";
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (failed(checkActivations(t, cell, dirs))) return failure();
  const bool batchFirst = t.intAttribute("layout", 0) == 1;
  auto xIn = floatInput(t, 0);
  auto w = failed(xIn) ? xIn : floatInput(t, 1);
  auto r = failed(w) ? w : floatInput(t, 2);
  if (failed(r)) return failure();
  auto xType = cast<RankedTensorType>(xIn->getType());
  if (xType.getRank() != 3) return t.refuse() << "X must be [seq, batch, input] (or [batch, seq, input]); it is " << xType;
  Value x = *xIn;
  if (batchFirst) {
    auto swapped = build<TransposeOp>(t, x, {i64Array(t, "permutation", {1, 0, 2})});
    if (failed(swapped)) return failure();
    x = *swapped;
  }
  const auto xs = cast<RankedTensorType>(x.getType()).getShape();
  const int64_t steps = xs[0], batch = xs[1], inputSize = xs[2];
  const int64_t gates = gatesOf(cell);
  const int64_t hidden = t.intAttribute("hidden_size", 0);
  if (hidden <= 0) return t.refuse() << "hidden_size must be given and positive";
  auto wShape = cast<RankedTensorType>(w->getType()).getShape();
  auto rShape = cast<RankedTensorType>(r->getType()).getShape();
  if (wShape != llvm::ArrayRef<int64_t>({dirs, gates * hidden, inputSize}) ||
      rShape != llvm::ArrayRef<int64_t>({dirs, gates * hidden, hidden}))
    return t.refuse() << "W and R must be [" << dirs << ", " << gates * hidden << ", " << inputSize << "] and ["
                      << dirs << ", " << gates * hidden << ", " << hidden << "]";
  if (t.hasInput(4)) {
    const HostTensor* lens = t.constantInput(4);
    if (!lens || llvm::any_of(lens->ints, [&](int64_t n) { return n != steps; }))
      return t.refuse() << "sequence_lens must be known and equal the sequence length " << steps
                        << " for every batch entry (padded sequences are not supported)";
  }
  const Type element = xType.getElementType();
  auto stateInput = [&](unsigned i, int64_t d) -> FailureOr<Value> {
    if (!t.hasInput(i)) {
      auto zeros = RankedTensorType::get({batch, hidden}, element);
      return t.create<ConstantOp>(zeros, DenseElementsAttr::get(zeros, llvm::APFloat::getZero(
                                                                           cast<FloatType>(element).getFloatSemantics())));
    }
    auto s = floatInput(t, i);
    if (failed(s)) return failure();
    if (cast<RankedTensorType>(s->getType()).getShape() != llvm::ArrayRef<int64_t>({dirs, batch, hidden}))
      return t.refuse() << "input " << i << " must be [" << dirs << ", " << batch << ", " << hidden << "]", failure();
    return take(t, *s, d);
  };

  std::vector<Value> ys(dirs), lastH(dirs), lastC(dirs);
  for (int64_t d = 0; d < dirs; ++d) {
    Direction p;
    auto wd = take(t, *w, d), rd = failed(wd) ? wd : take(t, *r, d);
    if (failed(rd)) return failure();
    p.w = *wd;
    p.r = *rd;
    if (t.hasInput(3)) {
      auto b = floatInput(t, 3);
      if (failed(b)) return failure();
      if (cast<RankedTensorType>(b->getType()).getShape() != llvm::ArrayRef<int64_t>({dirs, 2 * gates * hidden}))
        return t.refuse() << "B must be [" << dirs << ", " << 2 * gates * hidden << "]";
      auto bd = take(t, *b, d);
      auto wb = failed(bd) ? bd : sliceDim(t, *bd, 0, 0, gates * hidden);
      auto rb = failed(wb) ? wb : sliceDim(t, *bd, 0, gates * hidden, 2 * gates * hidden);
      if (failed(rb)) return failure();
      // The GRU's candidate gate adds its recurrent bias inside the reset product; every other
      // bias is a sum added once.
      if (cell == Cell::Gru) {
        p.inputBias = *wb;
        p.recurrentBias = *rb;
      } else {
        auto sum = build<AddOp>(t, {*wb, *rb});
        if (failed(sum)) return failure();
        p.inputBias = *sum;
      }
    }
    auto h0 = stateInput(5, d);
    if (failed(h0)) return failure();
    p.h0 = *h0;
    if (cell == Cell::Lstm) {
      auto c0 = stateInput(6, d);
      if (failed(c0)) return failure();
      p.c0 = *c0;
    }
    // Every step's input projection in one GEMM: [T*B, I] x W^T (+ bias) -> [T, B, G*H].
    llvm::SmallVector<Value> projOperands = {reshape(t, x, {steps * batch, inputSize}), p.w};
    if (p.inputBias) projOperands.push_back(p.inputBias);
    auto proj = build<LinearOp>(t, projOperands, {named(t, "transpose_w", t.builder().getBoolAttr(true))});
    if (failed(proj)) return failure();
    Value xProj = reshape(t, *proj, {steps, batch, gates * hidden});
    Value h = p.h0, c = p.c0;
    std::vector<Value> outputs(steps);
    auto gate = [&](Value v, int64_t k) { return sliceDim(t, v, 1, k * hidden, (k + 1) * hidden); };
    // linear_before_reset=0: the step's recurrent product covers z and r; the candidate's is
    // (r * h) R_h^T + Rb_h, a product of its own.
    Value candidateR, candidateBias;
    if (cell == Cell::Gru && !resetAfterProduct) {
      auto rh = sliceDim(t, p.r, 0, 2 * hidden, 3 * hidden), rzr = failed(rh) ? rh : sliceDim(t, p.r, 0, 0, 2 * hidden);
      if (failed(rzr)) return failure();
      candidateR = *rh;
      p.r = *rzr;
      if (p.recurrentBias) {
        auto bh = sliceDim(t, p.recurrentBias, 0, 2 * hidden, 3 * hidden);
        auto bzr = failed(bh) ? bh : sliceDim(t, p.recurrentBias, 0, 0, 2 * hidden);
        if (failed(bzr)) return failure();
        candidateBias = *bh;
        p.recurrentBias = *bzr;
      }
    }
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t step = d == 1 || direction == "reverse" ? steps - 1 - s : s;
      auto xt = take(t, xProj, step);
      llvm::SmallVector<Value> hOperands = {h, p.r};
      if (p.recurrentBias) hOperands.push_back(p.recurrentBias);
      auto ht = failed(xt) ? xt : build<LinearOp>(t, hOperands, {named(t, "transpose_w", t.builder().getBoolAttr(true))});
      if (failed(ht)) return failure();
      FailureOr<Value> next = failure();
      if (cell == Cell::Lstm) {
        auto all = build<AddOp>(t, {*xt, *ht});
        if (failed(all)) return failure();
        auto i = apply<SigmoidOp>(t, gate(*all, 0)), o = apply<SigmoidOp>(t, gate(*all, 1));
        auto f = apply<SigmoidOp>(t, gate(*all, 2)), g = apply<TanhOp>(t, gate(*all, 3));
        auto cNext = combine<AddOp>(t, combine<MulOp>(t, f, c), combine<MulOp>(t, i, g));
        if (failed(cNext)) return failure();
        c = *cNext;
        next = combine<MulOp>(t, o, apply<TanhOp>(t, FailureOr<Value>(c)));
      } else if (cell == Cell::Gru) {
        auto z = apply<SigmoidOp>(t, combine<AddOp>(t, gate(*xt, 0), gate(*ht, 0)));
        auto rg = apply<SigmoidOp>(t, combine<AddOp>(t, gate(*xt, 1), gate(*ht, 1)));
        FailureOr<Value> recurrent = failure();
        if (resetAfterProduct) {
          recurrent = combine<MulOp>(t, rg, gate(*ht, 2));
        } else {
          auto reset = combine<MulOp>(t, rg, FailureOr<Value>(h));
          if (failed(reset)) return failure();
          llvm::SmallVector<Value> operands = {*reset, candidateR};
          if (candidateBias) operands.push_back(candidateBias);
          recurrent = build<LinearOp>(t, operands, {named(t, "transpose_w", t.builder().getBoolAttr(true))});
        }
        auto n = apply<TanhOp>(t, combine<AddOp>(t, gate(*xt, 2), recurrent));
        // h' = (1 - z) * n + z * h, ONNX's and PyTorch's formula.
        auto one = scalarConstant(t, 1.0, element);
        next = combine<AddOp>(t, combine<MulOp>(t, combine<SubOp>(t, FailureOr<Value>(one), z), n),
                              combine<MulOp>(t, z, FailureOr<Value>(h)));
      } else {
        next = apply<TanhOp>(t, build<AddOp>(t, {*xt, *ht}));
      }
      if (failed(next)) return failure();
      h = *next;
      outputs[step] = reshape(t, h, {1, 1, batch, hidden});
    }
    auto y = build<ConcatOp>(t, outputs, {i64(t, "axis", 0)});
    if (failed(y)) return failure();
    ys[d] = *y;
    lastH[d] = reshape(t, h, {1, batch, hidden});
    if (cell == Cell::Lstm) lastC[d] = reshape(t, c, {1, batch, hidden});
  }
  auto joined = [&](const std::vector<Value>& parts, int64_t axis) -> FailureOr<Value> {
    if (parts.size() == 1) return parts[0];
    return build<ConcatOp>(t, parts, {i64(t, "axis", axis)});
  };
  auto y = joined(ys, 1);  // [T, D, B, H]
  if (failed(y)) return failure();
  Value yOut = *y;
  if (batchFirst) {  // layout 1: Y is [B, T, D, H]
    auto perm = build<TransposeOp>(t, yOut, {i64Array(t, "permutation", {2, 0, 1, 3})});
    if (failed(perm)) return failure();
    yOut = *perm;
  }
  if (t.outputUsed(0) && failed(t.setOutput(0, yOut))) return failure();
  for (unsigned out = 1; out < t.numOutputs(); ++out) {
    if (!t.outputUsed(out)) continue;
    if (out == 2 && cell != Cell::Lstm) return t.refuse() << name << " has no output " << out;
    auto state = joined(out == 1 ? lastH : lastC, 0);  // [D, B, H]
    if (failed(state)) return failure();
    Value v = *state;
    if (batchFirst) {
      auto perm = build<TransposeOp>(t, v, {i64Array(t, "permutation", {1, 0, 2})});
      if (failed(perm)) return failure();
      v = *perm;
    }
    if (failed(t.setOutput(out, v))) return failure();
  }
  return success();
}

}  // namespace

void addRecurrentConverters(llvm::StringMap<Converter>& converters) {
  converters["LSTM"] = [](GraphTranslator& t) { return convertRecurrent(t, Cell::Lstm); };
  converters["GRU"] = [](GraphTranslator& t) { return convertRecurrent(t, Cell::Gru); };
  converters["RNN"] = [](GraphTranslator& t) { return convertRecurrent(t, Cell::Rnn); };
}

}  // namespace mlir::amp::onnx_import
