// Helpers shared by the tensor I/O tests.
#ifndef AMP_TEST_UNIT_IO_IOTESTUTIL_H
#define AMP_TEST_UNIT_IO_IOTESTUTIL_H

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "runtime/Tensor.h"

namespace amp::rt::testing {

// A fresh directory per test, removed (with its files) afterwards.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/amp-io-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A tensor whose bytes are a deterministic pattern (every byte pattern, incl. NaN payloads).
inline Tensor patterned(DType dtype, Shape shape, uint8_t seed = 1) {
  Tensor t(dtype, std::move(shape));
  uint8_t* p = t.data();
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(seed + i * 37 + (i >> 8));
  if (dtype == DType::Bool)
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
  return t;
}

// Asserts the status has the code and its message contains every fragment (the file name and
// the problem).
inline void expectError(const absl::Status& s, absl::StatusCode code,
                        std::initializer_list<std::string> fragments) {
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& f : fragments)
    EXPECT_NE(std::string(s.message()).find(f), std::string::npos)
        << "message '" << s.message() << "' lacks '" << f << "'";
}

inline void putLE(std::string& s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace amp::rt::testing

#endif  // AMP_TEST_UNIT_IO_IOTESTUTIL_H
