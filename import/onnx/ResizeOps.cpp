// Resize (opset 10+) and Upsample (opset 9) in nearest mode by whole-number factors, the form
// nn.Upsample(scale_factor=k) and F.interpolate(..., mode="nearest") export: every output element
// then copies one input element, each input element repeated f_d times along dim d, which is
// exact as a reshape that splits each scaled dim d into [d, 1], a broadcast to [d, f_d] and a
// reshape back (docs/onnx-import.md, "Resize"). Its gradient is the broadcast's: the sum over each
// block of copies. The coordinate mapping must send output i to input floor(i / f) for that:
// asymmetric with nearest_mode floor, or half_pixel / pytorch_half_pixel with a round_prefer_*
// nearest_mode; anything else (linear, cubic, align_corners, fractional factors) is refused.
#include <cmath>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {
namespace {

// The whole-number factor of each dim, from the constant scales (or, for Resize, sizes).
FailureOr<Shape> repeatFactors(GraphTranslator& t, RankedTensorType type, unsigned scalesAt, unsigned sizesAt) {
  const auto in = type.getShape();
  Shape factors;
  const bool bySizes = sizesAt < t.numInputs() && t.hasInput(sizesAt);
  const unsigned at = bySizes ? sizesAt : scalesAt;
  if (!t.hasInput(at)) return t.refuse() << "needs its scales or sizes input", failure();
  const HostTensor* known = t.constantInput(at);
  if (!known)
    return t.refuse() << "the " << (bySizes ? "sizes" : "scales") << " input must be known at import time", failure();
  if (known->numel() != static_cast<int64_t>(in.size()))
    return t.refuse() << "the " << (bySizes ? "sizes" : "scales") << " input has " << known->numel()
                      << " entries for a rank-" << in.size() << " input",
           failure();
  for (size_t d = 0; d < in.size(); ++d) {
    if (bySizes) {
      const int64_t size = known->intAt(static_cast<int64_t>(d));
      if (in[d] <= 0 || size < in[d] || size % in[d] != 0)
        return t.refuse() << "dim " << d << " goes from " << in[d] << " to " << size
                          << "; only whole-number upsampling factors are supported",
               failure();
      factors.push_back(size / in[d]);
    } else {
      const double scale = known->floatAt(static_cast<int64_t>(d));
      if (!(scale >= 1) || scale != std::floor(scale) || scale > (int64_t{1} << 20))
        return t.refuse() << "dim " << d << " has the scale " << scale
                          << "; only whole-number upsampling factors are supported",
               failure();
      factors.push_back(static_cast<int64_t>(scale));
    }
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

LogicalResult convertNearestRepeat(GraphTranslator& t, bool upsample) {
  if (upsample ? failed(t.onlyAttributes({"mode"}))
               : failed(t.onlyAttributes({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                                           "exclude_outside", "extrapolation_value"})))
    return failure();
  const std::string mode = t.stringAttribute("mode", "nearest");
  if (mode != "nearest")
    return t.refuse() << "mode '" << mode << "' is not supported; only 'nearest' with whole-number factors is";
  if (!upsample) {
    const std::string coords = t.stringAttribute("coordinate_transformation_mode", "half_pixel");
    const std::string nearest = t.stringAttribute("nearest_mode", "round_prefer_floor");
    const bool halfPixel = coords == "half_pixel" || coords == "pytorch_half_pixel";
    const bool rounds = nearest == "round_prefer_floor" || nearest == "round_prefer_ceil";
    if (!((coords == "asymmetric" && nearest == "floor") || (halfPixel && rounds)))
      return t.refuse() << "coordinate_transformation_mode '" << coords << "' with nearest_mode '" << nearest
                        << "' does not copy whole blocks; supported: asymmetric with floor, half_pixel or "
                           "pytorch_half_pixel with round_prefer_floor or round_prefer_ceil";
  }
  auto x = floatInput(t, 0);
  if (failed(x)) return failure();
  auto type = cast<RankedTensorType>(x->getType());
  auto factors = upsample ? repeatFactors(t, type, 1, ~0u) : repeatFactors(t, type, 2, 3);
  if (failed(factors)) return failure();
  return t.setOutput(0, repeatElements(t, *x, *factors));
}

}  // namespace

void addResizeConverters(llvm::StringMap<Converter>& converters) {
  // Resize-10 has Upsample's form (X, scales; floor(i / scale)); from opset 11 on (X, roi, scales, sizes).
  converters["Resize"] = [](GraphTranslator& t) { return convertNearestRepeat(t, t.numInputs() == 2); };
  converters["Upsample"] = [](GraphTranslator& t) { return convertNearestRepeat(t, true); };
}

}  // namespace mlir::amp::onnx_import
