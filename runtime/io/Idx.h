// IDX files (the MNIST / Fashion-MNIST container), plain or gzip-compressed (detected by the
// 1f 8b magic, so the file name does not matter).
//
// Layout: 0x00 0x00 <type> <ndims>, ndims big-endian uint32 dimensions, then the elements in
// big-endian row-major order. Types: 0x08 u8 -> U8, 0x0C i32 -> I32, 0x0D f32 -> F32,
// 0x0E f64 -> F64 (byte-swapped to host order). 0x09 i8 and 0x0B i16 are valid IDX but the
// runtime has no such dtype: Unimplemented. The data must be exactly the declared size.
// Errors: NotFound, DataLoss (bad magic, truncated, trailing data, corrupt gzip),
// Unimplemented; each message names the file.
#ifndef AMP_RUNTIME_IO_IDX_H
#define AMP_RUNTIME_IO_IDX_H

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"

namespace amp::rt {

absl::StatusOr<Tensor> readIdx(const std::string& path);

// Where Debian's dataset-fashion-mnist package installs the data.
inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct MnistSplit {
  Tensor images;  // U8 [N, 28, 28]
  Tensor labels;  // U8 [N], every value < 10
};
// split: "train" (60000 examples) or "test"/"t10k" (10000). Reads
// DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] and checks shapes, counts and labels.
absl::StatusOr<MnistSplit> loadFashionMnist(const std::string& dir, std::string_view split);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_IDX_H
