// SHA-256 (FIPS 180-4), for the integrity checks of native code objects in bundles and of
// checkpoints.
#ifndef AMP_RUNTIME_IO_SHA256_H
#define AMP_RUNTIME_IO_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace amp::rt {

// Incremental form: update() any number of times, then hexDigest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hexDigest();  // lowercase hex; the object is spent afterwards

 private:
  uint32_t h_[8];
  uint8_t block_[64];
  size_t used_ = 0;     // bytes in block_
  uint64_t total_ = 0;  // bytes hashed
};

// Lowercase hex digest of `n` bytes.
std::string sha256Hex(const uint8_t* data, size_t n);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_SHA256_H
