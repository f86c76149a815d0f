// HMAC-SHA256 (RFC 2104 over FIPS 180-4's SHA-256), for the authentication tag ampc puts on the
// bundles it writes (runtime/plan/Provenance.h). Incremental, so a large bundle is authenticated
// in pieces without a second copy.
#ifndef AMP_RUNTIME_IO_HMAC_H
#define AMP_RUNTIME_IO_HMAC_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/io/Sha256.h"

namespace amp::rt {

class HmacSha256 {
 public:
  // A key longer than SHA-256's 64-byte block is hashed first (RFC 2104, section 2).
  HmacSha256(const void* key, size_t keyLength);
  void update(const void* data, size_t n);
  std::string hexDigest();  // lowercase hex of the 32-byte tag; the object is spent afterwards

 private:
  uint8_t outerPad_[64];
  Sha256 inner_;
};

std::string hmacSha256Hex(const std::string& key, const void* data, size_t n);

// Equal strings, compared in time that depends on their lengths only (a tag check must not tell
// an attacker how many leading characters of a guess were right).
bool constantTimeEqual(const std::string& a, const std::string& b);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_HMAC_H
