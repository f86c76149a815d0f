// A tensor whose value is known at import time: initializers, Constant nodes and the shape
// arithmetic folded from them. Integers and floats are kept apart, each in a type wide enough to
// hold every ONNX value of its kind exactly (f32 and f16 fit in double).
#ifndef AMP_IMPORT_ONNX_HOSTTENSOR_H
#define AMP_IMPORT_ONNX_HOSTTENSOR_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinAttributes.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

struct HostTensor {
  int32_t dataType = onnx::TensorProto::FLOAT;  // onnx::TensorProto::DataType
  std::vector<int64_t> shape;
  std::vector<double> floats;  // float types
  std::vector<int64_t> ints;   // integer and bool types

  bool isFloat() const;
  int64_t numel() const;
  // Element `i` as a double / an integer, whichever kind the tensor holds.
  double floatAt(int64_t i) const { return isFloat() ? floats[i] : static_cast<double>(ints[i]); }
  int64_t intAt(int64_t i) const { return isFloat() ? static_cast<int64_t>(floats[i]) : ints[i]; }

  static HostTensor ofInts(std::vector<int64_t> values, std::vector<int64_t> shape,
                           int32_t dataType = onnx::TensorProto::INT64);
};

// The ONNX spelling of a data type ("float", "int64", ...).
std::string dataTypeName(int32_t dataType);
// Whether the amp dialect has the type, and which MLIR type it is.
std::optional<Type> elementTypeFor(int32_t dataType, MLIRContext* context);

// Decodes an initializer or a Constant's value; nullopt with `error` set for external data,
// strings and types the importer does not read.
std::optional<HostTensor> decodeTensor(const onnx::TensorProto& proto, std::string* error);

// The amp.constant value of `tensor`; null when the dialect has no such element type.
DenseElementsAttr toElementsAttr(const HostTensor& tensor, MLIRContext* context);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_HOSTTENSOR_H
