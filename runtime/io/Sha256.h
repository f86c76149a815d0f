// SHA-256 (FIPS 180-4), for the integrity check of native code objects in bundles.
#ifndef AMP_RUNTIME_IO_SHA256_H
#define AMP_RUNTIME_IO_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace amp::rt {

// Lowercase hex digest of `n` bytes.
std::string sha256Hex(const uint8_t* data, size_t n);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_SHA256_H
