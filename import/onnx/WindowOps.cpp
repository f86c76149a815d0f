// Conv, MaxPool and AveragePool: the window ops. amp.conv2d and the amp pools take rank-4 NCHW
// inputs padded alike on both sides of each spatial dim; this file maps ONNX's other forms onto
// them exactly (docs/onnx-import.md, "Windows"):
// - rank 3 ([N, C, L]: Conv1d, MaxPool1d, AvgPool1d) runs as rank 4 with H = 1, reshaped back;
// - asymmetric pads, auto_pad SAME_UPPER/SAME_LOWER and MaxPool's ceil_mode become the symmetric
//   part in the op plus constant slabs concatenated on the longer side: -inf for max, which never
//   wins a window, and zeros for a convolution and for an average with count_include_pad=1, which
//   counts them as ONNX counts its padding.
#include <algorithm>
#include <limits>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
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

// Moves the asymmetric part of the padding into slabs around x: afterwards padBegin == padEnd.
FailureOr<Value> padAsymmetric(GraphTranslator& t, Window& w, bool negativeInfinity) {
  Value x = w.x;
  for (int d = 0; d < 2; ++d) {
    const int64_t common = std::min(w.padBegin[d], w.padEnd[d]);
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

LogicalResult convertConv(GraphTranslator& t) {
  if (failed(t.onlyAttributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}))) return failure();
  Window w;
  auto x = windowInput(t, w.oneD);
  auto weight = failed(x) ? x : floatInput(t, 1);
  if (failed(weight)) return failure();
  w.x = *x;
  const int64_t spatial = w.oneD ? 1 : 2;
  auto wType = cast<RankedTensorType>(weight->getType());
  if (wType.getRank() != spatial + 2)
    return t.refuse() << "the weight must be [O, C/group, " << (w.oneD ? "K" : "KH, KW") << "]; it is " << wType;
  Shape kernel(wType.getShape().begin() + 2, wType.getShape().end());
  if (auto k = t.intsAttribute("kernel_shape"); k && *k != kernel)
    return t.refuse() << "kernel_shape = " << listText(*k) << " does not match the weight's " << listText(kernel);
  Value wv = *weight;
  if (w.oneD) wv = reshape(t, wv, {wType.getShape()[0], wType.getShape()[1], 1, wType.getShape()[2]});
  w.kernel = w.oneD ? Shape{1, kernel[0]} : kernel;
  auto strides = spatialList(t, "strides", spatial, 1, 1);
  auto dilations = failed(strides) ? strides : spatialList(t, "dilations", spatial, 1, 1);
  if (failed(dilations)) return failure();
  w.strides = *strides;
  w.dilations = *dilations;
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
  if (llvm::any_of(w.dilations, [](int64_t d) { return d != 1; }))
    return t.refuse() << "dilated pooling is not supported (dilations must be 1)";
  if (failed(resolvePads(t, w, spatial))) return failure();
  if (t.intAttribute("ceil_mode", 0) != 0) {
    const Shape extra = ceilModeExtra(w);
    // PyTorch and ONNX divide a partial last window of an average by its size inside the padded
    // input, which no constant slab reproduces.
    if (!isMax && llvm::any_of(extra, [](int64_t e) { return e != 0; }))
      return t.refuse() << "ceil_mode=1 whose last window overhangs the padded input is not supported for "
                           "AveragePool (it divides that window by its in-bounds size); MaxPool supports it";
    for (int d = 0; d < 2; ++d) w.padEnd[d] += extra[d];
  }
  const bool padded = llvm::any_of(w.padBegin, [](int64_t p) { return p != 0; }) ||
                      llvm::any_of(w.padEnd, [](int64_t p) { return p != 0; });
  // amp's average counts padded zeros (count_include_pad=1); without padding the two agree.
  if (!isMax && t.intAttribute("count_include_pad", 0) == 0 && padded)
    return t.refuse() << "count_include_pad=0 with padding is not supported (the amp dialect averages over the "
                         "padded window, count_include_pad=1)";
  auto input = padAsymmetric(t, w, /*negativeInfinity=*/isMax);
  if (failed(input)) return failure();
  auto y = build<OpT>(t, *input,
                      {i64Array(t, "kernel", w.kernel), i64Array(t, "stride", w.strides),
                       i64Array(t, "padding", w.padBegin)});
  if (failed(y)) return failure();
  return t.setOutput(0, fromWindowRank(t, *y, w.oneD));
}

}  // namespace

void addWindowConverters(llvm::StringMap<Converter>& converters) {
  converters["Conv"] = convertConv;
  converters["MaxPool"] = [](GraphTranslator& t) { return convertPool<MaxPool2DOp>(t, WindowKind::MaxPool); };
  converters["AveragePool"] = [](GraphTranslator& t) {
    return convertPool<AvgPool2DOp>(t, WindowKind::AveragePool);
  };
}

}  // namespace mlir::amp::onnx_import
