// Types and helpers shared by the tensor file formats.
#ifndef AMP_RUNTIME_IO_NAMEDTENSOR_H
#define AMP_RUNTIME_IO_NAMEDTENSOR_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"

namespace amp::rt {

// A tensor with its name, as read from a multi-tensor file.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// A borrowed tensor with its name, for writers (avoids copying parameters to save them).
struct NamedTensorRef {
  std::string name;
  const Tensor* tensor;
};

namespace io_detail {

// Byte size of a tensor of this shape and dtype; nullopt when a dimension is negative or the
// product overflows 2^62 (no file we accept can be that large).
std::optional<uint64_t> checkedByteSize(const Shape& shape, DType dtype);

// Allocates a zeroed tensor whose byte size the caller has already validated against the
// available input; ResourceExhausted (naming `where`) if the allocation fails.
absl::StatusOr<Tensor> allocateTensor(DType dtype, const Shape& shape, const std::string& where);

}  // namespace io_detail
}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_NAMEDTENSOR_H
