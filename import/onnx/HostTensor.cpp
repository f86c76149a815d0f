#include "import/onnx/HostTensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "llvm/ADT/APFloat.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {

using onnx::TensorProto;

bool HostTensor::isFloat() const {
  return dataType == TensorProto::FLOAT || dataType == TensorProto::DOUBLE || dataType == TensorProto::FLOAT16 ||
         dataType == TensorProto::BFLOAT16;
}

std::optional<int64_t> checkedNumel(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return empty ? 0 : n;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t HostTensor::saturatingInt(double v) {
  if (std::isnan(v)) return 0;
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

HostTensor HostTensor::ofInts(std::vector<int64_t> values, std::vector<int64_t> shape, int32_t dataType) {
  HostTensor t;
  t.dataType = dataType;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  return t;
}

std::string dataTypeName(int32_t dataType) {
  switch (dataType) {
    case TensorProto::FLOAT: return "float";
    case TensorProto::DOUBLE: return "double";
    case TensorProto::FLOAT16: return "float16";
    case TensorProto::BFLOAT16: return "bfloat16";
    case TensorProto::INT64: return "int64";
    case TensorProto::INT32: return "int32";
    case TensorProto::INT16: return "int16";
    case TensorProto::INT8: return "int8";
    case TensorProto::UINT8: return "uint8";
    case TensorProto::UINT16: return "uint16";
    case TensorProto::UINT32: return "uint32";
    case TensorProto::UINT64: return "uint64";
    case TensorProto::BOOL: return "bool";
    case TensorProto::STRING: return "string";
    case TensorProto::COMPLEX64: return "complex64";
    case TensorProto::COMPLEX128: return "complex128";
    default: return "data type " + std::to_string(dataType);
  }
}

std::optional<Type> elementTypeFor(int32_t dataType, MLIRContext* context) {
  Builder b(context);
  switch (dataType) {
    case TensorProto::FLOAT: return b.getF32Type();
    case TensorProto::FLOAT16: return b.getF16Type();
    case TensorProto::BFLOAT16: return b.getBF16Type();
    case TensorProto::INT64: return b.getI64Type();
    case TensorProto::INT32: return b.getI32Type();
    case TensorProto::BOOL: return b.getI1Type();
    default: return std::nullopt;
  }
}

namespace {

double halfBitsToDouble(uint16_t bits, bool brain) {
  if (brain) {
    uint32_t word = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &word, sizeof f);
    return f;
  }
  llvm::APFloat value(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  bool lost = false;
  value.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return value.convertToDouble();
}

template <typename T>
T readLittleEndian(const std::string& raw, int64_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

size_t elementBytes(int32_t dataType) {
  switch (dataType) {
    case TensorProto::DOUBLE: case TensorProto::INT64: case TensorProto::UINT64: return 8;
    case TensorProto::FLOAT: case TensorProto::INT32: case TensorProto::UINT32: return 4;
    case TensorProto::FLOAT16: case TensorProto::BFLOAT16: case TensorProto::INT16: case TensorProto::UINT16: return 2;
    case TensorProto::INT8: case TensorProto::UINT8: case TensorProto::BOOL: return 1;
    default: return 0;
  }
}

bool checkTensorSize(const TensorProto& proto, std::string* error) {
  const std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  std::string dimsText;
  for (size_t i = 0; i < shape.size(); ++i) dimsText += (i ? "x" : "") + std::to_string(shape[i]);
  for (int64_t d : shape)
    if (d < 0) {
      *error = "tensor '" + proto.name() + "' has a negative dimension (dims " + dimsText + ")";
      return false;
    }
  const size_t bytes = elementBytes(proto.data_type());
  if (bytes == 0 || proto.data_location() == TensorProto::EXTERNAL) return true;  // refused when decoded
  // The dims are the model's word, the data its bytes: the count is checked against the data
  // before any element is allocated.
  const std::optional<int64_t> count = checkedNumel(shape);
  int64_t byteCount = 0;
  if (!count || __builtin_mul_overflow(*count, static_cast<int64_t>(bytes), &byteCount) ||
      byteCount > kMaxTensorBytes) {
    *error = "tensor '" + proto.name() + "' has the dims " + dimsText +
             (count ? ", more than the runtime's limit of " + std::to_string(kMaxTensorBytes) + " bytes per tensor"
                    : ", whose product overflows int64");
    return false;
  }
  int64_t stored = 0;
  if (proto.has_raw_data()) {
    stored = static_cast<int64_t>(proto.raw_data().size() / bytes);
    if (proto.raw_data().size() % bytes) stored = -1;
  } else {
    switch (proto.data_type()) {
      case TensorProto::FLOAT: stored = proto.float_data_size(); break;
      case TensorProto::DOUBLE: stored = proto.double_data_size(); break;
      case TensorProto::INT64: stored = proto.int64_data_size(); break;
      case TensorProto::UINT32: case TensorProto::UINT64: stored = proto.uint64_data_size(); break;
      default: stored = proto.int32_data_size();
    }
  }
  if (stored != *count) {
    *error = "tensor '" + proto.name() + "' holds " +
             (stored < 0 ? std::to_string(proto.raw_data().size()) + " bytes, not a whole number of values,"
                         : std::to_string(stored) + " values") +
             " for its " + std::to_string(*count) + " elements (dims " + (dimsText.empty() ? "scalar" : dimsText) + ")";
    return false;
  }
  return true;
}

std::optional<HostTensor> decodeTensor(const TensorProto& proto, std::string* error) {
  HostTensor t;
  t.dataType = proto.data_type();
  t.shape.assign(proto.dims().begin(), proto.dims().end());
  if (proto.data_location() == TensorProto::EXTERNAL) {
    *error = "tensor '" + proto.name() + "' keeps its data in an external file that was not read";
    return std::nullopt;
  }
  const size_t bytes = elementBytes(t.dataType);
  if (bytes == 0) {
    *error = "tensor '" + proto.name() + "' is " + dataTypeName(t.dataType) + ", which ampc does not read";
    return std::nullopt;
  }
  if (!checkTensorSize(proto, error)) return std::nullopt;
  const int64_t n = *checkedNumel(t.shape);
  const bool isFloat = t.isFloat();
  if (isFloat)
    t.floats.resize(n);
  else
    t.ints.resize(n);
  auto store = [&](int64_t i, double f, int64_t v) {
    if (isFloat)
      t.floats[i] = f;
    else
      t.ints[i] = v;
  };
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    for (int64_t i = 0; i < n; ++i) {
      switch (t.dataType) {
        case TensorProto::FLOAT: store(i, readLittleEndian<float>(raw, i), 0); break;
        case TensorProto::DOUBLE: store(i, readLittleEndian<double>(raw, i), 0); break;
        case TensorProto::FLOAT16: store(i, halfBitsToDouble(readLittleEndian<uint16_t>(raw, i), false), 0); break;
        case TensorProto::BFLOAT16: store(i, halfBitsToDouble(readLittleEndian<uint16_t>(raw, i), true), 0); break;
        case TensorProto::INT64: store(i, 0, readLittleEndian<int64_t>(raw, i)); break;
        case TensorProto::UINT64: store(i, 0, static_cast<int64_t>(readLittleEndian<uint64_t>(raw, i))); break;
        case TensorProto::INT32: store(i, 0, readLittleEndian<int32_t>(raw, i)); break;
        case TensorProto::UINT32: store(i, 0, readLittleEndian<uint32_t>(raw, i)); break;
        case TensorProto::INT16: store(i, 0, readLittleEndian<int16_t>(raw, i)); break;
        case TensorProto::UINT16: store(i, 0, readLittleEndian<uint16_t>(raw, i)); break;
        case TensorProto::INT8: store(i, 0, readLittleEndian<int8_t>(raw, i)); break;
        case TensorProto::UINT8: store(i, 0, readLittleEndian<uint8_t>(raw, i)); break;
        case TensorProto::BOOL: store(i, 0, readLittleEndian<uint8_t>(raw, i) != 0); break;
      }
    }
    return t;
  }
  switch (t.dataType) {
    case TensorProto::FLOAT:
      for (int64_t i = 0; i < n; ++i) t.floats[i] = proto.float_data(i);
      break;
    case TensorProto::DOUBLE:
      for (int64_t i = 0; i < n; ++i) t.floats[i] = proto.double_data(i);
      break;
    case TensorProto::INT64:
      for (int64_t i = 0; i < n; ++i) t.ints[i] = proto.int64_data(i);
      break;
    case TensorProto::UINT32: case TensorProto::UINT64:
      for (int64_t i = 0; i < n; ++i) t.ints[i] = static_cast<int64_t>(proto.uint64_data(i));
      break;
    default:  // int32_data carries the narrower integers, bool and the 16-bit floats' bits
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = proto.int32_data(i);
        if (t.dataType == TensorProto::FLOAT16 || t.dataType == TensorProto::BFLOAT16)
          t.floats[i] = halfBitsToDouble(static_cast<uint16_t>(v), t.dataType == TensorProto::BFLOAT16);
        else
          t.ints[i] = t.dataType == TensorProto::BOOL ? (v != 0) : v;
      }
  }
  return t;
}

DenseElementsAttr toElementsAttr(const HostTensor& tensor, MLIRContext* context) {
  auto element = elementTypeFor(tensor.dataType, context);
  if (!element) return {};
  auto type = RankedTensorType::get(tensor.shape, *element);
  if (tensor.dataType == TensorProto::FLOAT) {
    std::vector<float> values(tensor.floats.begin(), tensor.floats.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<float>(values));
  }
  if (tensor.isFloat()) {
    std::vector<llvm::APFloat> values;
    const auto& semantics = cast<FloatType>(*element).getFloatSemantics();
    for (double v : tensor.floats) {
      llvm::APFloat f(v);
      bool lost = false;
      f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  if (tensor.dataType == TensorProto::BOOL) {
    std::vector<bool> values(tensor.ints.begin(), tensor.ints.end());
    llvm::SmallVector<bool> flags(values.begin(), values.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(flags));
  }
  // Integers go in as their machine type: an APInt per element took 2.5x the value's own memory
  // (a folded 2^26-element Range went past fuzz-onnx's 2 GiB limit).
  const unsigned width = element->getIntOrFloatBitWidth();
  auto narrowed = [&](auto zero) {
    std::vector<decltype(zero)> values(tensor.ints.begin(), tensor.ints.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<decltype(zero)>(values));
  };
  if (width == 64) return DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(tensor.ints));
  if (width == 32) return narrowed(int32_t{0});
  if (width == 16) return narrowed(int16_t{0});
  if (width == 8) return narrowed(int8_t{0});
  std::vector<llvm::APInt> values;
  for (int64_t v : tensor.ints) values.emplace_back(width, static_cast<uint64_t>(v), /*isSigned=*/true);
  return DenseElementsAttr::get(type, values);
}

}  // namespace mlir::amp::onnx_import
