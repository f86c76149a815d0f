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

// The runtime's limit on one buffer (kMaxBufferBytes, runtime/plan/PlanValidation.h): no tensor
// the importer reads may be larger.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;
// The most elements a value folded at import time may have (ConstantOfShape, Range, a broadcast
// of known values, ...): 2^24, 128 MiB as doubles on the host. Real folds are shapes and masks
// (a 4096x4096 causal mask is 2^24); a model asking for more is refused before anything is
// allocated. 2^26 was too generous: a fold that size takes 11 s and 1.4 GiB to compile into a
// bundle constant (fuzz-onnx: a Where broadcast to [1, 2^26] ran past its 30 s timeout).
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

// The element count of `shape`; nullopt when a dim is negative or the product of the dims (zeros
// left out) overflows int64, so no later product of them can overflow either.
std::optional<int64_t> checkedNumel(llvm::ArrayRef<int64_t> shape);

// Bytes per element of an ONNX data type; 0 for a type ampc does not read.
size_t elementBytes(int32_t dataType);

struct HostTensor {
  int32_t dataType = onnx::TensorProto::FLOAT;  // onnx::TensorProto::DataType
  std::vector<int64_t> shape;
  std::vector<double> floats;  // float types
  std::vector<int64_t> ints;   // integer and bool types

  bool isFloat() const;
  int64_t numel() const;
  // Element `i` as a double / an integer, whichever kind the tensor holds.
  // A float read as an integer truncates toward zero and saturates (NaN reads as 0): never UB.
  double floatAt(int64_t i) const { return isFloat() ? floats[i] : static_cast<double>(ints[i]); }
  int64_t intAt(int64_t i) const { return isFloat() ? saturatingInt(floats[i]) : ints[i]; }
  static int64_t saturatingInt(double v);

  static HostTensor ofInts(std::vector<int64_t> values, std::vector<int64_t> shape,
                           int32_t dataType = onnx::TensorProto::INT64);
};

// The ONNX spelling of a data type ("float", "int64", ...).
std::string dataTypeName(int32_t dataType);
// Whether the amp dialect has the type, and which MLIR type it is.
std::optional<Type> elementTypeFor(int32_t dataType, MLIRContext* context);

// Whether `proto` holds exactly the data its dims say: dims non-negative, their product
// overflow-free and within kMaxTensorBytes, and as many values (raw bytes or typed fields) as
// elements; checked without allocating anything. Types ampc does not read and external data pass
// (decodeTensor refuses them). False with `error` set.
bool checkTensorSize(const onnx::TensorProto& proto, std::string* error);

// Decodes an initializer or a Constant's value; nullopt with `error` set for external data (the
// loader reads it into raw_data first), strings and types the importer does not read, negative or
// overflowing dims, and data whose size is not the dims' element count (compared before anything
// is allocated).
std::optional<HostTensor> decodeTensor(const onnx::TensorProto& proto, std::string* error);

// The amp.constant value of `tensor`; null when the dialect has no such element type.
DenseElementsAttr toElementsAttr(const HostTensor& tensor, MLIRContext* context);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_HOSTTENSOR_H
