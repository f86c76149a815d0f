#include "runtime/io/Npz.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Npy.h"

namespace amp::rt {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50,
                   kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kMax16 = 0xFFFFu;
constexpr size_t kEocdLen = 22, kCentralLen = 46, kLocalLen = 30, kZip64EocdLen = 56,
                 kZip64LocatorLen = 20;
// Deflate cannot expand data by more than ~1032x; a larger claimed size is a lie, and checking
// it first stops a forged header from making us allocate gigabytes.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint16_t rd16(const char* p) { return uint16_t(uint8_t(p[0]) | uint8_t(p[1]) << 8); }
uint32_t rd32(const char* p) { return uint32_t(rd16(p)) | uint32_t(rd16(p + 2)) << 16; }
uint64_t rd64(const char* p) { return uint64_t(rd32(p)) | uint64_t(rd32(p + 4)) << 32; }
void wr16(std::string& s, uint16_t v) { s += char(v & 0xFF), s += char(v >> 8); }
void wr32(std::string& s, uint32_t v) { wr16(s, uint16_t(v)), wr16(s, uint16_t(v >> 16)); }
void wr64(std::string& s, uint64_t v) { wr32(s, uint32_t(v)), wr32(s, uint32_t(v >> 32)); }

uint32_t crc32Of(uint32_t crc, const void* p, size_t n) {
  return static_cast<uint32_t>(::crc32_z(crc, static_cast<const Bytef*>(p), n));
}

struct Entry {
  std::string name;
  uint16_t flags, method;
  uint32_t crc;
  uint64_t csize, usize, localOffset;
};

absl::Status dataLoss(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// Applies a ZIP64 extended-information extra field (id 0x0001) to the 0xFFFFFFFF fields.
absl::Status applyZip64Extra(std::string_view extra, Entry& e, bool needU, bool needC, bool needO,
                             const std::string& where) {
  size_t p = 0;
  while (p + 4 <= extra.size()) {
    uint16_t id = rd16(extra.data() + p), len = rd16(extra.data() + p + 2);
    if (p + 4 + len > extra.size()) return dataLoss(where, "extra field overruns its record");
    if (id == 0x0001) {
      std::string_view f = extra.substr(p + 4, len);
      size_t q = 0;
      auto take = [&](uint64_t& v) {
        if (q + 8 > f.size()) return false;
        v = rd64(f.data() + q);
        q += 8;
        return true;
      };
      if ((needU && !take(e.usize)) || (needC && !take(e.csize)) ||
          (needO && !take(e.localOffset)))
        return dataLoss(where, "ZIP64 extra field too short");
      return absl::OkStatus();
    }
    p += 4 + len;
  }
  if (needU || needC || needO) return dataLoss(where, "sizes are 0xFFFFFFFF but no ZIP64 extra field");
  return absl::OkStatus();
}

// Raw-deflate decompression of exactly `usize` bytes.
absl::StatusOr<std::string> inflateRaw(std::string_view in, uint64_t usize,
                                       const std::string& where) {
  if (usize > in.size() * kMaxDeflateRatio + 1024)
    return dataLoss(where, absl::StrCat("declared uncompressed size ", usize,
                                        " is impossible for ", in.size(), " compressed bytes"));
  std::string out(static_cast<size_t>(usize), '\0');
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)  // negative: raw deflate, no zlib/gzip wrapper
    return absl::InternalError(absl::StrCat(where, ": inflateInit2 failed"));
  size_t inPos = 0, outPos = 0;
  int rc = Z_OK;
  // zlib counts in uInt; feed at most 1 GiB per call so >4 GiB members work.
  constexpr size_t kChunk = size_t{1} << 30;
  while (rc == Z_OK) {
    size_t inN = std::min(kChunk, in.size() - inPos), outN = std::min(kChunk, out.size() - outPos);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + inPos));
    zs.avail_in = static_cast<uInt>(inN);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + outPos);
    zs.avail_out = static_cast<uInt>(outN);
    rc = inflate(&zs, Z_NO_FLUSH);
    inPos += inN - zs.avail_in;
    outPos += outN - zs.avail_out;
    if (rc == Z_OK && inN == zs.avail_in && outN == zs.avail_out) {
      rc = Z_BUF_ERROR;  // no progress possible
    }
  }
  std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (rc == Z_STREAM_END && outPos == out.size()) return out;
  if (rc == Z_STREAM_END)
    return dataLoss(where, absl::StrCat("deflate data decompressed to ", outPos,
                                        " bytes, header says ", usize));
  if (rc == Z_BUF_ERROR && outPos == out.size())  // output full but the stream goes on
    return dataLoss(where, absl::StrCat("deflate data decompresses to more than the declared ",
                                        usize, " bytes"));
  if (rc == Z_BUF_ERROR)
    return dataLoss(where, "truncated deflate data");
  return dataLoss(where, absl::StrCat("corrupt deflate data (", msg.empty() ? "zlib error" : msg, ")"));
}

uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return uint64_t{1} << 36;
  return uint64_t(pages) * uint64_t(size);
}

// The zip-bomb guards of NpzReadOptions, on the declared sizes of every member before any is
// decompressed (decompression then stops at the declared size, so these bound the actual output).
absl::Status checkSizeLimits(const std::string& path, const std::vector<Entry>& list,
                             const NpzReadOptions& o) {
  const uint64_t maxTotal = o.maxTotalBytes ? o.maxTotalBytes : physicalMemoryBytes();
  // 128 bits: ZIP64 sizes are arbitrary 64-bit numbers and the ratio multiplies them.
  unsigned __int128 total = 0, deflatedU = 0, deflatedC = 0;
  auto overRatio = [&](unsigned __int128 u, unsigned __int128 c) {
    return u > o.ratioFreeBytes && u > c * o.maxRatio;
  };
  for (const Entry& e : list) {
    std::string where = absl::StrCat(path, ": member '", e.name, "'");
    if (e.usize > o.maxMemberBytes)
      return absl::ResourceExhaustedError(absl::StrCat(
          where, ": uncompressed size ", e.usize, " bytes is above the limit of ", o.maxMemberBytes,
          " bytes per member"));
    total += e.usize;
    if (total > maxTotal)
      return absl::ResourceExhaustedError(absl::StrCat(
          where, ": the members up to this one decompress to ", uint64_t(total),
          " bytes, above the memory limit of ", maxTotal, " bytes",
          o.maxTotalBytes ? "" : " (the machine's physical memory)"));
    if (e.method != 8) continue;  // stored: bounded by the file's own size
    deflatedU += e.usize;
    deflatedC += e.csize;
    if (overRatio(e.usize, e.csize) || overRatio(deflatedU, deflatedC))
      return absl::ResourceExhaustedError(absl::StrCat(
          where, ": refused as a zip bomb: ", overRatio(e.usize, e.csize) ? "it" : "the deflated members up to it",
          " would decompress from ", uint64_t(overRatio(e.usize, e.csize) ? e.csize : deflatedC), " to ",
          uint64_t(overRatio(e.usize, e.csize) ? e.usize : deflatedU), " bytes, more than ", o.maxRatio,
          ":1 above ", o.ratioFreeBytes, " bytes (save a very compressible array stored, np.savez)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<NamedTensor>> readNpz(const std::string& path, const NpzReadOptions& options) {
  absl::StatusOr<InputFile> f = InputFile::open(path);
  if (!f.ok()) return f.status();
  const uint64_t size = f->size();
  if (size == 0) return dataLoss(path, "empty file (0 bytes)");
  if (size < kEocdLen) {
    absl::StatusOr<std::string> head = f->readString(0, size);
    if (!head.ok()) return head.status();
    if (head->substr(0, 2) != std::string_view("PK", std::min<size_t>(2, head->size())))
      return dataLoss(path, "bad magic: not a ZIP/.npz file");
    return dataLoss(path, absl::StrCat("truncated: ", size, " bytes is too short for a ZIP file"));
  }

  // The end-of-central-directory record sits in the last 22..22+65535 bytes (comment).
  uint64_t tailLen = std::min<uint64_t>(size, kEocdLen + 0xFFFF);
  absl::StatusOr<std::string> tail = f->readString(size - tailLen, tailLen);
  if (!tail.ok()) return tail.status();
  int64_t at = -1;
  for (int64_t i = int64_t(tailLen - kEocdLen); i >= 0; --i) {
    const char* p = tail->data() + i;
    if (rd32(p) == kEocdSig && uint64_t(i) + kEocdLen + rd16(p + 20) <= tailLen) {
      at = i;
      break;
    }
  }
  if (at < 0) {
    absl::StatusOr<std::string> head = f->readString(0, 4);
    if (head.ok() && rd32(head->data()) != kLocalSig)
      return dataLoss(path, "bad magic: not a ZIP/.npz file");
    return dataLoss(path, "truncated: end of central directory record not found");
  }
  const uint64_t eocdPos = size - tailLen + uint64_t(at);
  const char* eo = tail->data() + at;
  uint64_t entries = rd16(eo + 10), cdSize = rd32(eo + 12), cdOffset = rd32(eo + 16);
  if (rd16(eo + 4) != 0 || rd16(eo + 6) != 0 || rd16(eo + 8) != rd16(eo + 10))
    return absl::UnimplementedError(absl::StrCat(path, ": multi-disk ZIP archives are not supported"));
  uint64_t cdEnd = eocdPos;  // the central directory must end where the next record starts
  if (entries == kMax16 || cdSize == kMax32 || cdOffset == kMax32) {
    if (eocdPos < kZip64LocatorLen) return dataLoss(path, "ZIP64 locator missing");
    absl::StatusOr<std::string> loc = f->readString(eocdPos - kZip64LocatorLen, kZip64LocatorLen);
    if (!loc.ok()) return loc.status();
    if (rd32(loc->data()) != kZip64LocatorSig) return dataLoss(path, "ZIP64 locator missing");
    uint64_t z64Pos = rd64(loc->data() + 8);
    if (z64Pos > eocdPos - kZip64LocatorLen || eocdPos - kZip64LocatorLen - z64Pos < kZip64EocdLen)
      return dataLoss(path, "ZIP64 end of central directory offset out of range");
    absl::StatusOr<std::string> z = f->readString(z64Pos, kZip64EocdLen);
    if (!z.ok()) return z.status();
    if (rd32(z->data()) != kZip64EocdSig) return dataLoss(path, "bad ZIP64 end of central directory signature");
    entries = rd64(z->data() + 32);
    cdSize = rd64(z->data() + 40);
    cdOffset = rd64(z->data() + 48);
    cdEnd = z64Pos;
  }
  if (cdOffset > cdEnd || cdSize != cdEnd - cdOffset)
    return dataLoss(path, absl::StrCat("central directory (offset ", cdOffset, ", size ", cdSize,
                                       ") does not end at its end record (offset ", cdEnd, ")"));
  if (entries > cdSize / kCentralLen)
    return dataLoss(path, absl::StrCat("central directory too small for ", entries, " entries"));
  absl::StatusOr<std::string> cd = f->readString(cdOffset, cdSize);
  if (!cd.ok()) return cd.status();

  std::vector<Entry> list;
  size_t p = 0;
  for (uint64_t k = 0; k < entries; ++k) {
    if (cd->size() - p < kCentralLen || rd32(cd->data() + p) != kCentralSig)
      return dataLoss(path, absl::StrCat("corrupt central directory entry ", k));
    const char* c = cd->data() + p;
    Entry e;
    e.flags = rd16(c + 8);
    e.method = rd16(c + 10);
    e.crc = rd32(c + 16);
    e.csize = rd32(c + 20);
    e.usize = rd32(c + 24);
    size_t nameLen = rd16(c + 28), extraLen = rd16(c + 30), commentLen = rd16(c + 32);
    e.localOffset = rd32(c + 42);
    if (cd->size() - p - kCentralLen < nameLen + extraLen + commentLen)
      return dataLoss(path, absl::StrCat("corrupt central directory entry ", k));
    e.name = cd->substr(p + kCentralLen, nameLen);
    std::string where = absl::StrCat(path, ": member '", e.name, "'");
    if (absl::Status s = applyZip64Extra(std::string_view(*cd).substr(p + kCentralLen + nameLen, extraLen), e,
                                         e.usize == kMax32, e.csize == kMax32,
                                         e.localOffset == kMax32, where);
        !s.ok())
      return s;
    p += kCentralLen + nameLen + extraLen + commentLen;
    list.push_back(std::move(e));
  }
  if (absl::Status s = checkSizeLimits(path, list, options); !s.ok()) return s;

  std::vector<NamedTensor> out;
  std::set<std::string> seen;
  for (const Entry& e : list) {
    std::string where = absl::StrCat(path, ": member '", e.name, "'");
    if (e.flags & 0x1) return absl::UnimplementedError(absl::StrCat(where, ": encrypted members are not supported"));
    if (e.method != 0 && e.method != 8)
      return absl::UnimplementedError(absl::StrCat(
          where, ": compression method ", e.method, " is not supported (only stored and deflate)"));
    if (e.name.size() < 4 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
      return absl::UnimplementedError(absl::StrCat(where, ": not a .npy member"));
    std::string name = e.name.substr(0, e.name.size() - 4);
    if (!seen.insert(name).second) return dataLoss(where, "duplicate member name");
    // Local header: its own name/extra lengths locate the data; sizes come from the central
    // directory (the local copy may be zero when a data descriptor follows).
    if (e.localOffset > cdOffset || cdOffset - e.localOffset < kLocalLen)
      return dataLoss(where, absl::StrCat("local header offset ", e.localOffset, " out of range"));
    absl::StatusOr<std::string> lh = f->readString(e.localOffset, kLocalLen);
    if (!lh.ok()) return lh.status();
    if (rd32(lh->data()) != kLocalSig) return dataLoss(where, "bad local header signature");
    uint64_t dataPos = e.localOffset + kLocalLen + rd16(lh->data() + 26) + rd16(lh->data() + 28);
    if (dataPos > cdOffset || e.csize > cdOffset - dataPos)
      return dataLoss(where, absl::StrCat("truncated: ", e.csize, " bytes of data at offset ",
                                          dataPos, " run past the central directory at ", cdOffset));
    absl::StatusOr<std::string> lname = f->readString(e.localOffset + kLocalLen, rd16(lh->data() + 26));
    if (!lname.ok()) return lname.status();
    if (*lname != e.name) return dataLoss(where, "local header name differs from the central directory");
    absl::StatusOr<std::string> raw = f->readString(dataPos, e.csize);
    if (!raw.ok()) return raw.status();
    if (e.method == 8) {
      raw = inflateRaw(*raw, e.usize, where);
      if (!raw.ok()) return raw.status();
    } else if (e.csize != e.usize) {
      return dataLoss(where, absl::StrCat("stored member has compressed size ", e.csize,
                                          " but uncompressed size ", e.usize));
    }
    uint32_t crc = crc32Of(0, raw->data(), raw->size());
    if (crc != e.crc)
      return dataLoss(where, absl::StrFormat("CRC mismatch (stored %08x, computed %08x)", e.crc, crc));
    absl::StatusOr<Tensor> t = decodeNpy(*raw, where);
    if (!t.ok()) return t.status();
    out.push_back({std::move(name), std::move(*t)});
  }
  return out;
}

absl::Status writeNpz(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                      const NpzWriteOptions& options) {
  std::set<std::string> names;
  for (const NamedTensorRef& r : tensors) {
    if (r.name.empty() || r.tensor == nullptr)
      return absl::InvalidArgumentError(absl::StrCat(path, ": empty name or null tensor"));
    if (!names.insert(r.name).second)
      return absl::InvalidArgumentError(absl::StrCat(path, ": duplicate tensor name '", r.name, "'"));
    if (r.name.size() + 4 > 0xFFFF)
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor name too long"));
  }
  absl::StatusOr<AtomicFile> f = AtomicFile::create(path);
  if (!f.ok()) return f.status();
  constexpr uint16_t kDosTime = 0, kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01 00:00
  std::string central;
  for (const NamedTensorRef& r : tensors) {
    const Tensor& t = *r.tensor;
    absl::StatusOr<std::string> header = encodeNpyHeader(t);
    if (!header.ok())
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", r.name, "': ", header.status().message()));
    std::string name = r.name + ".npy";
    uint64_t usize = header->size() + t.nbytes();
    uint32_t crc = crc32Of(crc32Of(0, header->data(), header->size()), t.data(), t.nbytes());
    std::string deflated;
    if (options.compress) {
      // Whole-member compression in memory: npz is for data sets and debugging, not the
      // multi-GB checkpoint path (that is safetensors).
      if (usize > 0xFFFFFFFFu)  // one deflate() call below takes a 32-bit length
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": tensor '", r.name, "': compressed members above 4 GiB are not supported; write it stored"));
      std::string npy = *header;
      npy.append(reinterpret_cast<const char*>(t.data()), t.nbytes());
      z_stream zs;
      std::memset(&zs, 0, sizeof zs);
      if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return absl::InternalError(absl::StrCat(path, ": deflateInit2 failed"));
      deflated.resize(deflateBound(&zs, npy.size()));
      zs.next_in = reinterpret_cast<Bytef*>(npy.data());
      zs.avail_in = static_cast<uInt>(npy.size());
      zs.next_out = reinterpret_cast<Bytef*>(deflated.data());
      zs.avail_out = static_cast<uInt>(deflated.size());
      int rc = deflate(&zs, Z_FINISH);
      deflated.resize(zs.total_out);
      deflateEnd(&zs);
      if (rc != Z_STREAM_END)
        return absl::InternalError(absl::StrCat(path, ": deflate failed for '", r.name, "'"));
    }
    uint64_t csize = options.compress ? deflated.size() : usize;
    uint64_t offset = f->bytesWritten();
    bool z64 = options.forceZip64 || usize >= kMax32 || csize >= kMax32 || offset >= kMax32;
    uint16_t version = z64 ? 45 : 20;
    uint16_t flags = std::any_of(name.begin(), name.end(), [](char c) { return c & 0x80; }) ? 0x0800 : 0;
    uint16_t method = options.compress ? 8 : 0;

    std::string local;
    wr32(local, kLocalSig);
    wr16(local, version), wr16(local, flags), wr16(local, method);
    wr16(local, kDosTime), wr16(local, kDosDate), wr32(local, crc);
    wr32(local, z64 ? kMax32 : uint32_t(csize)), wr32(local, z64 ? kMax32 : uint32_t(usize));
    wr16(local, uint16_t(name.size())), wr16(local, z64 ? 20 : 0);
    local += name;
    if (z64) wr16(local, 1), wr16(local, 16), wr64(local, usize), wr64(local, csize);
    if (absl::Status s = f->write(local); !s.ok()) return s;
    if (options.compress) {
      if (absl::Status s = f->write(deflated); !s.ok()) return s;
    } else {
      if (absl::Status s = f->write(*header); !s.ok()) return s;
      if (t.nbytes()) {
        if (absl::Status s = f->write(t.data(), t.nbytes()); !s.ok()) return s;
      }
    }

    wr32(central, kCentralSig);
    wr16(central, uint16_t(3 << 8 | version));  // made by: Unix
    wr16(central, version), wr16(central, flags), wr16(central, method);
    wr16(central, kDosTime), wr16(central, kDosDate), wr32(central, crc);
    wr32(central, z64 ? kMax32 : uint32_t(csize)), wr32(central, z64 ? kMax32 : uint32_t(usize));
    wr16(central, uint16_t(name.size())), wr16(central, z64 ? 28 : 0);
    wr16(central, 0), wr16(central, 0), wr16(central, 0);  // comment, disk, internal attributes
    wr32(central, 0100644u << 16);                          // external: regular file rw-r--r--
    wr32(central, z64 ? kMax32 : uint32_t(offset));
    central += name;
    if (z64) wr16(central, 1), wr16(central, 24), wr64(central, usize), wr64(central, csize), wr64(central, offset);
  }
  uint64_t cdOffset = f->bytesWritten(), cdSize = central.size(), n = tensors.size();
  bool z64 = options.forceZip64 || n >= kMax16 || cdOffset >= kMax32 || cdSize >= kMax32;
  if (z64) {
    uint64_t z64Pos = cdOffset + cdSize;
    wr32(central, kZip64EocdSig), wr64(central, kZip64EocdLen - 12);
    wr16(central, 3 << 8 | 45), wr16(central, 45), wr32(central, 0), wr32(central, 0);
    wr64(central, n), wr64(central, n), wr64(central, cdSize), wr64(central, cdOffset);
    wr32(central, kZip64LocatorSig), wr32(central, 0), wr64(central, z64Pos), wr32(central, 1);
  }
  wr32(central, kEocdSig), wr16(central, 0), wr16(central, 0);
  wr16(central, z64 ? kMax16 : uint16_t(n)), wr16(central, z64 ? kMax16 : uint16_t(n));
  wr32(central, z64 ? kMax32 : uint32_t(cdSize)), wr32(central, z64 ? kMax32 : uint32_t(cdOffset));
  wr16(central, 0);
  if (absl::Status s = f->write(central); !s.ok()) return s;
  return f->commit();
}

}  // namespace amp::rt
