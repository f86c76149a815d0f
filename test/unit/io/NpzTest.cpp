#include "runtime/io/Npz.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

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
Zip buildZipOfSize(const std::string& name, uint32_t usize, uint16_t method, const std::string& stored,
                  uint32_t crc) {
  auto w16 = [](std::string& s, uint32_t v) { s += char(v & 0xFF), s += char((v >> 8) & 0xFF); };
  auto w32 = [&](std::string& s, uint32_t v) { w16(s, v & 0xFFFF), w16(s, v >> 16); };
  Zip z;
  std::string& s = z.bytes;
  w32(s, 0x04034b50), w16(s, 20), w16(s, 0), w16(s, method), w16(s, 0), w16(s, 0x21), w32(s, crc);
  w32(s, uint32_t(stored.size())), w32(s, usize), w16(s, uint32_t(name.size())), w16(s, 0);
  s += name;
  z.dataAt = s.size();
  s += stored;
  z.centralAt = s.size();
  w32(s, 0x02014b50), w16(s, 20), w16(s, 20), w16(s, 0), w16(s, method), w16(s, 0), w16(s, 0x21), w32(s, crc);
  w32(s, uint32_t(stored.size())), w32(s, usize), w16(s, uint32_t(name.size()));
  w16(s, 0), w16(s, 0), w16(s, 0), w16(s, 0), w32(s, 0), w32(s, 0);
  s += name;
  z.eocdAt = s.size();
  w32(s, 0x06054b50), w16(s, 0), w16(s, 0), w16(s, 1), w16(s, 1);
  w32(s, uint32_t(z.eocdAt - z.centralAt)), w32(s, uint32_t(z.centralAt)), w16(s, 0);
  return z;
}
Zip buildZip(const std::string& name, const std::string& payload, uint16_t method, const std::string& stored,
             uint32_t crc) {
  return buildZipOfSize(name, uint32_t(payload.size()), method, stored, crc);
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
    add("deflate-bomb", b, absl::StatusCode::kResourceExhausted, {"member 'x.npy'", "refused as a zip bomb"});
  }
  {
    std::string b = defl.bytes;
    putLE(b, defl.centralAt + 24, 100 << 20, 4);  // 100 MiB: below the ratio limit's floor, but
    add("deflate-impossible", b, absl::StatusCode::kDataLoss, {"member 'x.npy'", "impossible"});  // > 1032:1
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

// A member of npy header + `zeros` zero bytes (a float32 array of zeros), deflated at level 9
// (run-length strategy: the same ~1028:1 as the default, twice as fast): as dense as deflate
// gets. Streamed so the test never holds the uncompressed bytes.
struct ZeroBomb {
  std::string npy;  // the uncompressed header; the zeros follow it
  uint64_t usize;
  uint32_t crc;
  std::string deflated;
};
ZeroBomb zeroBomb(uint64_t zeros) {
  ZeroBomb b;
  // The header by hand: a Tensor of that shape would allocate what the test must not.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(zeros / 4) + ",), }";
  dict += std::string(63 - (10 + dict.size()) % 64, ' ') + "\n";
  b.npy = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size() & 0xFF) + char(dict.size() >> 8) + dict;
  b.usize = b.npy.size() + zeros;
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_RLE);
  const std::string chunk(1 << 20, '\0');
  char out[1 << 16];
  auto pump = [&](const std::string& in, int flush) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = uInt(in.size());
    do {
      zs.next_out = reinterpret_cast<Bytef*>(out);
      zs.avail_out = sizeof out;
      deflate(&zs, flush);
      b.deflated.append(out, sizeof out - zs.avail_out);
    } while (zs.avail_out == 0);
  };
  uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(b.npy.data()), uInt(b.npy.size())));
  pump(b.npy, Z_NO_FLUSH);
  for (uint64_t left = zeros; left > 0;) {
    std::string part = left >= chunk.size() ? chunk : std::string(left, '\0');
    crc = uint32_t(crc32(crc, reinterpret_cast<const Bytef*>(part.data()), uInt(part.size())));
    pump(part, Z_NO_FLUSH);
    left -= part.size();
  }
  pump(std::string(), Z_FINISH);
  deflateEnd(&zs);
  b.crc = crc;
  return b;
}

TEST(IoNpz, ZipBombsAreRefusedBeforeDecompressing) {
  TempDir dir;
  // 512 MiB of zeros in 510 kB: within deflate's 1032:1, so only the ratio limit refuses it.
  ZeroBomb bomb = zeroBomb(uint64_t{512} << 20);
  ASSERT_GT(bomb.usize, bomb.deflated.size() * 1000);
  std::string path = dir.file("bomb.npz");
  writeBytes(path, buildZipOfSize("x.npy", uint32_t(bomb.usize), 8, bomb.deflated, bomb.crc).bytes);
  expectError(readNpz(path).status(), absl::StatusCode::kResourceExhausted,
              {path, ": member 'x.npy': refused as a zip bomb", "more than 1000:1 above 268435456 bytes"});

  // The same stream under a header that declares only 4 KiB: decompression stops at 4 KiB.
  writeBytes(path, buildZipOfSize("x.npy", 4096, 8, bomb.deflated, bomb.crc).bytes);
  expectError(readNpz(path).status(), absl::StatusCode::kDataLoss,
              {path, ": member 'x.npy'", "decompresses to more than the declared 4096 bytes"});

  // Three members that are each under the ratio limit's floor (100 MiB) but a bomb together.
  ZeroBomb part = zeroBomb(100 << 20);
  std::vector<std::string> names = {"m0", "m1", "m2"};
  std::string many;  // by hand: writeNpz would need the 300 MiB in memory
  {
    auto w16 = [](std::string& s, uint32_t v) { s += char(v & 0xFF), s += char((v >> 8) & 0xFF); };
    auto w32 = [&](std::string& s, uint32_t v) { w16(s, v & 0xFFFF), w16(s, v >> 16); };
    std::string central;
    for (int i = 0; i < 3; ++i) {
      std::string name = names[i] + ".npy";
      uint32_t offset = uint32_t(many.size());
      w32(many, 0x04034b50), w16(many, 20), w16(many, 0), w16(many, 8), w16(many, 0), w16(many, 0x21);
      w32(many, part.crc), w32(many, uint32_t(part.deflated.size())), w32(many, uint32_t(part.usize));
      w16(many, uint32_t(name.size())), w16(many, 0);
      many += name + part.deflated;
      w32(central, 0x02014b50), w16(central, 20), w16(central, 20), w16(central, 0), w16(central, 8);
      w16(central, 0), w16(central, 0x21), w32(central, part.crc), w32(central, uint32_t(part.deflated.size()));
      w32(central, uint32_t(part.usize)), w16(central, uint32_t(name.size()));
      w16(central, 0), w16(central, 0), w16(central, 0), w16(central, 0), w32(central, 0), w32(central, offset);
      central += name;
    }
    uint32_t cdAt = uint32_t(many.size());
    many += central;
    w32(many, 0x06054b50), w16(many, 0), w16(many, 0), w16(many, 3), w16(many, 3);
    w32(many, uint32_t(central.size())), w32(many, cdAt), w16(many, 0);
  }
  writeBytes(path, many);
  expectError(readNpz(path).status(), absl::StatusCode::kResourceExhausted,
              {path, ": member 'm2.npy': refused as a zip bomb: the deflated members up to it"});

  // Absolute limits: per member and for the archive (amp-run's --memory-limit).
  NpzReadOptions tight;
  tight.maxMemberBytes = 50 << 20;
  expectError(readNpz(path, tight).status(), absl::StatusCode::kResourceExhausted,
              {path, ": member 'm0.npy': uncompressed size", "above the limit of 52428800 bytes per member"});
  tight = NpzReadOptions();
  tight.maxTotalBytes = 150 << 20;
  expectError(readNpz(path, tight).status(), absl::StatusCode::kResourceExhausted,
              {path, ": member 'm1.npy': the members up to this one decompress to", "above the memory limit of 157286400"});
}

TEST(IoNpz, AllZerosArraysBelowTheRatioFloorLoad) {
  // np.savez_compressed of np.zeros: ~1028:1, more than the ratio limit, yet legitimate data.
  TempDir dir;
  Tensor zeros(DType::F32, {1 << 24});  // 64 MiB
  std::memset(zeros.data(), 0, zeros.nbytes());
  ASSERT_TRUE(writeNpz(dir.file("z.npz"), {{"z", &zeros}}, {/*compress=*/true}).ok());
  EXPECT_LT(readBytes(dir.file("z.npz")).size(), size_t{1} << 17);
  absl::StatusOr<std::vector<NamedTensor>> v = readNpz(dir.file("z.npz"));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE((*v)[0].tensor.bitwiseEquals(zeros));
  // With the floor lowered, the same file is over the ratio limit.
  NpzReadOptions strict;
  strict.ratioFreeBytes = 1 << 20;
  expectError(readNpz(dir.file("z.npz"), strict).status(), absl::StatusCode::kResourceExhausted,
              {"z.npz: member 'z.npy': refused as a zip bomb"});
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
