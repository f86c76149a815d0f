// NumPy .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
// Read: format versions 1.0, 2.0 and 3.0; dtypes '<f4' '<f2' '<f8' '<i8' '<i4' '|u1' '|b1'
// (f32 f16 f64 i64 i32 u8 bool); C order only. The header (a Python dict literal) is parsed
// strictly: exactly the keys 'descr', 'fortran_order', 'shape'.
// Write: byte-identical to numpy >= 1.23's np.save (version 1.0 header, growth padding,
// 64-byte alignment); version 2.0 is never needed because ranks are limited to 64, numpy 2's
// NPY_MAXDIMS, on both read and write. BF16/F8 tensors are refused: numpy has no such dtype (writing them as raw void
// 'V2' would silently lose the type) - use safetensors for those.
//
// Error codes: NotFound (missing file), DataLoss (not a well-formed .npy: bad magic, truncated,
// malformed header, size mismatch), Unimplemented (well-formed but unsupported: fortran order,
// big-endian or other dtypes), InvalidArgument (writing an unsupported tensor).
// Every message starts with the file name.
#ifndef AMP_RUNTIME_IO_NPY_H
#define AMP_RUNTIME_IO_NPY_H

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/Tensor.h"
#include "runtime/io/AtomicFile.h"

namespace amp::rt {

absl::StatusOr<Tensor> readNpy(const std::string& path);
// Decodes a complete in-memory .npy (e.g. an .npz member); `where` prefixes error messages.
absl::StatusOr<Tensor> decodeNpy(std::string_view bytes, const std::string& where);

absl::Status writeNpy(const std::string& path, const Tensor& t);
// Magic + version + header dict + padding; the tensor's bytes follow it in the file.
absl::StatusOr<std::string> encodeNpyHeader(const Tensor& t);

// An .npy file of shape [N, ...] kept open and read one row (example) at a time, for training
// data larger than memory: the header is checked against the file's size once, at open, and rows
// are read from the same open file (pread), so memory stays bounded whatever the file's size.
class NpyRowFile {
 public:
  static absl::StatusOr<std::shared_ptr<const NpyRowFile>> open(const std::string& path);
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::string& path() const { return file_.path(); }
  int64_t rows() const { return shape_.empty() ? 0 : shape_[0]; }
  size_t rowBytes() const { return rowBytes_; }
  // Row `row` (0 <= row < rows()) into `out` (rowBytes() bytes).
  absl::Status readRow(int64_t row, void* out) const;

 private:
  NpyRowFile(InputFile file, DType dtype, Shape shape, uint64_t dataOffset, size_t rowBytes)
      : file_(std::move(file)), dtype_(dtype), shape_(std::move(shape)), dataOffset_(dataOffset), rowBytes_(rowBytes) {}
  InputFile file_;
  DType dtype_;
  Shape shape_;
  uint64_t dataOffset_;
  size_t rowBytes_;
};

// The .npy descr for a dtype ('<f4'), or nullopt for BF16/F8 which numpy cannot represent.
std::optional<std::string_view> npyDescr(DType t);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_NPY_H
