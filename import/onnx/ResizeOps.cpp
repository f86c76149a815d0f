// Resize (opset 10+) and Upsample (opset 9), nearest and linear, from constant scales or sizes
// (docs/onnx-import.md, "Resize"). Two exact forms:
// - nearest by whole-number factors f (nn.Upsample(scale_factor=k), F.interpolate(mode="nearest")
//   to a multiple): output i copies input floor(i / f), which is a reshape that splits each scaled
//   dim d into [d, 1], a broadcast to [d, f_d] and a reshape back. Its gradient is the broadcast's:
//   the sum over each block of copies.
// - everything else (linear: F.interpolate(mode="bilinear") as torchvision's segmentation heads
//   write it, nearest by other factors): per resized dim, from the last to the first, the dim is
//   moved to the front and its rows gathered with amp.embedding by two constant index lists; the
//   result is w0 * x[i0] + w1 * x[i1] with constant per-row weights (nearest: one gather). That is
//   PyTorch's upsample_bilinear2d arithmetic, the width pass inside the height pass, and its
//   gradient (amp.embedding_grad) scatters each output's share back to its two sources.
// Cubic, antialias and the tf_* coordinate modes are refused.
#include <cmath>
#include <limits>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "import/onnx/HostTensor.h"
#include "ir/AmpOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {
namespace {

enum class Mode { Nearest, Linear };

struct ResizeSpec {
  Mode mode = Mode::Nearest;
  std::string coords = "half_pixel";         // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // nearest_mode
  Shape in, out;
  std::vector<double> scales;  // the scale per dim as given, or 0 when sizes were
};

// Each dim's output size, from the constant scales (out = floor(in * scale)) or sizes.
LogicalResult resolveSizes(GraphTranslator& t, ResizeSpec& r, unsigned scalesAt, unsigned sizesAt) {
  const bool bySizes = sizesAt < t.numInputs() && t.hasInput(sizesAt);
  const unsigned at = bySizes ? sizesAt : scalesAt;
  const char* what = bySizes ? "sizes" : "scales";
  if (!t.hasInput(at)) return t.refuse() << "needs its scales or sizes input";
  const HostTensor* known = t.constantInput(at);
  if (!known) return t.refuse() << "the " << what << " input must be known at import time";
  if (known->numel() != static_cast<int64_t>(r.in.size()))
    return t.refuse() << "the " << what << " input has " << known->numel() << " entries for a rank-" << r.in.size()
                      << " input";
  // Each resized dim gets constant index and weight tables of its output size.
  constexpr int64_t kMaxSize = int64_t{1} << 24;
  for (size_t d = 0; d < r.in.size(); ++d) {
    const double scale = bySizes ? 0.0 : known->floatAt(static_cast<int64_t>(d));
    const double size = bySizes ? static_cast<double>(known->intAt(static_cast<int64_t>(d)))
                                : std::floor(static_cast<double>(r.in[d]) * scale);
    if (!(size >= 1 && size <= kMaxSize) || (!bySizes && !(scale > 0))) {
      auto refusal = t.refuse() << "dim " << d << " of size " << r.in[d] << " has the ";
      if (bySizes) refusal << "size " << known->intAt(static_cast<int64_t>(d));
      else refusal << "scale " << scale;
      return refusal << "; the output size must be in [1, " << kMaxSize << "]";
    }
    r.out.push_back(static_cast<int64_t>(size));
    r.scales.push_back(scale);
  }
  const std::optional<int64_t> count = checkedNumel(r.out);
  if (!count || *count > kMaxTensorBytes / 4)
    return t.refuse() << "the resized tensor is larger than the runtime's limit per tensor";
  return success();
}

// The source coordinate of output index `i` along dim d, in f32 arithmetic as PyTorch's CPU kernels
// compute it (area_pixel_compute_scale / area_pixel_compute_source_index): input steps per
// output step `in / out`, or 1 / scale when the scale was given.
float sourceCoordinate(const ResizeSpec& r, size_t d, int64_t i) {
  const int64_t in = r.in[d], out = r.out[d];
  if (r.coords == "align_corners") {
    // ONNX: (in - 1) / (resized - 1), the resized length unrounded (in * scale) when scales are given.
    const double resized = r.scales[d] > 0 ? static_cast<double>(in) * r.scales[d] : static_cast<double>(out);
    return resized > 1 ? static_cast<float>(in - 1) / static_cast<float>(resized - 1) * static_cast<float>(i) : 0.0f;
  }
  const float step = r.scales[d] > 0 ? static_cast<float>(1.0 / r.scales[d])
                                     : static_cast<float>(in) / static_cast<float>(out);
  if (r.coords == "asymmetric") return step * static_cast<float>(i);
  if (r.coords == "pytorch_half_pixel" && out == 1) return 0.0f;
  return step * (static_cast<float>(i) + 0.5f) - 0.5f;  // half_pixel, pytorch_half_pixel
}

int64_t clampIndex(double v, int64_t in) {
  if (!(v > 0)) return 0;
  return v >= static_cast<double>(in - 1) ? in - 1 : static_cast<int64_t>(v);
}

// Output i reads sources first[i] and second[i] with weights w0[i] and w1[i] (nearest: w1 = 0).
struct Taps {
  std::vector<int64_t> first, second;
  std::vector<double> w0, w1;
  bool identity = true, single = true;  // output i == input i; every w1 == 0
};

Taps tapsFor(const ResizeSpec& r, size_t d) {
  Taps taps;
  const int64_t in = r.in[d];
  for (int64_t i = 0; i < r.out[d]; ++i) {
    const float src = sourceCoordinate(r, d, i);
    int64_t i0 = 0, i1 = 0;
    float l0 = 1.0f, l1 = 0.0f;
    if (r.mode == Mode::Nearest) {
      const float below = std::floor(src);
      float pick = src;
      if (r.nearest == "floor") pick = below;
      else if (r.nearest == "ceil") pick = std::ceil(src);
      else if (src - below == 0.5f) pick = r.nearest == "round_prefer_ceil" ? below + 1 : below;
      else pick = std::round(src);
      i0 = i1 = clampIndex(pick, in);
    } else {
      // PyTorch: a negative source coordinate is 0; the second tap is the next row, or the last.
      const float s = src < 0 ? 0.0f : src;
      i0 = clampIndex(std::floor(s), in);
      i1 = i0 < in - 1 ? i0 + 1 : i0;
      l1 = s - static_cast<float>(i0);
      l0 = 1.0f - l1;
    }
    taps.first.push_back(i0);
    taps.second.push_back(i1);
    taps.w0.push_back(l0);
    taps.w1.push_back(l1);
    taps.identity &= r.out[d] == in && i0 == i && l0 == 1.0f && l1 == 0.0f;
    taps.single &= l1 == 0.0f;
  }
  return taps;
}

// Nearest by a whole-number factor per dim: output i copies input floor(i / f) exactly.
std::optional<Shape> wholeFactors(const ResizeSpec& r) {
  if (r.mode != Mode::Nearest) return std::nullopt;
  Shape factors;
  for (size_t d = 0; d < r.in.size(); ++d) {
    if (r.out[d] % r.in[d] != 0) return std::nullopt;
    const int64_t f = r.out[d] / r.in[d];
    const Taps taps = tapsFor(r, d);
    for (int64_t i = 0; i < r.out[d]; ++i)
      if (taps.first[i] != i / f) return std::nullopt;
    factors.push_back(f);
  }
  return factors;
}

// Each element repeated factors[d] times along dim d.
Value repeatElements(GraphTranslator& t, Value x, llvm::ArrayRef<int64_t> factors) {
  auto type = cast<RankedTensorType>(x.getType());
  Shape split, spread, out;
  for (size_t d = 0; d < factors.size(); ++d) {
    const int64_t n = type.getShape()[d];
    split.push_back(n);
    spread.push_back(n);
    out.push_back(n * factors[d]);
    if (factors[d] == 1) continue;
    split.push_back(1);
    spread.push_back(factors[d]);
  }
  if (split == Shape(type.getShape())) return x;  // every factor 1
  Value v = reshape(t, x, split);
  v = t.create<BroadcastToOp>(RankedTensorType::get(spread, type.getElementType()), v);
  return reshape(t, v, out);
}

Value indexConstant(GraphTranslator& t, const std::vector<int64_t>& ids) {
  return t.constant(HostTensor::ofInts(ids, {static_cast<int64_t>(ids.size())}));
}

Value weightConstant(GraphTranslator& t, const std::vector<double>& w, Type element) {
  HostTensor c;
  c.dataType = element.isF16() ? onnx::TensorProto::FLOAT16
               : element.isBF16() ? onnx::TensorProto::BFLOAT16
                                  : onnx::TensorProto::FLOAT;
  c.shape = {static_cast<int64_t>(w.size()), 1};
  c.floats = w;
  return t.constant(c);
}

// x resized along dim d by gathering its rows: dim d to the front, [in_d, rest] rows, the taps'
// weighted rows, and back.
FailureOr<Value> gatherAlong(GraphTranslator& t, Value x, size_t d, const Taps& taps) {
  auto type = cast<RankedTensorType>(x.getType());
  const int64_t rank = type.getRank();
  Shape perm = {static_cast<int64_t>(d)}, inverse(rank);
  for (int64_t k = 0; k < rank; ++k)
    if (k != static_cast<int64_t>(d)) perm.push_back(k);
  for (int64_t k = 0; k < rank; ++k) inverse[perm[k]] = k;
  Value v = x;
  if (d != 0) {
    auto moved = build<TransposeOp>(t, v, {i64Array(t, "permutation", perm)});
    if (failed(moved)) return failure();
    v = *moved;
  }
  Shape movedShape(cast<RankedTensorType>(v.getType()).getShape());
  const int64_t rest = type.getNumElements() / type.getShape()[d];
  v = reshape(t, v, {type.getShape()[d], rest});
  auto rows = [&](const std::vector<int64_t>& ids) {
    return build<EmbeddingOp>(t, {v, indexConstant(t, ids)});
  };
  const Type element = type.getElementType();
  auto y = rows(taps.first);
  if (failed(y)) return failure();
  Value r = *y;
  if (!taps.single || llvm::any_of(taps.w0, [](double w) { return w != 1.0; })) {
    auto a = build<MulOp>(t, {r, weightConstant(t, taps.w0, element)});
    auto second = failed(a) ? a : rows(taps.second);
    auto b = failed(second) ? second : build<MulOp>(t, {*second, weightConstant(t, taps.w1, element)});
    auto sum = failed(b) ? b : build<AddOp>(t, {*a, *b});
    if (failed(sum)) return failure();
    r = *sum;
  }
  movedShape[0] = static_cast<int64_t>(taps.first.size());
  r = reshape(t, r, movedShape);
  if (d == 0) return r;
  return build<TransposeOp>(t, r, {i64Array(t, "permutation", inverse)});
}

LogicalResult convertResize(GraphTranslator& t, bool upsample) {
  if (upsample ? failed(t.onlyAttributes({"mode"}))
               : failed(t.onlyAttributes({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                                           "exclude_outside", "extrapolation_value", "antialias"})))
    return failure();
  ResizeSpec r;
  const std::string mode = t.stringAttribute("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear")
    return t.refuse() << "mode '" << mode << "' is not supported; nearest and linear are";
  r.mode = mode == "nearest" ? Mode::Nearest : Mode::Linear;
  if (t.intAttribute("antialias", 0) != 0) return t.refuse() << "antialias=1 is not supported";
  if (upsample) {
    r.coords = "asymmetric";  // Upsample and Resize-10: output i reads input i / scale
    r.nearest = "floor";
  } else {
    r.coords = t.stringAttribute("coordinate_transformation_mode", "half_pixel");
    r.nearest = t.stringAttribute("nearest_mode", "round_prefer_floor");
    if (r.coords != "half_pixel" && r.coords != "pytorch_half_pixel" && r.coords != "align_corners" &&
        r.coords != "asymmetric")
      return t.refuse() << "coordinate_transformation_mode '" << r.coords
                        << "' is not supported; half_pixel, pytorch_half_pixel, align_corners and asymmetric are";
    if (r.nearest != "round_prefer_floor" && r.nearest != "round_prefer_ceil" && r.nearest != "floor" &&
        r.nearest != "ceil")
      return t.refuse() << "nearest_mode '" << r.nearest << "' is not one of ONNX's four";
  }
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  r.in.assign(type.getShape().begin(), type.getShape().end());
  if (llvm::any_of(r.in, [](int64_t n) { return n < 1; })) return t.refuse() << "the input " << type << " is empty";
  // Resize-10 has Upsample's form (X, scales); from opset 11 on (X, roi, scales, sizes).
  if (failed(upsample || t.numInputs() == 2 ? resolveSizes(t, r, 1, ~0u) : resolveSizes(t, r, 2, 3)))
    return failure();
  if (auto factors = wholeFactors(r)) return t.setOutput(0, repeatElements(t, *x, *factors));
  Value y = *x;
  for (size_t d = r.in.size(); d-- > 0;) {
    const Taps taps = tapsFor(r, d);
    if (taps.identity) continue;
    auto resized = gatherAlong(t, y, d, taps);
    if (failed(resized)) return failure();
    y = *resized;
  }
  return t.setOutput(0, y);
}

}  // namespace

void addResizeConverters(llvm::StringMap<Converter>& converters) {
  converters["Resize"] = [](GraphTranslator& t) { return convertResize(t, t.numInputs() == 2); };
  converters["Upsample"] = [](GraphTranslator& t) { return convertResize(t, true); };
}

}  // namespace mlir::amp::onnx_import
