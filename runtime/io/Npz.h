// NumPy .npz archives: a ZIP file whose members are .npy files (np.savez / np.savez_compressed).
//
// Read: stored and deflate members, CRC-32 checked, ZIP64 (extra fields in the central directory
// and local headers, ZIP64 end-of-central-directory) as np.savez writes for large arrays.
// Member names lose their ".npy" suffix; members that are not .npy files, encrypted members,
// other compression methods and multi-disk archives are rejected with a clear error.
// Write: stored (np.savez) or deflate (np.savez_compressed) members with correct CRCs and
// central directory; ZIP64 records are added only where a size or offset needs them (or always,
// with forceZip64). Timestamps are fixed at 1980-01-01 so identical inputs give identical files.
// BF16/F8 tensors are refused (see Npy.h). Written atomically (AtomicFile.h).
//
// Error codes as in Npy.h; messages look like "data.npz: member 'x.npy': CRC mismatch ...".
// A member over a size or ratio limit (NpzReadOptions) is ResourceExhausted.
#ifndef AMP_RUNTIME_IO_NPZ_H
#define AMP_RUNTIME_IO_NPZ_H

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/io/NamedTensor.h"

namespace amp::rt {

// Zip-bomb guards, checked on the central directory's declared sizes before anything is
// decompressed; decompression itself never writes past a member's declared size.
//
// Deflate expands by at most ~1032:1, and an all-zeros array (a legitimate mask or an untrained
// buffer) reaches ~1028:1 at zlib's default level, so a ratio limit alone would refuse real
// data. The ratio limit therefore applies only to members (and to the archive's deflated members
// together) that decompress to more than `ratioFreeBytes`; below that, anything loads. Above it,
// an array that compresses better than 1000:1 must be saved stored (np.savez).
struct NpzReadOptions {
  uint64_t maxMemberBytes = uint64_t{1} << 36;  // one member: the runtime's per-buffer limit (64 GiB)
  uint64_t maxTotalBytes = 0;                   // all members: 0 = the machine's physical memory
  uint64_t maxRatio = 1000;                     // uncompressed : compressed, above ratioFreeBytes
  uint64_t ratioFreeBytes = uint64_t{256} << 20;  // 256 MiB
};

// Members in central-directory order (the order they were written).
absl::StatusOr<std::vector<NamedTensor>> readNpz(const std::string& path,
                                                 const NpzReadOptions& options = {});

struct NpzWriteOptions {
  bool compress = false;     // deflate members, like np.savez_compressed
  bool forceZip64 = false;   // ZIP64 records even for small members (exercises the large path)
};
// Names get ".npy" appended; they must be non-empty and unique.
absl::Status writeNpz(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                      const NpzWriteOptions& options = {});

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_NPZ_H
