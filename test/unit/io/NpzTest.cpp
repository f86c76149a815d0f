#include "runtime/io/Npz.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "runtime/io/Npy.h"
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

std::string asString(const unsigned char* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

void expectNumpyFixtureContents(const std::vector<NamedTensor>& v) {
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].name, "a");
  EXPECT_EQ(v[0].tensor.dtype(), DType::F32);
  EXPECT_EQ(v[0].tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(v[0].tensor.as<float>()[5], 5.0f);
  EXPECT_EQ(v[1].name, "b");
  EXPECT_EQ(v[1].tensor.dtype(), DType::I64);
  EXPECT_EQ(v[1].tensor.as<int64_t>()[0], -1);
  EXPECT_EQ(v[1].tensor.as<int64_t>()[3], int64_t{1} << 40);
  EXPECT_EQ(v[2].name, "scalar");
  EXPECT_EQ(v[2].tensor.shape(), Shape{});
  EXPECT_EQ(v[2].tensor.data()[0], 7);
  EXPECT_EQ(v[3].name, "mask");
  EXPECT_EQ(v[3].tensor.dtype(), DType::Bool);
  EXPECT_EQ(v[3].tensor.data()[2], 1);
}

TEST(IoNpz, ReadsSavezStoredArchive) {
  // Written by CPython's zipfile the way np.savez does (ZIP64 extra in every local header).
  TempDir dir;
  writeBytes(dir.file("s.npz"), asString(kNpzStored, sizeof kNpzStored));
  absl::StatusOr<std::vector<NamedTensor>> v = readNpz(dir.file("s.npz"));
  ASSERT_TRUE(v.ok()) << v.status();
  expectNumpyFixtureContents(*v);
}

TEST(IoNpz, ReadsSavezCompressedArchive) {
  TempDir dir;
  writeBytes(dir.file("c.npz"), asString(kNpzDeflate, sizeof kNpzDeflate));
  absl::StatusOr<std::vector<NamedTensor>> v = readNpz(dir.file("c.npz"));
  ASSERT_TRUE(v.ok()) << v.status();
  expectNumpyFixtureContents(*v);
}

TEST(IoNpz, RoundTripsAllDTypesStoredDeflateAndZip64) {
  TempDir dir;
  std::vector<Tensor> ts;
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::U8, DType::Bool})
    ts.push_back(patterned(t, {3, 17}, static_cast<uint8_t>(ts.size())));
  ts.push_back(Tensor(DType::F32, {0, 4}));
  ts.push_back(Tensor(DType::F32, {100000}));  // zeros: compresses well
  std::vector<NamedTensorRef> refs;
  for (size_t i = 0; i < ts.size(); ++i) refs.push_back({"layer" + std::to_string(i) + "/w", &ts[i]});
  for (bool compress : {false, true}) {
    for (bool zip64 : {false, true}) {
      std::string path = dir.file("rt.npz");
      ASSERT_TRUE(writeNpz(path, refs, {compress, zip64}).ok());
      if (compress) {
        EXPECT_LT(readBytes(path).size(), 100000u);
      }
      absl::StatusOr<std::vector<NamedTensor>> back = readNpz(path);
      ASSERT_TRUE(back.ok()) << back.status();
      ASSERT_EQ(back->size(), ts.size());
      for (size_t i = 0; i < ts.size(); ++i) {
        EXPECT_EQ((*back)[i].name, refs[i].name);
        EXPECT_TRUE((*back)[i].tensor.bitwiseEquals(ts[i])) << i << " compress=" << compress;
      }
    }
  }
}

TEST(IoNpz, WriterIsDeterministic) {
  TempDir dir;
  Tensor t = patterned(DType::F32, {4});
  ASSERT_TRUE(writeNpz(dir.file("a.npz"), {{"x", &t}}).ok());
  ASSERT_TRUE(writeNpz(dir.file("b.npz"), {{"x", &t}}).ok());
  EXPECT_EQ(readBytes(dir.file("a.npz")), readBytes(dir.file("b.npz")));
}

TEST(IoNpz, WriterRejectsBadInput) {
  TempDir dir;
  Tensor t(DType::F32, {2}), b(DType::BF16, {2});
  expectError(writeNpz(dir.file("d.npz"), {{"x", &t}, {"x", &t}}), absl::StatusCode::kInvalidArgument,
              {"d.npz", "duplicate tensor name 'x'"});
  expectError(writeNpz(dir.file("e.npz"), {{"", &t}}), absl::StatusCode::kInvalidArgument, {"e.npz", "empty name"});
  expectError(writeNpz(dir.file("b.npz"), {{"w", &b}}), absl::StatusCode::kInvalidArgument,
              {"b.npz", "tensor 'w'", "safetensors"});
  EXPECT_FALSE(std::ifstream(dir.file("b.npz")).good());
}

// Builds a one-member archive by hand (so tests can corrupt any field).
struct Zip {
  std::string bytes;
  size_t localAt = 0, centralAt = 0, eocdAt = 0, dataAt = 0;
};
Zip buildZip(const std::string& name, const std::string& payload, uint16_t method, const std::string& stored,
             uint32_t crc) {
  auto w16 = [](std::string& s, uint32_t v) { s += char(v & 0xFF), s += char((v >> 8) & 0xFF); };
  auto w32 = [&](std::string& s, uint32_t v) { w16(s, v & 0xFFFF), w16(s, v >> 16); };
  Zip z;
  std::string& s = z.bytes;
  w32(s, 0x04034b50), w16(s, 20), w16(s, 0), w16(s, method), w16(s, 0), w16(s, 0x21), w32(s, crc);
  w32(s, uint32_t(stored.size())), w32(s, uint32_t(payload.size())), w16(s, uint32_t(name.size())), w16(s, 0);
  s += name;
  z.dataAt = s.size();
  s += stored;
  z.centralAt = s.size();
  w32(s, 0x02014b50), w16(s, 20), w16(s, 20), w16(s, 0), w16(s, method), w16(s, 0), w16(s, 0x21), w32(s, crc);
  w32(s, uint32_t(stored.size())), w32(s, uint32_t(payload.size())), w16(s, uint32_t(name.size()));
  w16(s, 0), w16(s, 0), w16(s, 0), w16(s, 0), w32(s, 0), w32(s, 0);
  s += name;
  z.eocdAt = s.size();
  w32(s, 0x06054b50), w16(s, 0), w16(s, 0), w16(s, 1), w16(s, 1);
  w32(s, uint32_t(z.eocdAt - z.centralAt)), w32(s, uint32_t(z.centralAt)), w16(s, 0);
  return z;
}

uint32_t crcOf(const std::string& s) { return uint32_t(crc32(0, reinterpret_cast<const Bytef*>(s.data()), uInt(s.size()))); }

std::string rawDeflate(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = uInt(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string npyOf(const Tensor& t) {
  return *encodeNpyHeader(t) + std::string(reinterpret_cast<const char*>(t.data()), t.nbytes());
}

TEST(IoNpz, HandBuiltStoredAndDeflateArchivesRead) {
  TempDir dir;
  Tensor t = patterned(DType::I32, {5, 5});
  std::string npy = npyOf(t);
  for (uint16_t method : {0, 8}) {
    Zip z = buildZip("w.npy", npy, method, method ? rawDeflate(npy) : npy, crcOf(npy));
    writeBytes(dir.file("h.npz"), z.bytes);
    absl::StatusOr<std::vector<NamedTensor>> v = readNpz(dir.file("h.npz"));
    ASSERT_TRUE(v.ok()) << v.status();
    ASSERT_EQ(v->size(), 1u);
    EXPECT_TRUE((*v)[0].tensor.bitwiseEquals(t));
  }
}

struct Corrupt {
  const char* label;
  std::string bytes;
  absl::StatusCode code;
  std::vector<std::string> what;
};

TEST(IoNpz, EveryCorruptionIsAClearError) {
  Tensor t = patterned(DType::F32, {4, 4});
  const std::string npy = npyOf(t);
  const std::string deflated = rawDeflate(npy);
  const Zip stored = buildZip("x.npy", npy, 0, npy, crcOf(npy));
  const Zip defl = buildZip("x.npy", npy, 8, deflated, crcOf(npy));
  std::vector<Corrupt> cases;
  auto add = [&](const char* label, std::string bytes, absl::StatusCode code, std::vector<std::string> what) {
    cases.push_back({label, std::move(bytes), code, std::move(what)});
  };
  add("empty", "", absl::StatusCode::kDataLoss, {"empty file"});
  add("tiny", "PK\x03", absl::StatusCode::kDataLoss, {"truncated"});
  add("not-zip", std::string(100, 'x'), absl::StatusCode::kDataLoss, {"bad magic"});
  add("cut-tail", stored.bytes.substr(0, stored.bytes.size() - 10), absl::StatusCode::kDataLoss,
      {"end of central directory record not found"});
  {
    std::string b = stored.bytes;
    b[stored.dataAt + 70] ^= 0x40;
    add("crc", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "CRC mismatch"});
  }
  {
    std::string b = defl.bytes;
    b[defl.dataAt] = char(0xff);  // invalid block type
    add("deflate-garbage", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "corrupt deflate data"});
  }
  {
    Zip z = buildZip("x.npy", npy, 8, deflated.substr(0, deflated.size() / 2), crcOf(npy));
    add("deflate-truncated", z.bytes, absl::StatusCode::kDataLoss, {"member 'x.npy'", "truncated deflate data"});
  }
  {
    Zip z = buildZip("x.npy", npy + "zz", 8, deflated, crcOf(npy));
    add("deflate-short", z.bytes, absl::StatusCode::kDataLoss, {"member 'x.npy'", "decompressed to"});
  }
  {
    Zip z = buildZip("x.npy", npy.substr(0, 10), 8, deflated, crcOf(npy));
    add("deflate-long", z.bytes, absl::StatusCode::kDataLoss, {"member 'x.npy'", "more than the declared"});
  }
  {
    std::string b = defl.bytes;
    putLE(b, defl.centralAt + 24, 0x7FFFFFFF, 4);  // claims 2 GiB from a few hundred bytes
    add("deflate-bomb", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "impossible"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.centralAt + 10, 12, 2);  // bzip2
    add("method", b, absl::StatusCode::kUnimplemented, {"member 'x.npy'", "compression method 12"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.centralAt + 8, 1, 2);
    add("encrypted", b, absl::StatusCode::kUnimplemented, {"member 'x.npy'", "encrypted"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.centralAt + 20, 1000, 4);
    putLE(b, stored.centralAt + 24, 1000, 4);
    add("size-past-end", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "truncated"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.centralAt + 24, 5, 4);
    add("stored-size-mismatch", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "stored member"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.centralAt + 42, 0x10000, 4);
    add("local-offset", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "local header offset"});
  }
  {
    std::string b = stored.bytes;
    b[0] = 'Q';
    add("local-sig", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "bad local header signature"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.eocdAt + 16, 3, 4);  // central directory offset
    add("cd-offset", b, absl::StatusCode::kDataLoss, {"central directory"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.eocdAt + 8, 0xFFFF, 2);
    putLE(b, stored.eocdAt + 10, 0xFFFF, 2);
    add("zip64-no-locator", b, absl::StatusCode::kDataLoss, {"ZIP64 locator missing"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.centralAt + 24, 0xFFFFFFFF, 4);
    add("zip64-no-extra", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "no ZIP64 extra field"});
  }
  {
    std::string b = stored.bytes;
    putLE(b, stored.eocdAt + 4, 1, 2);
    add("multi-disk", b, absl::StatusCode::kUnimplemented, {"multi-disk"});
  }
  {
    Zip z = buildZip("x.txt", npy, 0, npy, crcOf(npy));
    add("not-npy", z.bytes, absl::StatusCode::kUnimplemented, {"member 'x.txt'", "not a .npy member"});
  }
  {
    std::string bad = npy;
    bad[0] = 'X';
    Zip z = buildZip("x.npy", bad, 0, bad, crcOf(bad));
    add("member-bad-npy", z.bytes, absl::StatusCode::kDataLoss, {"member 'x.npy'", "bad magic"});
  }
  {
    std::string fortran = npy;
    size_t at = fortran.find("False");
    fortran.replace(at, 5, "True ");
    Zip z = buildZip("x.npy", fortran, 0, fortran, crcOf(fortran));
    add("member-fortran", z.bytes, absl::StatusCode::kUnimplemented, {"member 'x.npy'", "fortran_order"});
  }
  TempDir dir;
  for (const Corrupt& c : cases) {
    SCOPED_TRACE(c.label);
    std::string path = dir.file(std::string(c.label) + ".npz");
    writeBytes(path, c.bytes);
    absl::StatusOr<std::vector<NamedTensor>> v = readNpz(path);
    ASSERT_FALSE(v.ok());
    std::vector<std::string> what = c.what;
    what.push_back(path);
    for (const std::string& w : what) expectError(v.status(), c.code, {w});
  }
}

TEST(IoNpz, DuplicateMembersAndMissingFile) {
  TempDir dir;
  Tensor t = patterned(DType::U8, {3});
  // Two members named x.npy: write "x" and "y", then rename "y.npy" in place (names are not
  // covered by the CRC).
  Tensor u = patterned(DType::U8, {3}, 9);
  ASSERT_TRUE(writeNpz(dir.file("d.npz"), {{"x", &t}, {"y", &u}}).ok());
  std::string b = readBytes(dir.file("d.npz"));
  for (size_t at = b.find("y.npy"); at != std::string::npos; at = b.find("y.npy")) b[at] = 'x';
  writeBytes(dir.file("d.npz"), b);
  expectError(readNpz(dir.file("d.npz")).status(), absl::StatusCode::kDataLoss,
              {"d.npz", "member 'x.npy'", "duplicate member name"});
  expectError(readNpz(dir.file("none.npz")).status(), absl::StatusCode::kNotFound, {"none.npz", "no such file"});
}

}  // namespace
}  // namespace amp::rt
