// SHA-256 against FIPS 180-4's published vectors, and the incremental form against the one-shot
// form for every split of a message across block boundaries.
#include "runtime/io/Sha256.h"

#include <string>

#include "gtest/gtest.h"

namespace amp::rt {
namespace {

std::string hex(const std::string& s) { return sha256Hex(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string message;
  for (int i = 0; i < 200; ++i) message += static_cast<char>(i * 37 + 11);
  for (size_t length : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 128u, 200u}) {
    std::string m = message.substr(0, length);
    for (size_t split = 0; split <= length; ++split) {
      Sha256 h;
      h.update(m.data(), split);
      h.update(m.data() + split, length - split);
      EXPECT_EQ(h.hexDigest(), hex(m)) << "length " << length << " split " << split;
    }
  }
}

}  // namespace
}  // namespace amp::rt
