// "Never crash, never read out of bounds, on any input": every prefix and many single-byte
// corruptions of a valid file of each format must come back as a value or an error status.
// (Run under -fsanitize=address to check the out-of-bounds half.)
#include <gtest/gtest.h>
#include <zlib.h>

#include <functional>

#include "runtime/io/Idx.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Npz.h"
#include "runtime/io/Safetensors.h"
#include "test/unit/io/IoTestUtil.h"

namespace amp::rt {
namespace {

using testing::patterned;
using testing::readBytes;
using testing::TempDir;
using testing::writeBytes;

// Returns how many variants were rejected; a variant that is accepted must still be sane.
void mutate(const std::string& path, const std::string& good, const std::function<absl::Status()>& read) {
  int rejected = 0;
  for (size_t n = 0; n < good.size(); ++n) {  // every truncation
    writeBytes(path, good.substr(0, n));
    absl::Status s = read();
    rejected += !s.ok();
    if (!s.ok()) {
      EXPECT_NE(std::string(s.message()).find(path), std::string::npos) << s;
    }
  }
  EXPECT_EQ(rejected, int(good.size())) << "every proper prefix of " << path << " is invalid";
  uint32_t x = 7;
  for (int k = 0; k < 1500; ++k) {  // random byte replacements
    x = x * 1664525u + 1013904223u;
    std::string b = good;
    b[(x >> 8) % b.size()] = static_cast<char>(x >> 24);
    writeBytes(path, b);
    (void)read();
  }
}

TEST(IoFuzz, CorruptedFilesNeverCrash) {
  TempDir dir;
  Tensor a = patterned(DType::F32, {3, 4}), b = patterned(DType::BF16, {5}), c = patterned(DType::Bool, {2});
  std::vector<NamedTensorRef> refs = {{"a", &a}, {"c", &c}};

  ASSERT_TRUE(writeNpy(dir.file("g.npy"), a).ok());
  mutate(dir.file("m.npy"), readBytes(dir.file("g.npy")), [&] { return readNpy(dir.file("m.npy")).status(); });

  for (bool compress : {false, true}) {
    for (bool zip64 : {false, true}) {
      ASSERT_TRUE(writeNpz(dir.file("g.npz"), refs, {compress, zip64}).ok());
      mutate(dir.file("m.npz"), readBytes(dir.file("g.npz")), [&] { return readNpz(dir.file("m.npz")).status(); });
    }
  }

  refs.push_back({"b", &b});
  ASSERT_TRUE(writeSafetensors(dir.file("g.st"), refs, {{"k", "v"}}).ok());
  mutate(dir.file("m.st"), readBytes(dir.file("g.st")), [&] { return readSafetensors(dir.file("m.st")).status(); });

  std::string idx = std::string("\0\0\x08\x02\0\0\0\x03\0\0\0\x05", 12) + std::string(15, 'p');
  mutate(dir.file("m.idx"), idx, [&] { return readIdx(dir.file("m.idx")).status(); });
  gzFile g = gzopen(dir.file("g.gz").c_str(), "wb");
  ASSERT_NE(g, nullptr);
  gzwrite(g, idx.data(), unsigned(idx.size()));
  gzclose(g);
  mutate(dir.file("m.gz"), readBytes(dir.file("g.gz")), [&] { return readIdx(dir.file("m.gz")).status(); });
}

}  // namespace
}  // namespace amp::rt
