// Conv, ConvTranspose, MaxPool and AveragePool: the window ops. amp.conv2d and the amp pools take
// rank-4 NCHW inputs padded alike on both sides of each spatial dim; this file maps ONNX's other
// forms onto them exactly (docs/onnx-import.md, "Windows"):
// - rank 3 ([N, C, L]: Conv1d, MaxPool1d, AvgPool1d) runs as rank 4 with H = 1, reshaped back;
// - asymmetric pads, auto_pad SAME_UPPER/SAME_LOWER and MaxPool's ceil_mode become the symmetric
//   part in the op plus constant slabs concatenated on the longer side: -inf for max, which never
//   wins a window, and zeros for a convolution and for an average with count_include_pad=1, which
//   counts them as ONNX counts its padding;
// - ConvTranspose is amp.conv2d_grad_input (the input-gradient of the convolution it transposes,
//   ONNX's weight [C_in, C_out/group, kH, kW] is that convolution's [O, C/group, KH, KW]) with the
//   symmetric part of its padding; an asymmetric rest is a slice of the result.
#include <algorithm>
#include <limits>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "import/onnx/HostTensor.h"
#include "ir/AmpOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {
namespace {

enum class WindowKind { Conv, MaxPool, AveragePool };

// A node's window over the rank-4 view of its input: every list has the two entries (H, W) of
// amp's ops; a 1-D node's lists are lifted with H = 1 (kernel, stride and dilation 1, no padding).
struct Window {
  Value x;  // rank 4
  bool oneD = false;
  Shape kernel, strides, dilations, padBegin, padEnd;
};

std::string listText(llvm::ArrayRef<int64_t> v) {
  return "[" + llvm::join(llvm::map_range(v, [](int64_t e) { return std::to_string(e); }), ", ") + "]";
}

// The input as rank 4, refusing ranks amp's window ops have no form for.
FailureOr<Value> windowInput(GraphTranslator& t, bool& oneD) {
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  oneD = type.getRank() == 3;
  if (type.getRank() != 3 && type.getRank() != 4)
    return t.refuse() << "only 1-D and 2-D windows ([N, C, L] or [N, C, H, W] inputs) are supported; this input is "
                      << type,
           failure();
  if (!oneD) return x;
  auto shape = type.getShape();
  return reshape(t, *x, {shape[0], shape[1], 1, shape[2]});
}

// An attribute list of `spatial` entries (default `fallback` each), lifted to two.
FailureOr<Shape> spatialList(GraphTranslator& t, llvm::StringRef name, int64_t spatial, int64_t fallback, int64_t lift) {
  Shape v = t.intsAttribute(name).value_or(Shape(spatial, fallback));
  if (static_cast<int64_t>(v.size()) != spatial)
    return t.refuse() << name << " = " << listText(v) << " must have " << spatial << " entries (one per spatial dim)",
           failure();
  if (spatial == 1) v.insert(v.begin(), lift);
  return v;
}

// Resolves pads (explicit, VALID, SAME_UPPER or SAME_LOWER) into padBegin/padEnd.
LogicalResult resolvePads(GraphTranslator& t, Window& w, int64_t spatial) {
  const std::string autoPad = t.stringAttribute("auto_pad", "NOTSET");
  const auto in = cast<RankedTensorType>(w.x.getType()).getShape();
  w.padBegin.assign(2, 0);
  w.padEnd.assign(2, 0);
  if (autoPad == "NOTSET") {
    Shape pads = t.intsAttribute("pads").value_or(Shape(2 * spatial, 0));
    if (static_cast<int64_t>(pads.size()) != 2 * spatial)
      return t.refuse() << "pads = " << listText(pads) << " must have " << 2 * spatial << " entries";
    for (int64_t d = 0; d < spatial; ++d) {
      w.padBegin[2 - spatial + d] = pads[d];
      w.padEnd[2 - spatial + d] = pads[d + spatial];
    }
    return success();
  }
  if (autoPad == "VALID") return success();
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return t.refuse() << "auto_pad = " << autoPad << " is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER";
  if (t.attribute("pads")) return t.refuse() << "pads and auto_pad = " << autoPad << " are given together";
  // ONNX: the output is ceil(in / stride); the padding that needs is split evenly, the odd one at
  // the end (SAME_UPPER) or the beginning (SAME_LOWER).
  for (int d = 0; d < 2; ++d) {
    const int64_t size = in[2 + d], s = w.strides[d], extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const int64_t out = (size + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - size);
    const int64_t small = total / 2, large = total - small;
    w.padBegin[d] = autoPad == "SAME_UPPER" ? small : large;
    w.padEnd[d] = autoPad == "SAME_UPPER" ? large : small;
  }
  return success();
}

// ceil_mode: the output rounds up, as PyTorch and ONNX define it (a last window must start inside
// the input or its leading padding); the windows past the input's end are padding on the end.
// Returns the padding to add at the end of each dim.
Shape ceilModeExtra(const Window& w) {
  const auto in = cast<RankedTensorType>(w.x.getType()).getShape();
  Shape extra(2, 0);
  for (int d = 0; d < 2; ++d) {
    const int64_t s = w.strides[d], extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const int64_t span = in[2 + d] + w.padBegin[d] + w.padEnd[d] - extent;
    if (span < 0) continue;  // no window at all: the op's own shape check refuses it
    int64_t out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= in[2 + d] + w.padBegin[d]) --out;
    extra[d] = std::max<int64_t>(0, (out - 1) * s + extent - (in[2 + d] + w.padBegin[d] + w.padEnd[d]));
  }
  return extra;
}

// A slab of `value` with x's shape except `size` along dim `dim`.
Value slab(GraphTranslator& t, Value x, int64_t dim, int64_t size, bool negativeInfinity) {
  auto type = cast<RankedTensorType>(x.getType());
  Shape shape(type.getShape().begin(), type.getShape().end());
  shape[dim] = size;
  auto element = cast<FloatType>(type.getElementType());
  const llvm::APFloat value = negativeInfinity ? llvm::APFloat::getInf(element.getFloatSemantics(), /*Negative=*/true)
                                               : llvm::APFloat::getZero(element.getFloatSemantics());
  auto slabType = RankedTensorType::get(shape, element);
  return t.create<ConstantOp>(slabType, DenseElementsAttr::get(slabType, value));
}

// Moves the asymmetric part of the padding, and any beyond `keepAtMost` per side (amp's pools take at
// most half the kernel), into slabs around x: afterwards padBegin == padEnd <= keepAtMost.
FailureOr<Value> padAsymmetric(GraphTranslator& t, Window& w, bool negativeInfinity,
                               Shape keepAtMost = {std::numeric_limits<int64_t>::max(),
                                                   std::numeric_limits<int64_t>::max()}) {
  Value x = w.x;
  for (int d = 0; d < 2; ++d) {
    const int64_t common = std::min({w.padBegin[d], w.padEnd[d], keepAtMost[d]});
    const int64_t before = w.padBegin[d] - common, after = w.padEnd[d] - common;
    if (before == 0 && after == 0) continue;
    llvm::SmallVector<Value, 3> parts;
    if (before) parts.push_back(slab(t, x, 2 + d, before, negativeInfinity));
    parts.push_back(x);
    if (after) parts.push_back(slab(t, x, 2 + d, after, negativeInfinity));
    auto joined = build<ConcatOp>(t, parts, {i64(t, "axis", 2 + d)});
    if (failed(joined)) return failure();
    x = *joined;
    w.padBegin[d] = w.padEnd[d] = common;
  }
  return x;
}

// The result of a 1-D node, back to rank 3.
Value fromWindowRank(GraphTranslator& t, Value y, bool oneD) {
  if (!oneD) return y;
  auto shape = cast<RankedTensorType>(y.getType()).getShape();
  return reshape(t, y, {shape[0], shape[1], shape[3]});
}

// A convolution node's input (as rank 4, into w.x), its weight (rank 4: a 1-D weight gets KH = 1)
// and its kernel, strides and dilations; `layout` names the weight's dims in refusals.
FailureOr<Value> convWindow(GraphTranslator& t, Window& w, llvm::StringRef layout) {
  auto x = windowInput(t, w.oneD);
  auto weight = failed(x) ? x : floatInput(t, 1);
  if (failed(weight)) return failure();
  w.x = *x;
  const int64_t spatial = w.oneD ? 1 : 2;
  auto wType = cast<RankedTensorType>(weight->getType());
  if (wType.getRank() != spatial + 2)
    return t.refuse() << "the weight must be [" << layout << ", " << (w.oneD ? "K" : "KH, KW") << "]; it is " << wType,
           failure();
  Shape kernel(wType.getShape().begin() + 2, wType.getShape().end());
  if (auto k = t.intsAttribute("kernel_shape"); k && *k != kernel)
    return t.refuse() << "kernel_shape = " << listText(*k) << " does not match the weight's " << listText(kernel),
           failure();
  Value wv = *weight;
  if (w.oneD) wv = reshape(t, wv, {wType.getShape()[0], wType.getShape()[1], 1, wType.getShape()[2]});
  w.kernel = w.oneD ? Shape{1, kernel[0]} : kernel;
  auto strides = spatialList(t, "strides", spatial, 1, 1);
  auto dilations = failed(strides) ? strides : spatialList(t, "dilations", spatial, 1, 1);
  if (failed(dilations)) return failure();
  w.strides = *strides;
  w.dilations = *dilations;
  return wv;
}

LogicalResult convertConv(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}))) return failure();
  Window w;
  auto weight = convWindow(t, w, "O, C/group");
  if (failed(weight)) return failure();
  Value wv = *weight;
  const int64_t spatial = w.oneD ? 1 : 2;
  if (failed(resolvePads(t, w, spatial))) return failure();
  auto padded = padAsymmetric(t, w, /*negativeInfinity=*/false);
  if (failed(padded)) return failure();
  llvm::SmallVector<Value> operands = {*padded, wv};
  if (t.hasInput(2)) {
    auto b = floatInput(t, 2);
    if (failed(b)) return failure();
    operands.push_back(*b);
  }
  auto y = build<Conv2DOp>(t, operands,
                           {i64Array(t, "stride", w.strides), i64Array(t, "padding", w.padBegin),
                            i64Array(t, "dilation", w.dilations), i64(t, "groups", t.intAttribute("group", 1))});
  if (failed(y)) return failure();
  return t.setOutput(0, fromWindowRank(t, *y, w.oneD));
}

// ONNX's padding of a transposed convolution: explicit, or the total that output_shape (or
// auto_pad SAME_*: output = input * stride) implies, its odd unit at the end for SAME_UPPER and
// otherwise at the start (the ONNX operator spec's formula).
// An output_shape up to stride - 1 beyond the full result is output padding (zeros at the end), as
// ONNX's reference implementation computes it.
LogicalResult resolveTransposedPads(GraphTranslator& t, Window& w, int64_t spatial, Shape& outputPadding) {
  const std::string autoPad = t.stringAttribute("auto_pad", "NOTSET");
  auto outputShape = t.intsAttribute("output_shape");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return t.refuse() << "auto_pad = " << autoPad << " is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER";
  if (!outputShape && (autoPad == "NOTSET" || autoPad == "VALID")) return resolvePads(t, w, spatial);
  if (t.attribute("pads")) return t.refuse() << "pads are given with output_shape or auto_pad = " << autoPad;
  const auto in = cast<RankedTensorType>(w.x.getType()).getShape();
  Shape out(2, 0);
  if (outputShape) {
    // The spatial dims, or (as some exporters write it) the whole output shape.
    Shape spatialOut(outputShape->end() - std::min<int64_t>(spatial, outputShape->size()), outputShape->end());
    if (static_cast<int64_t>(spatialOut.size()) != spatial)
      return t.refuse() << "output_shape = " << listText(*outputShape) << " must have " << spatial << " spatial entries";
    if (spatial == 1) spatialOut.insert(spatialOut.begin(), 1);
    out = spatialOut;
  } else {
    for (int d = 0; d < 2; ++d) out[d] = in[2 + d] * w.strides[d];
  }
  w.padBegin.assign(2, 0);
  w.padEnd.assign(2, 0);
  for (int d = 0; d < 2; ++d) {
    const int64_t full = w.strides[d] * (in[2 + d] - 1) + (w.kernel[d] - 1) * w.dilations[d] + 1 + outputPadding[d];
    int64_t total = full - out[d];
    if (total < 0 && outputPadding[d] - total < w.strides[d]) {
      outputPadding[d] -= total;
      total = 0;
    }
    if (total < 0)
      return t.refuse() << "output size " << out[d] << " is more than stride - 1 beyond the " << full
                        << " the transposed convolution produces", failure();
    const int64_t half = total / 2;
    w.padBegin[d] = autoPad == "SAME_UPPER" ? half : total - half;
    w.padEnd[d] = total - w.padBegin[d];
  }
  return success();
}

LogicalResult convertConvTranspose(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape",
                               "pads", "strides"})))
    return failure();
  Window w;
  auto weight = convWindow(t, w, "C_in, C_out/group");
  if (failed(weight)) return failure();
  Value wv = *weight;
  auto wType = cast<RankedTensorType>(weight->getType());
  const int64_t spatial = w.oneD ? 1 : 2;
  auto outputPadding = spatialList(t, "output_padding", spatial, 0, 0);
  if (failed(outputPadding)) return failure();
  // Bounds first, so that no size below can overflow (a hostile model's attributes are arbitrary).
  constexpr int64_t kMaxWindow = int64_t{1} << 20;
  for (int d = 0; d < 2; ++d)
    if (w.strides[d] < 1 || w.strides[d] > kMaxWindow || w.dilations[d] < 1 || w.dilations[d] > kMaxWindow ||
        w.kernel[d] < 1)
      return t.refuse() << "strides = " << listText(w.strides) << " and dilations = " << listText(w.dilations)
                        << " must be in [1, " << kMaxWindow << "], the kernel " << listText(w.kernel) << " at least 1";
  for (int d = 0; d < 2; ++d)
    if ((*outputPadding)[d] < 0 || (*outputPadding)[d] >= w.strides[d])
      return t.refuse() << "output_padding = " << listText(*outputPadding)
                        << " must be in [0, stride) (strides = " << listText(w.strides) << ")";
  if (failed(resolveTransposedPads(t, w, spatial, *outputPadding))) return failure();
  const auto in = cast<RankedTensorType>(w.x.getType()).getShape();
  if (wType.getElementType() != cast<RankedTensorType>(w.x.getType()).getElementType())
    return t.refuse() << "the weight's type " << wType << " differs from the input's " << w.x.getType();
  const int64_t group = t.intAttribute("group", 1);
  if (group < 1 || in[1] != wType.getShape()[0] || wType.getShape()[0] % group != 0)
    return t.refuse() << "the input's " << in[1] << " channels must be the weight's first dim "
                      << wType.getShape()[0] << ", divisible by group = " << group;
  // The transposed convolution with the symmetric part p of the padding: the full result
  // (s (in - 1) + (k - 1) d + 1 + output_padding) less p on each side; the asymmetric rest is sliced.
  for (int d = 0; d < 2; ++d)
    if (w.padBegin[d] < 0 || w.padEnd[d] < 0 || w.padBegin[d] > kMaxWindow || w.padEnd[d] > kMaxWindow)
      return t.refuse() << "pads " << listText({w.padBegin[d], w.padEnd[d]}) << " must be in [0, " << kMaxWindow << "]";
  Shape common(2), size(2), starts(4, 0), limits(4);
  bool sliced = false;
  for (int d = 0; d < 2; ++d) {
    common[d] = std::min(w.padBegin[d], w.padEnd[d]);
    const int64_t full =
        w.strides[d] * (in[2 + d] - 1) + (w.kernel[d] - 1) * w.dilations[d] + 1 + (*outputPadding)[d];
    size[d] = full - 2 * common[d];
    starts[2 + d] = w.padBegin[d] - common[d];
    limits[2 + d] = full - w.padEnd[d] - common[d];
    sliced |= starts[2 + d] != 0 || limits[2 + d] != size[d];
    if (limits[2 + d] <= starts[2 + d])
      return t.refuse() << "pads = " << listText({w.padBegin[d], w.padEnd[d]}) << " leave no output along spatial dim "
                        << d - (2 - spatial);
  }
  const int64_t outChannels = wType.getShape()[1] * group;
  auto element = cast<RankedTensorType>(w.x.getType()).getElementType();
  const std::optional<int64_t> count = checkedNumel({in[0], outChannels, size[0], size[1]});
  if (!count || *count > kMaxTensorBytes / 4)
    return t.refuse() << "the result [" << in[0] << ", " << outChannels << ", " << size[0] << ", " << size[1]
                      << "] is larger than the runtime's limit per tensor";
  auto resultType = RankedTensorType::get({in[0], outChannels, size[0], size[1]}, element);
  Value y = t.create<Conv2DGradInputOp>(resultType, w.x, wv, t.builder().getDenseI64ArrayAttr(w.strides),
                                        t.builder().getDenseI64ArrayAttr(common),
                                        t.builder().getDenseI64ArrayAttr(w.dilations),
                                        t.builder().getI64IntegerAttr(group));
  if (sliced) {
    limits[0] = in[0];
    limits[1] = outChannels;
    auto s = build<SliceOp>(t, y, {i64Array(t, "starts", starts), i64Array(t, "limits", limits)});
    if (failed(s)) return failure();
    y = *s;
  }
  if (t.hasInput(2)) {
    auto b = floatInput(t, 2);
    if (failed(b)) return failure();
    auto bType = cast<RankedTensorType>(b->getType());
    if (bType.getRank() != 1 || bType.getDimSize(0) != outChannels)
      return t.refuse() << "the bias must be [" << outChannels << "]; it is " << bType;
    auto sum = build<AddOp>(t, {y, reshape(t, *b, {outChannels, 1, 1})});
    if (failed(sum)) return failure();
    y = *sum;
  }
  return t.setOutput(0, fromWindowRank(t, y, w.oneD));
}

LogicalResult checkPoolWindow(GraphTranslator& t, const Window& w) {
  constexpr int64_t kMaxWindow = int64_t{1} << 20;
  for (int d = 0; d < 2; ++d)
    if (w.kernel[d] < 1 || w.kernel[d] > kMaxWindow || w.strides[d] < 1 || w.strides[d] > kMaxWindow ||
        w.dilations[d] < 1 || w.dilations[d] > kMaxWindow)
      return t.refuse() << "kernel_shape = " << listText(w.kernel) << ", strides = " << listText(w.strides)
                        << " and dilations = " << listText(w.dilations) << " must be in [1, " << kMaxWindow << "]";
  return success();
}

// For each output position along dim d, how many elements of its (undilated) window, which starts
// at o * stride - padBegin, lie in [-before, size + after): an interval intersection.
std::vector<int64_t> windowCounts(int64_t outputs, const Window& w, int d, int64_t padBegin, int64_t size,
                                  int64_t before, int64_t after) {
  std::vector<int64_t> counts(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t start = o * w.strides[d] - padBegin;
    counts[o] = std::max<int64_t>(0, std::min(start + w.kernel[d], size + after) - std::max(start, -before));
  }
  return counts;
}

// A dilated max pool (amp.max_pool2d has no dilation): the input padded with -inf on every side,
// one strided slice per kernel tap, and a running maximum that keeps the earlier tap on a tie
// (select on a strict >), so the gradient goes to the first maximum in window order, as
// PyTorch's max_pool2d sends it.
FailureOr<Value> dilatedMaxPool(GraphTranslator& t, Window& w) {
  constexpr int64_t kMaxTaps = 65536;  // ops the decomposition builds: two per tap
  if (w.kernel[0] * w.kernel[1] > kMaxTaps)
    return t.refuse() << "a dilated max pool of " << w.kernel[0] * w.kernel[1] << " taps is more than the "
                      << kMaxTaps << " its decomposition into slices takes", failure();
  Value x = w.x;
  for (int d = 0; d < 2; ++d) {
    llvm::SmallVector<Value, 3> parts;
    if (w.padBegin[d]) parts.push_back(slab(t, x, 2 + d, w.padBegin[d], /*negativeInfinity=*/true));
    parts.push_back(x);
    if (w.padEnd[d]) parts.push_back(slab(t, x, 2 + d, w.padEnd[d], /*negativeInfinity=*/true));
    if (parts.size() == 1) continue;
    auto joined = build<ConcatOp>(t, parts, {i64(t, "axis", 2 + d)});
    if (failed(joined)) return failure();
    x = *joined;
  }
  const auto padded = cast<RankedTensorType>(x.getType()).getShape();
  Shape out(2);
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (padded[2 + d] < extent)
      return t.refuse() << "the dilated kernel (extent " << extent << ") does not fit the padded input ("
                        << padded[2 + d] << ")", failure();
    out[d] = (padded[2 + d] - extent) / w.strides[d] + 1;
  }
  Value best;
  for (int64_t kh = 0; kh < w.kernel[0]; ++kh)
    for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
      const Shape starts = {0, 0, kh * w.dilations[0], kw * w.dilations[1]};
      const Shape limits = {padded[0], padded[1], starts[2] + (out[0] - 1) * w.strides[0] + 1,
                            starts[3] + (out[1] - 1) * w.strides[1] + 1};
      auto tap = build<SliceOp>(t, x, {i64Array(t, "starts", starts), i64Array(t, "limits", limits),
                                       i64Array(t, "strides", {1, 1, w.strides[0], w.strides[1]})});
      if (failed(tap)) return failure();
      if (!best) {
        best = *tap;
        continue;
      }
      auto greater = build<CompareOp>(
          t, {*tap, best}, {named(t, "predicate", ComparePredicateAttr::get(t.context(), ComparePredicate::Gt))});
      auto chosen = failed(greater) ? greater : build<SelectOp>(t, {*greater, *tap, best});
      if (failed(chosen)) return failure();
      best = *chosen;
    }
  return best;
}

template <typename OpT>
LogicalResult convertPool(GraphTranslator& t, WindowKind kind) {
  const bool isMax = kind == WindowKind::MaxPool;
  if (isMax) {
    if (failed(t.onlyAttributes({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"})))
      return failure();
    if (t.outputUsed(1)) return t.refuse() << "the Indices output is not supported";
  } else if (failed(t.onlyAttributes({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}))) {
    return failure();
  }
  Window w;
  auto x = windowInput(t, w.oneD);
  if (failed(x)) return failure();
  w.x = *x;
  const int64_t spatial = w.oneD ? 1 : 2;
  auto kernel = t.intsAttribute("kernel_shape");
  if (!kernel || static_cast<int64_t>(kernel->size()) != spatial)
    return t.refuse() << "kernel_shape must have " << spatial << " entries (one per spatial dim)";
  w.kernel = *kernel;
  if (w.oneD) w.kernel.insert(w.kernel.begin(), 1);
  auto strides = spatialList(t, "strides", spatial, 1, 1);
  auto dilations = failed(strides) ? strides : spatialList(t, "dilations", spatial, 1, 1);
  if (failed(dilations)) return failure();
  w.strides = *strides;
  w.dilations = *dilations;
  if (failed(checkPoolWindow(t, w))) return failure();
  if (failed(resolvePads(t, w, spatial))) return failure();
  // The padding ONNX and PyTorch count in an average's divisor (count_include_pad=1), before
  // ceil_mode's overhang, which they never count.
  const Shape countedBegin = w.padBegin, countedEnd = w.padEnd;
  if (t.intAttribute("ceil_mode", 0) != 0) {
    const Shape extra = ceilModeExtra(w);
    for (int d = 0; d < 2; ++d) w.padEnd[d] += extra[d];
  }
  if (llvm::any_of(w.padBegin, [](int64_t p) { return p < 0; }) ||
      llvm::any_of(w.padEnd, [](int64_t p) { return p < 0; }))
    return t.refuse() << "pads must not be negative";
  const auto in = cast<RankedTensorType>(w.x.getType()).getShape();
  if (isMax && llvm::any_of(w.dilations, [](int64_t d) { return d != 1; })) {
    auto y = dilatedMaxPool(t, w);
    if (failed(y)) return failure();
    return t.setOutput(0, fromWindowRank(t, *y, w.oneD));
  }
  const Shape windowBegin = w.padBegin;  // padAsymmetric moves part of it into slabs
  auto input = padAsymmetric(t, w, /*negativeInfinity=*/isMax, {w.kernel[0] / 2, w.kernel[1] / 2});
  if (failed(input)) return failure();
  auto y = build<OpT>(t, *input,
                      {i64Array(t, "kernel", w.kernel), i64Array(t, "stride", w.strides),
                       i64Array(t, "padding", w.padBegin)});
  if (failed(y)) return failure();
  Value out = *y;
  if (!isMax) {
    // amp.avg_pool2d divides every window by its full size; where ONNX's divisor is smaller (the
    // padding with count_include_pad=0, a ceil_mode window past the padded input), the average
    // is rescaled by size / divisor, a constant per output position.
    const bool countPad = t.intAttribute("count_include_pad", 0) != 0;
    auto outShape = cast<RankedTensorType>(out.getType()).getShape();
    if (outShape[2] * outShape[3] > (int64_t{1} << 24))
      return t.refuse() << "the average's output plane " << outShape[2] << "x" << outShape[3]
                        << " is too large for its divisor table";
    const std::vector<int64_t> rows = windowCounts(outShape[2], w, 0, windowBegin[0], in[2],
                                                   countPad ? countedBegin[0] : 0, countPad ? countedEnd[0] : 0);
    const std::vector<int64_t> cols = windowCounts(outShape[3], w, 1, windowBegin[1], in[3],
                                                   countPad ? countedBegin[1] : 0, countPad ? countedEnd[1] : 0);
    const double full = static_cast<double>(w.kernel[0] * w.kernel[1]);
    std::vector<double> scale;
    bool rescaled = false;
    for (int64_t rowCount : rows)
      for (int64_t colCount : cols) {
        scale.push_back(rowCount * colCount > 0 ? full / static_cast<double>(rowCount * colCount) : 0.0);
        rescaled |= scale.back() != 1.0;
      }
    if (rescaled) {
      HostTensor c;
      c.shape = {outShape[2], outShape[3]};
      c.floats = std::move(scale);
      auto element = cast<RankedTensorType>(out.getType()).getElementType();
      c.dataType = element.isF16() ? onnx::TensorProto::FLOAT16
                   : element.isBF16() ? onnx::TensorProto::BFLOAT16
                                      : onnx::TensorProto::FLOAT;
      auto r = build<MulOp>(t, {out, t.constant(c)});
      if (failed(r)) return failure();
      out = *r;
    }
  }
  return t.setOutput(0, fromWindowRank(t, out, w.oneD));
}

}  // namespace

void addWindowConverters(llvm::StringMap<Converter>& converters) {
  converters["Conv"] = convertConv;
  converters["ConvTranspose"] = convertConvTranspose;
  converters["MaxPool"] = [](GraphTranslator& t) { return convertPool<MaxPool2DOp>(t, WindowKind::MaxPool); };
  converters["AveragePool"] = [](GraphTranslator& t) {
    return convertPool<AvgPool2DOp>(t, WindowKind::AveragePool);
  };
}

}  // namespace mlir::amp::onnx_import
