// What the import-time folds share (FoldShapeOps.cpp, FoldLogicOps.cpp): shapes of folded values,
// their size check, the integer range of an ONNX type, and NumPy broadcasting of known values.
#ifndef AMP_IMPORT_ONNX_FOLDSUPPORT_H
#define AMP_IMPORT_ONNX_FOLDSUPPORT_H

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "import/onnx/GraphTranslator.h"
#include "import/onnx/HostTensor.h"

namespace mlir::amp::onnx_import::fold {

using onnx::TensorProto;
using Shape = std::vector<int64_t>;

inline int64_t product(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

inline std::string shapeText(const Shape& s) {
  std::string text;
  for (size_t i = 0; i < s.size(); ++i) text += (i ? "x" : "") + std::to_string(s[i]);
  return s.empty() ? "scalar" : text;
}

// A folded value's shape, checked before anything is allocated: no negative dim, and at most
// kMaxFoldedElements elements (with the product overflow-checked). Failure is reported.
inline LogicalResult checkFoldedShape(GraphTranslator& t, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0)
      return t.refuse() << "the folded value would have the negative dim " << d << " (shape " << shapeText(shape)
                        << ")";
  auto n = checkedNumel(shape);
  if (!n || *n > kMaxFoldedElements)
    return t.refuse() << "the folded value would have shape " << shapeText(shape) << ", more than the "
                      << kMaxFoldedElements << " elements ampc folds at import time";
  return success();
}

// Integer results of a fold must fit the tensor's ONNX type; ampc refuses a fold that overflows
// instead of wrapping it (ONNX leaves integer overflow undefined).
inline bool fitsIntegerType(int32_t dataType, int64_t v) {
  switch (dataType) {
    case TensorProto::INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case TensorProto::INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case TensorProto::INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case TensorProto::UINT8: return v >= 0 && v <= UINT8_MAX;
    case TensorProto::UINT16: return v >= 0 && v <= UINT16_MAX;
    case TensorProto::UINT32: return v >= 0 && v <= UINT32_MAX;
    case TensorProto::BOOL: return v == 0 || v == 1;
    default: return true;  // int64 (and uint64, kept in its bits)
  }
}

inline std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * s[i + 1];
  return strides;
}

// NumPy broadcasting of known values: the result's shape, and for each result element the flat
// index of the element each input contributes.
struct Broadcast {
  Shape shape, strides;
  std::vector<Shape> padded;  // each input's shape, left-padded with 1s to the result's rank

  static std::optional<Broadcast> of(const std::vector<const HostTensor*>& inputs) {
    Broadcast b;
    size_t rank = 0;
    for (const HostTensor* in : inputs) rank = std::max(rank, in->shape.size());
    b.shape.assign(rank, 1);
    for (const HostTensor* in : inputs) {
      Shape p(rank - in->shape.size(), 1);
      p.insert(p.end(), in->shape.begin(), in->shape.end());
      for (size_t d = 0; d < rank; ++d) {
        if (p[d] != b.shape[d] && p[d] != 1 && b.shape[d] != 1) return std::nullopt;
        if (p[d] != 1) b.shape[d] = p[d];
      }
      b.padded.push_back(std::move(p));
    }
    return b;
  }
  // Checks the result's size (failure reported), then prepares source().
  LogicalResult check(GraphTranslator& t) {
    if (failed(checkFoldedShape(t, shape))) return failure();
    strides = stridesOf(shape);
    return success();
  }
  int64_t numel() const { return product(shape); }
  int64_t source(size_t input, int64_t i) const {
    const Shape& p = padded[input];
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t idx = (i / strides[d]) % shape[d];
      flat = flat * p[d] + (p[d] == 1 ? 0 : idx);
    }
    return flat;
  }
};

}  // namespace mlir::amp::onnx_import::fold

#endif  // AMP_IMPORT_ONNX_FOLDSUPPORT_H
