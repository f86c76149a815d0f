#include "runtime/io/Npy.h"

#include <gtest/gtest.h>

#include "test/unit/io/IoTestUtil.h"

namespace amp::rt {
namespace {

using testing::expectError;
using testing::patterned;
using testing::putLE;
using testing::readBytes;
using testing::TempDir;
using testing::writeBytes;

#include "test/unit/io/NumpyFixtures.inc"

// An .npy file as numpy writes it: header dict + spaces + '\n', then the data.
std::string npyBytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict + "  \n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t lenBytes = major == 1 ? 2 : 4;
  out.append(lenBytes, '\0');
  putLE(out, 8, h.size(), static_cast<int>(lenBytes));
  return out + h + data;
}

TEST(IoNpy, RoundTripsEverySupportedDTypeBitwise) {
  TempDir dir;
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::U8, DType::Bool}) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{7}, Shape{3, 5}, Shape{2, 0, 4}, Shape{2, 3, 4, 5}}) {
      Tensor in = patterned(t, shape);
      std::string path = dir.file("t.npy");
      ASSERT_TRUE(writeNpy(path, in).ok());
      std::string bytes = readBytes(path);
      EXPECT_EQ((bytes.size() - in.nbytes()) % 64, 0u) << "header must be 64-byte aligned";
      absl::StatusOr<Tensor> out = readNpy(path);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_TRUE(out->bitwiseEquals(in)) << dtypeName(t) << shapeToString(shape);
    }
  }
}

TEST(IoNpy, WritesTheSameHeaderAsNumpy) {
  // kNpyF32 is laid out like numpy >= 1.23's np.save of a float32 [2, 3] array.
  Tensor t(DType::F32, {2, 3});
  absl::StatusOr<std::string> h = encodeNpyHeader(t);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 128u);
  EXPECT_EQ(*h, std::string(reinterpret_cast<const char*>(kNpyF32), 128));
  EXPECT_NE(encodeNpyHeader(Tensor(DType::U8, {5}))->find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(encodeNpyHeader(Tensor(DType::Bool, {}))->find("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
}

TEST(IoNpy, ReadsNumpyWrittenFile) {
  // Byte for byte what numpy >= 1.23 writes for np.arange(6, dtype='<f4').reshape(2, 3).
  absl::StatusOr<Tensor> t = decodeNpy(std::string_view(reinterpret_cast<const char*>(kNpyF32), sizeof kNpyF32), "fixture");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::F32);
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t->as<float>()[i], float(i));
}

TEST(IoNpy, ReadsVersions2And3AndDoubleQuotes) {
  TempDir dir;
  std::string data = std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  for (int major : {2, 3}) {
    std::string path = dir.file("v.npy");
    writeBytes(path, npyBytes("{\"descr\": \"<i4\", \"shape\": (2,), \"fortran_order\": False}", data, major));
    absl::StatusOr<Tensor> t = readNpy(path);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_EQ(t->dtype(), DType::I32);
    EXPECT_EQ(t->as<int32_t>()[1], 2);
  }
}

TEST(IoNpy, RankIsLimitedTo64OnReadAndWrite) {
  TempDir dir;
  Shape shape(65, 1);
  expectError(writeNpy(dir.file("r.npy"), Tensor(DType::U8, shape)), absl::StatusCode::kInvalidArgument,
              {"r.npy", "rank 65"});
  std::string dims;
  for (int i = 0; i < 65; ++i) dims += "1, ";
  writeBytes(dir.file("r.npy"), npyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': (" + dims + "), }", "x"));
  expectError(readNpy(dir.file("r.npy")).status(), absl::StatusCode::kDataLoss, {"r.npy", "more than 64"});
  shape.pop_back();
  ASSERT_TRUE(writeNpy(dir.file("r.npy"), Tensor(DType::U8, shape)).ok());
  EXPECT_EQ(readNpy(dir.file("r.npy"))->rank(), 64);
}

TEST(IoNpy, RefusesToWriteBf16AndFp8) {
  TempDir dir;
  for (DType t : {DType::BF16, DType::F8E4M3FN, DType::F8E5M2}) {
    std::string path = dir.file("x.npy");
    absl::Status s = writeNpy(path, Tensor(t, {2}));
    expectError(s, absl::StatusCode::kInvalidArgument, {"x.npy", "safetensors", std::string(dtypeName(t))});
    EXPECT_FALSE(std::ifstream(path).good()) << "nothing may be left behind";
  }
}

struct Corrupt {
  const char* label;
  std::string bytes;
  absl::StatusCode code;
  const char* what;
};

TEST(IoNpy, EveryCorruptionIsAClearError) {
  const std::string f4x2(8, '\0');
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string truncatedLen = npyBytes(good, f4x2);
  putLE(truncatedLen, 8, 5000, 2);
  const Corrupt cases[] = {
      {"empty", "", absl::StatusCode::kDataLoss, "empty file"},
      {"magic", "PK\x03\x04 not numpy at all", absl::StatusCode::kDataLoss, "bad magic"},
      {"short", "\x93NUM", absl::StatusCode::kDataLoss, "truncated"},
      {"no-len", std::string("\x93NUMPY\x01\x00\x10", 9), absl::StatusCode::kDataLoss, "truncated"},
      {"version", npyBytes(good, f4x2, 4), absl::StatusCode::kUnimplemented, "version 4.0"},
      {"header-len", truncatedLen, absl::StatusCode::kDataLoss, "header length 5000"},
      {"data-short", npyBytes(good, f4x2.substr(0, 5)), absl::StatusCode::kDataLoss, "truncated: expected 8 bytes"},
      {"data-long", npyBytes(good, f4x2 + "xx"), absl::StatusCode::kDataLoss, "2 unexpected trailing bytes"},
      {"fortran", npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f4x2),
       absl::StatusCode::kUnimplemented, "fortran_order"},
      {"big-endian", npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4x2),
       absl::StatusCode::kUnimplemented, "big-endian dtype '>f4'"},
      {"complex", npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", f4x2),
       absl::StatusCode::kUnimplemented, "unsupported dtype '<c8'"},
      {"object", npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", f4x2),
       absl::StatusCode::kUnimplemented, "unsupported dtype '|O'"},
      {"record", npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", f4x2),
       absl::StatusCode::kUnimplemented, "structured"},
      {"not-tuple", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", f4x2),
       absl::StatusCode::kDataLoss, "trailing comma"},
      {"neg-dim", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f4x2),
       absl::StatusCode::kDataLoss, "non-negative integers"},
      {"missing-key", npyBytes("{'descr': '<f4', 'shape': (2,), }", f4x2), absl::StatusCode::kDataLoss,
       "must have the keys"},
      {"extra-key", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f4x2),
       absl::StatusCode::kDataLoss, "unexpected key 'x'"},
      {"dup-key", npyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", f4x2),
       absl::StatusCode::kDataLoss, "duplicate key 'descr'"},
      {"bad-bool", npyBytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", f4x2),
       absl::StatusCode::kDataLoss, "True or False"},
      {"unterminated", npyBytes("{'descr': '<f4, 'fortran_order': False}", f4x2), absl::StatusCode::kDataLoss,
       "malformed header"},
      {"junk-after", npyBytes(good + " junk", f4x2), absl::StatusCode::kDataLoss, "after the header dict"},
      {"not-dict", npyBytes("['descr']", f4x2), absl::StatusCode::kDataLoss, "does not start with '{'"},
      {"huge-shape", npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", ""),
       absl::StatusCode::kDataLoss, "too large"},
  };
  TempDir dir;
  for (const Corrupt& c : cases) {
    std::string path = dir.file(std::string(c.label) + ".npy");
    writeBytes(path, c.bytes);
    absl::StatusOr<Tensor> t = readNpy(path);
    ASSERT_FALSE(t.ok()) << c.label;
    SCOPED_TRACE(c.label);
    expectError(t.status(), c.code, {path, c.what});
    // The in-memory decoder (used for .npz members) agrees, except on the empty-file wording.
    if (!c.bytes.empty()) {
      absl::StatusOr<Tensor> m = decodeNpy(c.bytes, "member");
      ASSERT_FALSE(m.ok());
      EXPECT_EQ(m.status().code(), c.code) << m.status();
    }
  }
}

TEST(IoNpy, MissingFileIsNotFound) {
  TempDir dir;
  absl::StatusOr<Tensor> t = readNpy(dir.file("nope.npy"));
  ASSERT_FALSE(t.ok());
  expectError(t.status(), absl::StatusCode::kNotFound, {"nope.npy", "no such file"});
}

}  // namespace
}  // namespace amp::rt
