#include "runtime/io/Hmac.h"

#include <cstring>

namespace amp::rt {
namespace {

// Sha256 gives hex; the outer hash of HMAC takes the inner digest's 32 raw bytes.
void hexToBytes(const std::string& hex, uint8_t* out) {
  auto nibble = [](char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  for (size_t i = 0; i < hex.size() / 2; ++i) out[i] = static_cast<uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
}

}  // namespace

HmacSha256::HmacSha256(const void* key, size_t keyLength) {
  uint8_t block[64] = {};
  if (keyLength > sizeof(block)) {
    Sha256 h;
    h.update(key, keyLength);
    hexToBytes(h.hexDigest(), block);
  } else if (keyLength > 0) {
    std::memcpy(block, key, keyLength);
  }
  uint8_t innerPad[64];
  for (size_t i = 0; i < 64; ++i) {
    innerPad[i] = block[i] ^ 0x36;
    outerPad_[i] = block[i] ^ 0x5c;
  }
  inner_.update(innerPad, sizeof(innerPad));
}

void HmacSha256::update(const void* data, size_t n) { inner_.update(data, n); }

std::string HmacSha256::hexDigest() {
  uint8_t innerDigest[32];
  hexToBytes(inner_.hexDigest(), innerDigest);
  Sha256 outer;
  outer.update(outerPad_, sizeof(outerPad_));
  outer.update(innerDigest, sizeof(innerDigest));
  return outer.hexDigest();
}

std::string hmacSha256Hex(const std::string& key, const void* data, size_t n) {
  HmacSha256 mac(key.data(), key.size());
  mac.update(data, n);
  return mac.hexDigest();
}

bool constantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace amp::rt
