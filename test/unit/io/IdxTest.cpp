#include "runtime/io/Idx.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>

#include "test/unit/io/IoTestUtil.h"

namespace amp::rt {
namespace {

using testing::expectError;
using testing::TempDir;
using testing::writeBytes;

std::string idxHeader(uint8_t type, std::vector<uint32_t> dims) {
  std::string s = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) s += static_cast<char>((d >> shift) & 0xFF);
  return s;
}

std::string noise(size_t n) {  // incompressible-ish bytes
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

void writeGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST(IoIdx, ReadsPlainAndGzipU8Images) {
  TempDir dir;
  std::string pixels = noise(3 * 28 * 28);
  std::string bytes = idxHeader(0x08, {3, 28, 28}) + pixels;
  writeBytes(dir.file("img"), bytes);
  writeGz(dir.file("img.gz"), bytes);
  for (const char* name : {"img", "img.gz"}) {
    absl::StatusOr<Tensor> t = readIdx(dir.file(name));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), DType::U8);
    EXPECT_EQ(t->shape(), (Shape{3, 28, 28}));
    EXPECT_EQ(std::memcmp(t->data(), pixels.data(), pixels.size()), 0) << name;
  }
}

TEST(IoIdx, ConvertsBigEndianI32F32F64) {
  TempDir dir;
  writeBytes(dir.file("i"), idxHeader(0x0C, {2}) + std::string("\xff\xff\xff\xfe\x00\x01\x00\x00", 8));
  writeBytes(dir.file("f"), idxHeader(0x0D, {1}) + std::string("\x3f\xc0\x00\x00", 4));
  writeGz(dir.file("d.gz"), idxHeader(0x0E, {1, 1}) + std::string("\xc0\x09\x21\xfb\x54\x44\x2d\x18", 8));
  absl::StatusOr<Tensor> i = readIdx(dir.file("i"));
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(i->dtype(), DType::I32);
  EXPECT_EQ(i->as<int32_t>()[0], -2);
  EXPECT_EQ(i->as<int32_t>()[1], 65536);
  absl::StatusOr<Tensor> f = readIdx(dir.file("f"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->as<float>()[0], 1.5f);
  absl::StatusOr<Tensor> d = readIdx(dir.file("d.gz"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dtype(), DType::F64);
  EXPECT_EQ(d->shape(), (Shape{1, 1}));
  EXPECT_EQ(d->as<double>()[0], -3.141592653589793);
}

TEST(IoIdx, EveryCorruptionIsAClearError) {
  TempDir dir;
  struct Case {
    const char* name;
    std::string bytes;
    bool gz;
    absl::StatusCode code;
    std::string what;
  };
  std::string gzGood;
  {
    writeGz(dir.file("tmp.gz"), idxHeader(0x08, {100, 28, 28}) + noise(100 * 784));
    gzGood = testing::readBytes(dir.file("tmp.gz"));
  }
  const std::vector<Case> cases = {
      {"empty", "", false, absl::StatusCode::kDataLoss, "empty file"},
      {"magic", "\x01\x02\x08\x01", false, absl::StatusCode::kDataLoss, "bad magic"},
      {"type", idxHeader(0x07, {1}) + "x", false, absl::StatusCode::kDataLoss, "unknown IDX element type 0x7"},
      {"i8", idxHeader(0x09, {1}) + "x", false, absl::StatusCode::kUnimplemented, "i8 is not supported"},
      {"i16", idxHeader(0x0B, {1}) + "xx", false, absl::StatusCode::kUnimplemented, "i16 is not supported"},
      {"zero-dims", idxHeader(0x08, {}), false, absl::StatusCode::kDataLoss, "0 dimensions"},
      {"short-magic", std::string("\0\0", 2), false, absl::StatusCode::kDataLoss, "truncated: expected 4 bytes of IDX magic, got 2"},
      {"short-dims", idxHeader(0x08, {60000, 28, 28}).substr(0, 9), false, absl::StatusCode::kDataLoss,
       "truncated: expected 12 bytes of dimensions, got 5"},
      {"train-images", idxHeader(0x08, {60000, 28, 28}) + noise(1000), false, absl::StatusCode::kDataLoss,
       "truncated: expected 47040000 bytes of pixel data, got 1000"},
      {"train-images.gz", idxHeader(0x08, {100, 28, 28}) + noise(10 * 784), true, absl::StatusCode::kDataLoss,
       "truncated: expected 78400 bytes of pixel data, got 7840"},
      {"labels", idxHeader(0x08, {10}) + noise(12), false, absl::StatusCode::kDataLoss,
       "2 trailing bytes after 10 bytes of element data"},
      {"labels.gz", idxHeader(0x08, {10}) + noise(12), true, absl::StatusCode::kDataLoss, "trailing data"},
      {"garbage.gz", "\x1f\x8b" + noise(200), false, absl::StatusCode::kDataLoss, "corrupt gzip data"},
      {"cut.gz", gzGood.substr(0, gzGood.size() / 2), false, absl::StatusCode::kDataLoss, "truncated gzip stream"},
      {"bomb.gz", idxHeader(0x08, {0x7fffffff, 1000, 1000}), true, absl::StatusCode::kDataLoss, "impossible for a"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = dir.file(c.name);
    if (c.gz) writeGz(path, c.bytes);
    else writeBytes(path, c.bytes);
    absl::StatusOr<Tensor> t = readIdx(path);
    ASSERT_FALSE(t.ok());
    expectError(t.status(), c.code, {path, c.what});
  }
  expectError(readIdx(dir.file("missing")).status(), absl::StatusCode::kNotFound, {"missing", "no such file"});
}

// A miniature Fashion-MNIST directory in the Debian layout.
void writeSplit(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t labelsN, uint8_t maxLabel) {
  writeGz(dir.file(prefix + "-images-idx3-ubyte.gz"), idxHeader(0x08, {n, 28, 28}) + noise(n * 784));
  std::string labels;
  for (uint32_t i = 0; i < labelsN; ++i) labels += static_cast<char>(i % (maxLabel + 1));
  writeGz(dir.file(prefix + "-labels-idx1-ubyte.gz"), idxHeader(0x08, {labelsN}) + labels);
}

TEST(IoIdx, LoadFashionMnistValidates) {
  TempDir dir;
  writeSplit(dir, "train", 12, 12, 9);
  absl::StatusOr<MnistSplit> s = loadFashionMnist(dir.path(), "train");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->images.shape(), (Shape{12, 28, 28}));
  EXPECT_EQ(s->labels.data()[11], 1);

  writeSplit(dir, "t10k", 5, 4, 9);
  expectError(loadFashionMnist(dir.path(), "test").status(), absl::StatusCode::kDataLoss,
              {"t10k-labels-idx1-ubyte.gz", "4 labels for 5 images"});
  writeSplit(dir, "t10k", 12, 12, 10);
  expectError(loadFashionMnist(dir.path(), "t10k").status(), absl::StatusCode::kDataLoss,
              {"t10k-labels-idx1-ubyte.gz", "label 10 at index 10"});
  writeGz(dir.file("t10k-images-idx3-ubyte.gz"), idxHeader(0x08, {2, 28, 27}) + noise(2 * 28 * 27));
  expectError(loadFashionMnist(dir.path(), "test").status(), absl::StatusCode::kDataLoss,
              {"t10k-images-idx3-ubyte.gz", "expected u8 images [N, 28, 28], got ui8 [2, 28, 27]"});
  expectError(loadFashionMnist(dir.path(), "valid").status(), absl::StatusCode::kInvalidArgument,
              {"unknown split 'valid'"});
  expectError(loadFashionMnist(dir.file("nowhere"), "train").status(), absl::StatusCode::kNotFound,
              {"nowhere/train-images-idx3-ubyte", "no such file"});
}

TEST(IoIdx, RealFashionMnist) {
  std::string dir(kFashionMnistDir);
  if (::access((dir + "/train-images-idx3-ubyte.gz").c_str(), R_OK) != 0)
    GTEST_SKIP() << "Fashion-MNIST not installed at " << dir << " (Debian package dataset-fashion-mnist)";
  absl::StatusOr<MnistSplit> train = loadFashionMnist(dir, "train");
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(train->labels.shape(), (Shape{60000}));
  // The first training example is an ankle boot (class 9); its top-left pixel is background.
  EXPECT_EQ(train->labels.data()[0], 9);
  EXPECT_EQ(train->images.data()[0], 0);
  int64_t sum = 0;
  for (size_t i = 0; i < 784; ++i) sum += train->images.data()[i];
  EXPECT_GT(sum, 784 * 20) << "first image should not be blank";
  int counts[10] = {};
  for (int64_t i = 0; i < 60000; ++i) counts[train->labels.data()[i]]++;
  for (int c : counts) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced
  absl::StatusOr<MnistSplit> test = loadFashionMnist(dir, "test");
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(test->labels.numel(), 10000);
}

}  // namespace
}  // namespace amp::rt
