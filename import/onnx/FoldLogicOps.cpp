// Folding at import time, continued (FoldShapeOps.cpp has the shape arithmetic): the comparisons,
// boolean logic, Mod and ScatterND that exporters write around shapes and masks, on known values.
// VisionTransformer's class token compares shape values (Equal) to pick its expand dims; Swin's
// shifted windows pad with Mod and build their attention mask with ScatterND and Not. Each fold is
// exact or refused with the reason, located at its node: no integer wraps, no division by zero, no
// order-dependent write.
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "import/onnx/FoldSupport.h"
#include "import/onnx/GraphTranslator.h"

namespace mlir::amp::onnx_import {
namespace {

using namespace fold;

bool isBool(const HostTensor& t) { return t.dataType == TensorProto::BOOL; }

HostTensor boolTensor(Shape shape) {
  HostTensor out;
  out.dataType = TensorProto::BOOL;
  out.shape = std::move(shape);
  return out;
}

// Equal, Less, LessOrEqual, Greater, GreaterOrEqual: both operands integers (compared exactly) or
// both floats (IEEE: NaN compares unequal and unordered), broadcast.
template <typename Compare>
LogicalResult foldCompare(GraphTranslator& t, const HostTensor& a, const HostTensor& b, Compare compare) {
  if (failed(t.onlyAttributes({}))) return failure();
  if (a.isFloat() != b.isFloat())
    return t.refuse() << "the operands are " << dataTypeName(a.dataType) << " and " << dataTypeName(b.dataType)
                      << "; a comparison takes one type";
  auto shape = Broadcast::of({&a, &b});
  if (!shape) return t.refuse() << "the operands do not broadcast";
  if (failed(shape->check(t))) return failure();
  HostTensor out = boolTensor(shape->shape);
  for (int64_t i = 0; i < shape->numel(); ++i) {
    const int64_t ia = shape->source(0, i), ib = shape->source(1, i);
    out.ints.push_back(a.isFloat() ? compare(a.floats[ia], b.floats[ib]) : compare(a.ints[ia], b.ints[ib]));
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

// Not, And, Or, Xor on known bools.
template <typename Logic>
LogicalResult foldLogic(GraphTranslator& t, const std::vector<const HostTensor*>& in, Logic logic) {
  if (failed(t.onlyAttributes({}))) return failure();
  for (const HostTensor* x : in)
    if (!isBool(*x)) return t.refuse() << "the operands must be bool, not " << dataTypeName(x->dataType);
  auto shape = Broadcast::of(in);
  if (!shape) return t.refuse() << "the operands do not broadcast";
  if (failed(shape->check(t))) return failure();
  HostTensor out = boolTensor(shape->shape);
  for (int64_t i = 0; i < shape->numel(); ++i) {
    const bool a = in[0]->ints[shape->source(0, i)] != 0;
    const bool b = in.size() > 1 ? in[1]->ints[shape->source(1, i)] != 0 : false;
    out.ints.push_back(logic(a, b) ? 1 : 0);
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

// Mod: for integers with fmod=0 the remainder takes the divisor's sign (Python's %), with fmod=1
// the dividend's (C's %); floats need fmod=1 (ONNX) and get C's fmod.
LogicalResult foldMod(GraphTranslator& t, const HostTensor& a, const HostTensor& b) {
  if (failed(t.onlyAttributes({"fmod"}))) return failure();
  const bool cStyle = t.intAttribute("fmod", 0) != 0;
  if (a.dataType != b.dataType)
    return t.refuse() << "the operands are " << dataTypeName(a.dataType) << " and " << dataTypeName(b.dataType)
                      << "; Mod takes one type";
  if (a.isFloat() && !cStyle) return t.refuse() << "Mod of floats needs fmod=1 (ONNX)";
  auto shape = Broadcast::of({&a, &b});
  if (!shape) return t.refuse() << "the operands do not broadcast";
  if (failed(shape->check(t))) return failure();
  HostTensor out;
  out.dataType = a.dataType;
  out.shape = shape->shape;
  for (int64_t i = 0; i < shape->numel(); ++i) {
    const int64_t ia = shape->source(0, i), ib = shape->source(1, i);
    if (a.isFloat()) {
      const double r = std::fmod(a.floats[ia], b.floats[ib]);
      out.floats.push_back(a.dataType == TensorProto::FLOAT ? static_cast<double>(static_cast<float>(r)) : r);
      continue;
    }
    const int64_t x = a.ints[ia], y = b.ints[ib];
    if (y == 0) return t.refuse() << "integer Mod by zero (" << x << " mod 0)";
    int64_t r = y == -1 ? 0 : x % y;  // INT64_MIN % -1 is undefined in C++; the remainder is 0
    if (!cStyle && r != 0 && ((r < 0) != (y < 0))) r += y;
    out.ints.push_back(r);
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

// ScatterND with reduction none: a copy of data with updates written at the index tuples. Two
// updates of one element would make the result depend on their order (ONNX leaves it
// undefined), so that is refused.
LogicalResult foldScatterND(GraphTranslator& t, const HostTensor& data, const HostTensor& indices,
                            const HostTensor& updates) {
  if (failed(t.onlyAttributes({"reduction"}))) return failure();
  if (t.stringAttribute("reduction", "none") != "none")
    return t.refuse() << "reduction = " << t.stringAttribute("reduction", "none")
                      << " is not folded (only none)";
  if (indices.isFloat()) return t.refuse() << "the indices must be integers";
  if (data.isFloat() != updates.isFloat()) return t.refuse() << "data and updates must have one type";
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (indices.shape.empty()) return t.refuse() << "the indices must have rank >= 1";
  const int64_t k = indices.shape.back();
  if (k < 1 || k > rank) return t.refuse() << "the index tuples have " << k << " entries; data has rank " << rank;
  // updates: indices.shape[:-1] + data.shape[k:]
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != expected)
    return t.refuse() << "updates have shape " << shapeText(updates.shape) << "; ScatterND needs "
                      << shapeText(expected);
  const Shape strides = stridesOf(data.shape);
  const int64_t slice = product(Shape(data.shape.begin() + k, data.shape.end()));
  const int64_t tuples = product(Shape(indices.shape.begin(), indices.shape.end() - 1));
  HostTensor out = data;
  std::set<int64_t> written;
  for (int64_t n = 0; n < tuples; ++n) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t index = indices.ints[n * k + d];
      if (index < -data.shape[d] || index >= data.shape[d])
        return t.refuse() << "index " << index << " is out of range for dim " << d << " of size " << data.shape[d];
      if (index < 0) index += data.shape[d];
      offset += index * strides[d];
    }
    if (!written.insert(offset).second)
      return t.refuse() << "two index tuples name the same element, so the result would depend on their order";
    for (int64_t e = 0; e < slice; ++e) {
      if (out.isFloat())
        out.floats[offset + e] = updates.floats[n * slice + e];
      else
        out.ints[offset + e] = updates.ints[n * slice + e];
    }
  }
  t.setOutputConstant(0, std::move(out));
  return success();
}

}  // namespace

std::optional<LogicalResult> foldLogicNode(GraphTranslator& t, const std::vector<const HostTensor*>& in) {
  const std::string& op = t.node().op_type();
  if (llvm::is_contained(in, nullptr)) return std::nullopt;
  if (in.size() == 2) {
    if (op == "Equal") return foldCompare(t, *in[0], *in[1], [](auto x, auto y) { return x == y; });
    if (op == "Less") return foldCompare(t, *in[0], *in[1], [](auto x, auto y) { return x < y; });
    if (op == "LessOrEqual") return foldCompare(t, *in[0], *in[1], [](auto x, auto y) { return x <= y; });
    if (op == "Greater") return foldCompare(t, *in[0], *in[1], [](auto x, auto y) { return x > y; });
    if (op == "GreaterOrEqual") return foldCompare(t, *in[0], *in[1], [](auto x, auto y) { return x >= y; });
    if (op == "And") return foldLogic(t, in, [](bool x, bool y) { return x && y; });
    if (op == "Or") return foldLogic(t, in, [](bool x, bool y) { return x || y; });
    if (op == "Xor") return foldLogic(t, in, [](bool x, bool y) { return x != y; });
    if (op == "Mod") return foldMod(t, *in[0], *in[1]);
  }
  if (op == "Not" && in.size() == 1) return foldLogic(t, in, [](bool x, bool) { return !x; });
  if (op == "ScatterND" && in.size() == 3) return foldScatterND(t, *in[0], *in[1], *in[2]);
  return std::nullopt;
}

}  // namespace mlir::amp::onnx_import
