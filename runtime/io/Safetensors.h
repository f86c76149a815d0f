// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {str: str}}, then the data. The checkpoint format, and the one format here
// that carries bf16 and fp8.
//
// Dtypes: F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 U8 BOOL F64. Others the spec knows (I8, I16,
// U16, U32, U64, ...) are Unimplemented; unknown spellings are DataLoss.
// Read validates like the reference implementation, and more strictly: N within the file and
// <= 100 MB; valid UTF-8, strict JSON (no duplicate keys); each entry has exactly the three keys;
// offsets, sorted, start at 0, are contiguous (no gap, no overlap) and end exactly at the end of
// the file; end - begin == numel * itemsize with overflow checks.
// Write: tensors sorted like the reference (dtype alignment descending, then name), header
// "__metadata__" first, compact JSON padded with spaces to a multiple of 8; atomic.
#ifndef AMP_RUNTIME_IO_SAFETENSORS_H
#define AMP_RUNTIME_IO_SAFETENSORS_H

#include <string>
#include <utility>
#include <vector>

#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/io/NamedTensor.h"

namespace amp::rt {

using StringMap = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsContents {
  std::vector<NamedTensor> tensors;  // in file (data offset) order
  StringMap metadata;                // "__metadata__" in header order; empty if absent
};

absl::StatusOr<SafetensorsContents> readSafetensors(const std::string& path);
// The same for a file already read into memory (`path` names it in messages): a caller that
// authenticates a file parses the very bytes it authenticated.
absl::StatusOr<SafetensorsContents> readSafetensorsBytes(std::string_view bytes, const std::string& path);

// Names must be non-empty, unique and not "__metadata__". Metadata keys must be unique.
absl::Status writeSafetensors(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                              const StringMap& metadata = {});
// A last metadata value too large to hold in memory (a bundle's plan), produced in pieces while the
// file is written: `write` passes the value's text to `piece`, in order. `escapedSize` is
// jsonEscapedSize of the whole text (the header's length comes first in the file).
struct StreamedMetadataValue {
  std::string key;
  uint64_t escapedSize = 0;
  std::function<void(const std::function<void(std::string_view)>& piece)> write;
};
absl::Status writeSafetensors(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                              const StringMap& metadata, const StreamedMetadataValue& last);
// The same bytes writeSafetensors puts in a file (for tests and in-memory use).
absl::StatusOr<std::string> encodeSafetensors(const std::vector<NamedTensorRef>& tensors,
                                              const StringMap& metadata = {});

// "F32" <-> DType::F32, ...
std::string_view safetensorsDTypeName(DType t);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_SAFETENSORS_H
