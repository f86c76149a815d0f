#include "runtime/io/Idx.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/NamedTensor.h"

namespace amp::rt {
namespace {

// Deflate expands at most ~1032x; a header claiming more than that from the compressed size is
// corrupt, and rejecting it up front keeps a forged header from forcing a huge allocation.
constexpr uint64_t kMaxGzipRatio = 1032;

// Sequential reader over a plain or gzip file.
class Stream {
 public:
  Stream(const InputFile& f, bool gz) : f_(f) {
    if (gz) {
      int fd = ::dup(f.fd());
      if (fd >= 0) {
        gz_ = ::gzdopen(fd, "rb");
        if (!gz_) ::close(fd);
        else ::gzbuffer(gz_, 1 << 16);
      }
    }
  }
  ~Stream() {
    if (gz_) ::gzclose(gz_);
  }
  bool openFailed(bool gz) const { return gz && !gz_; }

  // Reads up to n bytes; fewer only at end of data. Errors are DataLoss naming the file.
  absl::StatusOr<uint64_t> read(void* dst, uint64_t n) {
    char* p = static_cast<char*>(dst);
    uint64_t got = 0;
    if (!gz_) {
      uint64_t k = std::min<uint64_t>(n, f_.size() - pos_);
      if (absl::Status s = f_.readAt(pos_, p, k); !s.ok()) return s;
      pos_ += k;
      return k;
    }
    while (got < n) {
      unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(n - got, INT_MAX / 2));
      int k = ::gzread(gz_, p + got, chunk);
      if (k < 0 || (k == 0 && gzError() != Z_OK)) {
        int errnum = Z_OK;
        const char* msg = ::gzerror(gz_, &errnum);
        if (errnum == Z_BUF_ERROR)
          return absl::DataLossError(absl::StrCat(f_.path(), ": truncated gzip stream"));
        return absl::DataLossError(absl::StrCat(f_.path(), ": corrupt gzip data (",
                                                msg ? msg : "zlib error", ")"));
      }
      if (k == 0) break;
      got += static_cast<uint64_t>(k);
    }
    return got;
  }

 private:
  int gzError() const {
    int errnum = Z_OK;
    ::gzerror(gz_, &errnum);
    return errnum;
  }
  const InputFile& f_;
  gzFile gz_ = nullptr;
  uint64_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Tensor> readIdx(const std::string& path) {
  absl::StatusOr<InputFile> f = InputFile::open(path);
  if (!f.ok()) return f.status();
  if (f->size() == 0) return absl::DataLossError(absl::StrCat(path, ": empty file (0 bytes)"));
  unsigned char magic2[2] = {0, 0};
  if (absl::Status s = f->readAt(0, magic2, std::min<uint64_t>(2, f->size())); !s.ok()) return s;
  const bool gz = f->size() >= 2 && magic2[0] == 0x1f && magic2[1] == 0x8b;
  Stream in(*f, gz);
  if (in.openFailed(gz)) return absl::InternalError(absl::StrCat(path, ": cannot open gzip stream"));

  auto readExactly = [&](void* dst, uint64_t n, const std::string& what) -> absl::Status {
    absl::StatusOr<uint64_t> got = in.read(dst, n);
    if (!got.ok()) return got.status();
    if (*got != n)
      return absl::DataLossError(
          absl::StrCat(path, ": truncated: expected ", n, " bytes of ", what, ", got ", *got));
    return absl::OkStatus();
  };

  unsigned char head[4];
  if (absl::Status s = readExactly(head, 4, "IDX magic"); !s.ok()) return s;
  if (head[0] != 0 || head[1] != 0)
    return absl::DataLossError(absl::StrCat(path, ": bad magic: not an IDX file"));
  DType dtype;
  switch (head[2]) {
    case 0x08: dtype = DType::U8; break;
    case 0x0C: dtype = DType::I32; break;
    case 0x0D: dtype = DType::F32; break;
    case 0x0E: dtype = DType::F64; break;
    case 0x09:
    case 0x0B:
      return absl::UnimplementedError(absl::StrCat(
          path, ": IDX element type ", head[2] == 0x09 ? "i8" : "i16", " is not supported"));
    default:
      return absl::DataLossError(
          absl::StrCat(path, ": bad magic: unknown IDX element type 0x", absl::Hex(head[2])));
  }
  int ndims = head[3];
  if (ndims == 0) return absl::DataLossError(absl::StrCat(path, ": IDX header declares 0 dimensions"));
  unsigned char dimBytes[255 * 4];
  if (absl::Status s = readExactly(dimBytes, 4u * ndims, "dimensions"); !s.ok()) return s;
  Shape shape;
  for (int i = 0; i < ndims; ++i) {
    const unsigned char* d = dimBytes + 4 * i;
    shape.push_back(int64_t(uint32_t(d[0]) << 24 | uint32_t(d[1]) << 16 | uint32_t(d[2]) << 8 | d[3]));
  }
  std::optional<uint64_t> need = io_detail::checkedByteSize(shape, dtype);
  uint64_t headerLen = 4 + 4u * ndims;
  if (!need) return absl::DataLossError(absl::StrCat(path, ": shape ", shapeToString(shape), " is too large"));
  std::string what = absl::StrCat(head[2] == 0x08 && ndims == 3 ? "pixel" : "element", " data");
  if (!gz && *need != f->size() - headerLen) {
    if (*need > f->size() - headerLen)
      return absl::DataLossError(absl::StrCat(path, ": truncated: expected ", *need, " bytes of ",
                                              what, ", got ", f->size() - headerLen));
    return absl::DataLossError(absl::StrCat(path, ": ", f->size() - headerLen - *need,
                                            " trailing bytes after ", *need, " bytes of ", what));
  }
  if (gz && *need > f->size() * kMaxGzipRatio)
    return absl::DataLossError(absl::StrCat(path, ": header claims ", *need, " bytes of ", what,
                                            ", impossible for a ", f->size(), "-byte gzip file"));
  absl::StatusOr<Tensor> t = io_detail::allocateTensor(dtype, shape, path);
  if (!t.ok()) return t;
  if (absl::Status s = readExactly(t->data(), *need, what); !s.ok()) return s;
  if (gz) {
    char extra;
    absl::StatusOr<uint64_t> more = in.read(&extra, 1);
    if (!more.ok()) return more.status();
    if (*more) return absl::DataLossError(absl::StrCat(path, ": trailing data after ", *need, " bytes of ", what));
  }
  // IDX stores big-endian; the runtime is little-endian.
  size_t w = dtypeSize(dtype);
  if (w > 1) {
    uint8_t* p = t->data();
    for (uint64_t i = 0; i < *need; i += w) std::reverse(p + i, p + i + w);
  }
  return t;
}

absl::StatusOr<MnistSplit> loadFashionMnist(const std::string& dir, std::string_view split) {
  std::string prefix;
  if (split == "train") prefix = "train";
  else if (split == "test" || split == "t10k") prefix = "t10k";
  else
    return absl::InvalidArgumentError(
        absl::StrCat("fashion-mnist: unknown split '", std::string(split), "' (use train or test)"));
  auto find = [&](std::string_view kind) -> absl::StatusOr<std::string> {
    std::string base = absl::StrCat(dir, "/", prefix, "-", std::string(kind), "-ubyte");
    for (const std::string& p : {base + ".gz", base})
      if (::access(p.c_str(), F_OK) == 0) return p;
    return absl::NotFoundError(absl::StrCat(base, "(.gz): no such file (install Debian's "
                                                  "dataset-fashion-mnist or pass the directory)"));
  };
  absl::StatusOr<std::string> imgPath = find("images-idx3"), lblPath = find("labels-idx1");
  if (!imgPath.ok()) return imgPath.status();
  if (!lblPath.ok()) return lblPath.status();
  absl::StatusOr<Tensor> images = readIdx(*imgPath);
  if (!images.ok()) return images.status();
  absl::StatusOr<Tensor> labels = readIdx(*lblPath);
  if (!labels.ok()) return labels.status();
  if (images->dtype() != DType::U8 || images->rank() != 3 || images->shape()[1] != 28 ||
      images->shape()[2] != 28)
    return absl::DataLossError(absl::StrCat(*imgPath, ": expected u8 images [N, 28, 28], got ",
                                            std::string(dtypeName(images->dtype())), " ", shapeToString(images->shape())));
  if (labels->dtype() != DType::U8 || labels->rank() != 1)
    return absl::DataLossError(absl::StrCat(*lblPath, ": expected u8 labels [N], got ",
                                            std::string(dtypeName(labels->dtype())), " ", shapeToString(labels->shape())));
  if (labels->shape()[0] != images->shape()[0])
    return absl::DataLossError(absl::StrCat(*lblPath, ": ", labels->shape()[0], " labels for ",
                                            images->shape()[0], " images"));
  const uint8_t* l = labels->data();
  for (int64_t i = 0; i < labels->numel(); ++i)
    if (l[i] >= 10)
      return absl::DataLossError(absl::StrCat(*lblPath, ": label ", int(l[i]), " at index ", i,
                                              " is not a class in 0..9"));
  return MnistSplit{std::move(*images), std::move(*labels)};
}

}  // namespace amp::rt
