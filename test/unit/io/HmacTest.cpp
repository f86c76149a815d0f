// HMAC-SHA256 against RFC 4231's test cases 1-7 (case 5 is truncated to 128 bits by the RFC), the
// incremental form against the one-shot form, and the constant-time comparison.
#include "runtime/io/Hmac.h"

#include <string>

#include "gtest/gtest.h"

namespace amp::rt {
namespace {

std::string mac(const std::string& key, const std::string& data) { return hmacSha256Hex(key, data.data(), data.size()); }

std::string range(int first, int last) {
  std::string s;
  for (int i = first; i <= last; ++i) s += static_cast<char>(i);
  return s;
}

TEST(HmacSha256, Rfc4231Vectors) {
  EXPECT_EQ(mac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(mac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(mac(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(mac(range(1, 25), std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(mac(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32), "a3b6167473100ee06e0c796c2955552b");
  // A key longer than the 64-byte block is hashed first.
  EXPECT_EQ(mac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(mac(std::string(131, '\xaa'),
                "This is a test using a larger than block-size key and a larger than block-size data. The key "
                "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, IncrementalEqualsOneShot) {
  std::string message;
  for (int i = 0; i < 300; ++i) message += static_cast<char>(i * 53 + 7);
  const std::string key = "a per-user key";
  const std::string whole = mac(key, message);
  for (size_t split : {0u, 1u, 63u, 64u, 65u, 200u, 300u}) {
    HmacSha256 h(key.data(), key.size());
    h.update(message.data(), split);
    h.update(message.data() + split, message.size() - split);
    EXPECT_EQ(h.hexDigest(), whole) << "split at " << split;
  }
  EXPECT_NE(mac(key + "x", message), whole);
}

TEST(HmacSha256, ConstantTimeEqual) {
  EXPECT_TRUE(constantTimeEqual("", ""));
  EXPECT_TRUE(constantTimeEqual("abc", "abc"));
  EXPECT_FALSE(constantTimeEqual("abc", "abd"));
  EXPECT_FALSE(constantTimeEqual("abc", "ab"));
}

}  // namespace
}  // namespace amp::rt
