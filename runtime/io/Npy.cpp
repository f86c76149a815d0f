#include "runtime/io/Npy.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/NamedTensor.h"

namespace amp::rt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DescrEntry {
  std::string_view descr;
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"<f4", DType::F32}, {"<f2", DType::F16}, {"<f8", DType::F64}, {"<i8", DType::I64},
    {"<i4", DType::I32}, {"|u1", DType::U8},  {"|b1", DType::Bool},
};

struct NpyHeader {
  DType dtype;
  Shape shape;
  size_t dataOffset;  // bytes from the start of the file to the array data
};

// Strict parser for the header dict numpy writes, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Python literal syntax, restricted to what the three keys can hold.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  absl::StatusOr<NpyHeader> parse() {
    std::string descr;
    bool haveDescr = false, haveFortran = false, haveShape = false, fortran = false;
    Shape shape;
    skipWs();
    if (!consume('{')) return bad("header does not start with '{'");
    while (true) {
      skipWs();
      if (consume('}')) break;
      std::string key;
      if (absl::Status s = parseStr(key); !s.ok()) return s;
      skipWs();
      if (!consume(':')) return bad(absl::StrCat("expected ':' after '", key, "'"));
      skipWs();
      if (key == "descr") {
        if (haveDescr) return bad("duplicate key 'descr'");
        haveDescr = true;
        if (peek() == '[')
          return absl::UnimplementedError(
              absl::StrCat(where_, ": structured (record) dtypes are not supported"));
        if (absl::Status s = parseStr(descr); !s.ok()) return s;
      } else if (key == "fortran_order") {
        if (haveFortran) return bad("duplicate key 'fortran_order'");
        haveFortran = true;
        if (s_.substr(pos_, 4) == "True") {
          fortran = true;
          pos_ += 4;
        } else if (s_.substr(pos_, 5) == "False") {
          pos_ += 5;
        } else {
          return bad("'fortran_order' must be True or False");
        }
      } else if (key == "shape") {
        if (haveShape) return bad("duplicate key 'shape'");
        haveShape = true;
        if (absl::Status s = parseShape(shape); !s.ok()) return s;
      } else {
        return bad(absl::StrCat("unexpected key '", key, "'"));
      }
      skipWs();
      if (consume(',')) continue;
      skipWs();
      if (consume('}')) break;
      return bad("expected ',' or '}'");
    }
    // Only padding may follow the dict: spaces, terminated by '\n' (numpy also pads with '\x20'
    // before the newline; very old writers used '\n' alone).
    for (size_t i = pos_; i < s_.size(); ++i)
      if (s_[i] != ' ' && s_[i] != '\n' && s_[i] != '\t' && s_[i] != '\r')
        return bad("unexpected characters after the header dict");
    if (!haveDescr || !haveFortran || !haveShape)
      return bad("header must have the keys 'descr', 'fortran_order' and 'shape'");
    if (fortran)
      return absl::UnimplementedError(absl::StrCat(
          where_, ": fortran_order=True (column-major) arrays are not supported; save a C-order "
                  "array (np.ascontiguousarray)"));
    NpyHeader h{DType::F32, std::move(shape), 0};
    bool found = false;
    for (const DescrEntry& e : kDescrs)
      if (e.descr == descr) {
        h.dtype = e.dtype;
        found = true;
      }
    if (!found) {
      if (!descr.empty() && descr[0] == '>')
        return absl::UnimplementedError(
            absl::StrCat(where_, ": big-endian dtype '", descr, "' is not supported"));
      return absl::UnimplementedError(absl::StrCat(
          where_, ": unsupported dtype '", descr,
          "' (supported: <f4 <f2 <f8 <i8 <i4 |u1 |b1; bf16/fp8 need safetensors)"));
    }
    return h;
  }

 private:
  absl::Status bad(const std::string& what) const {
    return absl::DataLossError(absl::StrCat(where_, ": malformed header: ", what, " (at byte ",
                                            pos_, " of the header dict)"));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skipWs() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n'))
      ++pos_;
  }
  absl::Status parseStr(std::string& out) {
    char q = peek();
    if (q != '\'' && q != '"') return bad("expected a quoted string");
    ++pos_;
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' || s_[pos_] == '\n') return bad("unsupported character in string");
      ++pos_;
    }
    if (pos_ >= s_.size()) return bad("unterminated string");
    out.assign(s_.substr(start, pos_ - start));
    ++pos_;
    return absl::OkStatus();
  }
  // A Python tuple of non-negative ints: () | (n,) | (n, m[, ...][,])
  absl::Status parseShape(Shape& shape) {
    if (!consume('(')) return bad("'shape' must be a tuple");
    size_t count = 0;
    bool trailingComma = false;
    while (true) {
      skipWs();
      if (consume(')')) break;
      if (count > 0 && !trailingComma) return bad("expected ',' between shape dimensions");
      if (peek() < '0' || peek() > '9') return bad("shape dimensions must be non-negative integers");
      int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (d > (int64_t{1} << 62) / 10) return bad("shape dimension too large");
        d = d * 10 + (s_[pos_++] - '0');
      }
      shape.push_back(d);
      ++count;
      skipWs();
      trailingComma = consume(',');
      if (shape.size() > 64) return bad("more than 64 dimensions");
    }
    // "(5)" is the int 5 in Python, not a tuple.
    if (count == 1 && !trailingComma) return bad("one-element shape tuple needs a trailing comma");
    return absl::OkStatus();
  }

  std::string_view s_;
  const std::string& where_;
  size_t pos_ = 0;
};

// Length of magic + version + length field, and the header dict length, from the first bytes.
absl::Status parsePreamble(std::string_view head, uint64_t available, const std::string& where,
                           size_t& preambleLen, size_t& dictLen) {
  std::string_view magic(kMagic, kMagicLen);
  size_t cmp = std::min(head.size(), kMagicLen);
  if (head.substr(0, cmp) != magic.substr(0, cmp))
    return absl::DataLossError(absl::StrCat(where, ": bad magic: not a .npy file"));
  if (head.size() < kMagicLen + 2)
    return absl::DataLossError(absl::StrCat(where, ": truncated: ", available,
                                            " bytes, too short for a .npy header"));
  uint8_t major = static_cast<uint8_t>(head[6]), minor = static_cast<uint8_t>(head[7]);
  if (major < 1 || major > 3 || minor != 0)
    return absl::UnimplementedError(absl::StrCat(where, ": unsupported .npy format version ",
                                                 major, ".", minor));
  size_t lenBytes = major == 1 ? 2 : 4;
  preambleLen = kMagicLen + 2 + lenBytes;
  if (head.size() < preambleLen)
    return absl::DataLossError(absl::StrCat(where, ": truncated header length field"));
  uint64_t len = 0;
  for (size_t i = 0; i < lenBytes; ++i) len |= uint64_t(uint8_t(head[8 + i])) << (8 * i);
  if (len > available - preambleLen)
    return absl::DataLossError(absl::StrCat(where, ": truncated header: header length ", len,
                                            " exceeds the ", available - preambleLen,
                                            " bytes that follow"));
  dictLen = static_cast<size_t>(len);
  return absl::OkStatus();
}

absl::StatusOr<NpyHeader> parseHeader(std::string_view whole, uint64_t available,
                                      const std::string& where) {
  size_t preambleLen = 0, dictLen = 0;
  if (absl::Status s = parsePreamble(whole, available, where, preambleLen, dictLen); !s.ok())
    return s;
  if (whole.size() < preambleLen + dictLen)
    return absl::DataLossError(absl::StrCat(where, ": truncated header"));
  absl::StatusOr<NpyHeader> h =
      HeaderParser(whole.substr(preambleLen, dictLen), where).parse();
  if (!h.ok()) return h;
  h->dataOffset = preambleLen + dictLen;
  return h;
}

absl::Status checkDataSize(const NpyHeader& h, uint64_t dataBytes, const std::string& where,
                           uint64_t& expected) {
  std::optional<uint64_t> need = io_detail::checkedByteSize(h.shape, h.dtype);
  if (!need)
    return absl::DataLossError(
        absl::StrCat(where, ": shape ", shapeToString(h.shape), " is too large"));
  expected = *need;
  if (dataBytes < *need)
    return absl::DataLossError(absl::StrCat(where, ": truncated: expected ", *need,
                                            " bytes of array data for shape ",
                                            shapeToString(h.shape), ", got ", dataBytes));
  if (dataBytes > *need)
    return absl::DataLossError(absl::StrCat(where, ": ", dataBytes - *need,
                                            " unexpected trailing bytes after the array data (shape ",
                                            shapeToString(h.shape), " needs ", *need, ")"));
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string_view> npyDescr(DType t) {
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == t) return e.descr;
  return std::nullopt;
}

absl::StatusOr<Tensor> decodeNpy(std::string_view bytes, const std::string& where) {
  absl::StatusOr<NpyHeader> h = parseHeader(bytes, bytes.size(), where);
  if (!h.ok()) return h.status();
  uint64_t need = 0;
  if (absl::Status s = checkDataSize(*h, bytes.size() - h->dataOffset, where, need); !s.ok())
    return s;
  absl::StatusOr<Tensor> t = io_detail::allocateTensor(h->dtype, h->shape, where);
  if (!t.ok()) return t;
  if (need) std::memcpy(t->data(), bytes.data() + h->dataOffset, need);
  return t;
}

namespace {

// The header of the open .npy file `f`, checked against the file's size; `need` receives the
// array's byte count.
absl::StatusOr<NpyHeader> readCheckedHeader(const InputFile& f, const std::string& path, uint64_t& need) {
  uint64_t size = f.size();
  if (size == 0) return absl::DataLossError(absl::StrCat(path, ": empty file (0 bytes)"));
  absl::StatusOr<std::string> pre = f.readString(0, std::min<uint64_t>(size, 12));
  if (!pre.ok()) return pre.status();
  size_t preambleLen = 0, dictLen = 0;
  if (absl::Status s = parsePreamble(*pre, size, path, preambleLen, dictLen); !s.ok()) return s;
  absl::StatusOr<std::string> head = f.readString(0, preambleLen + dictLen);
  if (!head.ok()) return head.status();
  absl::StatusOr<NpyHeader> h = parseHeader(*head, size, path);
  if (!h.ok()) return h.status();
  if (absl::Status s = checkDataSize(*h, size - h->dataOffset, path, need); !s.ok()) return s;
  return h;
}

}  // namespace

absl::StatusOr<Tensor> readNpy(const std::string& path) {
  absl::StatusOr<InputFile> f = InputFile::open(path);
  if (!f.ok()) return f.status();
  uint64_t need = 0;
  absl::StatusOr<NpyHeader> h = readCheckedHeader(*f, path, need);
  if (!h.ok()) return h.status();
  // Sizes are validated against the file before allocating, so a lying header cannot make us
  // allocate more than the file holds.
  absl::StatusOr<Tensor> t = io_detail::allocateTensor(h->dtype, h->shape, path);
  if (!t.ok()) return t;
  if (need) {
    if (absl::Status s = f->readAt(h->dataOffset, t->data(), need); !s.ok()) return s;
  }
  return t;
}

absl::StatusOr<std::shared_ptr<const NpyRowFile>> NpyRowFile::open(const std::string& path) {
  absl::StatusOr<InputFile> f = InputFile::open(path);
  if (!f.ok()) return f.status();
  uint64_t need = 0;
  absl::StatusOr<NpyHeader> h = readCheckedHeader(*f, path, need);
  if (!h.ok()) return h.status();
  if (h->shape.empty() || h->shape[0] == 0)
    return absl::InvalidArgumentError(absl::StrCat(path, ": shape ", shapeToString(h->shape),
                                                   " has no examples (data is [N, ...] with N >= 1)"));
  const size_t rowBytes = static_cast<size_t>(need / static_cast<uint64_t>(h->shape[0]));
  return std::shared_ptr<const NpyRowFile>(
      new NpyRowFile(std::move(*f), h->dtype, h->shape, h->dataOffset, rowBytes));
}

absl::Status NpyRowFile::readRow(int64_t row, void* out) const {
  if (row < 0 || row >= rows())
    return absl::OutOfRangeError(absl::StrCat(path(), ": example ", row, " of ", rows()));
  return file_.readAt(dataOffset_ + static_cast<uint64_t>(row) * rowBytes_, out, rowBytes_);
}

absl::StatusOr<std::string> encodeNpyHeader(const Tensor& t) {
  std::optional<std::string_view> descr = npyDescr(t.dtype());
  if (!descr)
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype ", std::string(dtypeName(t.dtype())),
        " cannot be stored in .npy/.npz (numpy has no such dtype); use safetensors"));
  if (t.shape().size() > 64)
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", t.shape().size(), " exceeds the 64 dimensions .npy readers accept"));
  std::string dict = absl::StrCat("{'descr': '", std::string(*descr), "', 'fortran_order': False, 'shape': (");
  for (size_t i = 0; i < t.shape().size(); ++i)
    absl::StrAppend(&dict, i ? ", " : "", t.shape()[i]);
  absl::StrAppend(&dict, t.shape().size() == 1 ? ",), }" : "), }");
  // Like numpy >= 1.23: spare spaces so the first dimension can grow in place, then pad
  // magic+version+len+dict+'\n' to a multiple of 64 (numpy adds a full 64 when already aligned;
  // we match it byte for byte).
  if (!t.shape().empty()) dict.append(21 - std::to_string(t.shape()[0]).size(), ' ');
  auto build = [&](uint8_t major) -> std::string {
    size_t pre = kMagicLen + 2 + (major == 1 ? 2 : 4);
    size_t pad = 64 - (pre + dict.size() + 1) % 64;
    size_t dictLen = dict.size() + pad + 1;
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(major);
    out += '\0';
    for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
      out += static_cast<char>((dictLen >> (8 * i)) & 0xFF);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  };
  // With at most 64 dimensions the dict is < 2 KB, so version 1.0's 16-bit length always
  // suffices (numpy switches to 2.0 only past 65535 bytes).
  return build(1);
}

absl::Status writeNpy(const std::string& path, const Tensor& t) {
  absl::StatusOr<std::string> header = encodeNpyHeader(t);
  if (!header.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", header.status().message()));
  absl::StatusOr<AtomicFile> f = AtomicFile::create(path);
  if (!f.ok()) return f.status();
  if (absl::Status s = f->write(*header); !s.ok()) return s;
  if (t.nbytes()) {
    if (absl::Status s = f->write(t.data(), t.nbytes()); !s.ok()) return s;
  }
  return f->commit();
}

}  // namespace amp::rt
