#include "runtime/io/NamedTensor.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace amp::rt::io_detail {

std::optional<uint64_t> checkedByteSize(const Shape& shape, DType dtype) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > kLimit / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

absl::StatusOr<Tensor> allocateTensor(DType dtype, const Shape& shape, const std::string& where) {
  Tensor t(dtype, shape);
  if (t.nbytes() > 0 && t.data() == nullptr)
    return absl::ResourceExhaustedError(
        absl::StrCat(where, ": cannot allocate ", t.nbytes(), " bytes for a tensor of shape ",
                     shapeToString(shape)));
  return t;
}

}  // namespace amp::rt::io_detail
