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
#ifndef AMP_RUNTIME_IO_NPZ_H
#define AMP_RUNTIME_IO_NPZ_H

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/io/IoCommon.h"

namespace amp::rt {

// Members in central-directory order (the order they were written).
absl::StatusOr<std::vector<NamedTensor>> readNpz(const std::string& path);

struct NpzWriteOptions {
  bool compress = false;     // deflate members, like np.savez_compressed
  bool forceZip64 = false;   // ZIP64 records even for small members (exercises the large path)
};
// Names get ".npy" appended; they must be non-empty and unique.
absl::Status writeNpz(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                      const NpzWriteOptions& options = {});

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_NPZ_H
