#include "runtime/io/Safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Json.h"

namespace amp::rt {
namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the reference implementation's limit

struct StDType {
  std::string_view name;
  DType dtype;
  int rank;  // position in the reference's Dtype enum (increasing alignment) for write order
};
constexpr StDType kDTypes[] = {
    {"BOOL", DType::Bool, 0},      {"U8", DType::U8, 1},     {"F8_E5M2", DType::F8E5M2, 3},
    {"F8_E4M3", DType::F8E4M3FN, 4}, {"F16", DType::F16, 7}, {"BF16", DType::BF16, 8},
    {"I32", DType::I32, 9},        {"F32", DType::F32, 11},  {"F64", DType::F64, 12},
    {"I64", DType::I64, 13},
};
// Valid in the format but with no runtime dtype.
constexpr std::string_view kKnownUnsupported[] = {"I8", "I16", "U16", "U32", "U64", "F8_E8M0",
                                                  "F4", "F6_E2M3", "F6_E3M2", "C64"};

const StDType& entryFor(DType t) {
  for (const StDType& e : kDTypes)
    if (e.dtype == t) return e;
  return kDTypes[0];  // unreachable: every DType is in the table
}

struct Info {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

absl::Status bad(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<uint64_t> nonNegInt(const JsonValue& v) {
  std::optional<int64_t> i = v.asInt64();
  if (!i || *i < 0) return absl::InvalidArgumentError("");
  return static_cast<uint64_t>(*i);
}

absl::StatusOr<Info> parseEntry(const std::string& path, const std::string& name,
                                const JsonValue& v) {
  std::string where = absl::StrCat("tensor '", name, "': ");
  if (!v.isObject()) return bad(path, where + "entry is not an object");
  const JsonValue *dt = v.find("dtype"), *shape = v.find("shape"), *offs = v.find("data_offsets");
  if (!dt || !shape || !offs || v.size() != 3)
    return bad(path, where + "entry must have exactly the keys \"dtype\", \"shape\", \"data_offsets\"");
  if (!dt->isString()) return bad(path, where + "\"dtype\" is not a string");
  Info info{name, DType::F32, {}, 0, 0};
  bool found = false;
  for (const StDType& e : kDTypes)
    if (e.name == dt->asString()) info.dtype = e.dtype, found = true;
  if (!found) {
    for (std::string_view u : kKnownUnsupported)
      if (u == dt->asString())
        return absl::UnimplementedError(
            absl::StrCat(path, ": ", where, "dtype \"", std::string(u), "\" is not supported"));
    return bad(path, absl::StrCat(where, "unknown dtype \"", dt->asString(), "\""));
  }
  if (!shape->isArray()) return bad(path, where + "\"shape\" is not an array");
  for (const JsonValue& d : shape->items()) {
    absl::StatusOr<uint64_t> n = nonNegInt(d);
    if (!n.ok() || *n > (uint64_t{1} << 62))
      return bad(path, where + "\"shape\" entries must be non-negative integers");
    info.shape.push_back(static_cast<int64_t>(*n));
  }
  if (!offs->isArray() || offs->size() != 2)
    return bad(path, where + "\"data_offsets\" must be [begin, end]");
  absl::StatusOr<uint64_t> b = nonNegInt(offs->items()[0]), e = nonNegInt(offs->items()[1]);
  if (!b.ok() || !e.ok()) return bad(path, where + "\"data_offsets\" must be non-negative integers");
  if (*e < *b) return bad(path, absl::StrCat(where, "data_offsets [", *b, ", ", *e, "] end before they begin"));
  info.begin = *b;
  info.end = *e;
  std::optional<uint64_t> nbytes = io_detail::checkedByteSize(info.shape, info.dtype);
  if (!nbytes) return bad(path, absl::StrCat(where, "shape ", shapeToString(info.shape), " overflows"));
  if (*nbytes != *e - *b)
    return bad(path, absl::StrCat(where, "shape ", shapeToString(info.shape), " of ",
                                  dt->asString(), " needs ", *nbytes,
                                  " bytes but data_offsets span ", *e - *b));
  return info;
}

}  // namespace

std::string_view safetensorsDTypeName(DType t) { return entryFor(t).name; }

namespace {

// The bytes of a file already in memory, read like an InputFile.
class MemoryInput {
 public:
  MemoryInput(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  uint64_t size() const { return bytes_.size(); }
  absl::Status readAt(uint64_t offset, void* dst, size_t n) const {
    if (offset > bytes_.size() || n > bytes_.size() - offset)
      return absl::DataLossError(absl::StrCat(path_, ": truncated: need ", n, " bytes at offset ", offset,
                                              ", file has ", bytes_.size()));
    if (n) std::memcpy(dst, bytes_.data() + offset, n);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> readString(uint64_t offset, size_t n) const {
    std::string s(offset <= bytes_.size() && n <= bytes_.size() - offset ? n : 0, '\0');
    if (absl::Status st = readAt(offset, s.data(), n); !st.ok()) return st;
    return s;
  }

 private:
  std::string_view bytes_;
  const std::string& path_;
};

template <typename Input>
absl::StatusOr<SafetensorsContents> readFrom(const Input* f, const std::string& path);

}  // namespace

absl::StatusOr<SafetensorsContents> readSafetensors(const std::string& path) {
  absl::StatusOr<InputFile> f = InputFile::open(path);
  if (!f.ok()) return f.status();
  return readFrom(&*f, path);
}

absl::StatusOr<SafetensorsContents> readSafetensorsBytes(std::string_view bytes, const std::string& path) {
  MemoryInput input(bytes, path);
  return readFrom(&input, path);
}

namespace {

template <typename Input>
absl::StatusOr<SafetensorsContents> readFrom(const Input* f, const std::string& path) {
  const uint64_t size = f->size();
  if (size == 0) return bad(path, "empty file (0 bytes)");
  if (size < 8) return bad(path, absl::StrCat("truncated: ", size, " bytes, too short for the 8-byte header length"));
  char lenBytes[8];
  if (absl::Status s = f->readAt(0, lenBytes, 8); !s.ok()) return s;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(lenBytes[i])) << (8 * i);
  if (n > size - 8)
    return bad(path, absl::StrCat("header length ", n, " exceeds file size ", size));
  if (n > kMaxHeader)
    return bad(path, absl::StrCat("header length ", n, " exceeds the 100 MB limit"));
  if (n < 2) return bad(path, absl::StrCat("header length ", n, " is too small for a JSON object"));
  absl::StatusOr<std::string> text = f->readString(8, n);
  if (!text.ok()) return text.status();
  absl::StatusOr<JsonValue> root = parseJson(*text, absl::StrCat(path, ": header JSON"));
  if (!root.ok()) return absl::DataLossError(root.status().message());
  if (!root->isObject()) return bad(path, "header JSON is not an object");

  SafetensorsContents out;
  std::vector<Info> infos;
  for (const JsonValue::Member& m : root->members()) {
    if (m.first == "__metadata__") {
      if (!m.second.isObject()) return bad(path, "\"__metadata__\" is not an object");
      for (const JsonValue::Member& kv : m.second.members()) {
        if (!kv.second.isString())
          return bad(path, absl::StrCat("\"__metadata__\" value for \"", kv.first, "\" is not a string"));
        out.metadata.emplace_back(kv.first, kv.second.asString());
      }
      continue;
    }
    absl::StatusOr<Info> info = parseEntry(path, m.first, m.second);
    if (!info.ok()) return info.status();
    infos.push_back(std::move(*info));
  }
  std::stable_sort(infos.begin(), infos.end(), [](const Info& a, const Info& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The data must be tiled exactly: no gaps (hidden bytes), no overlaps (aliasing), nothing
  // after the last tensor.
  uint64_t expect = 0;
  for (const Info& i : infos) {
    if (i.begin < expect)
      return bad(path, absl::StrCat("tensor '", i.name, "': data_offsets [", i.begin, ", ", i.end,
                                    "] overlap the previous tensor, which ends at ", expect));
    if (i.begin > expect)
      return bad(path, absl::StrCat("tensor '", i.name, "': data_offsets [", i.begin, ", ", i.end,
                                    "] leave a gap after offset ", expect));
    expect = i.end;
  }
  uint64_t dataSize = size - 8 - n;
  if (expect > dataSize)
    return bad(path, absl::StrCat("truncated: data_offsets reach ", expect, " but the file holds ",
                                  dataSize, " bytes of tensor data"));
  if (expect < dataSize)
    return bad(path, absl::StrCat(dataSize - expect, " trailing bytes after the last tensor (data_offsets end at ",
                                  expect, ", data is ", dataSize, " bytes)"));
  for (Info& i : infos) {
    absl::StatusOr<Tensor> t = io_detail::allocateTensor(i.dtype, i.shape, path);
    if (!t.ok()) return t.status();
    if (i.end > i.begin) {
      if (absl::Status s = f->readAt(8 + n + i.begin, t->data(), i.end - i.begin); !s.ok()) return s;
    }
    out.tensors.push_back({std::move(i.name), std::move(*t)});
  }
  return out;
}

}  // namespace

namespace {

// The header: its JSON text, except that metadata values too large to copy (a bundle's plan) are
// escaped only as the header is written, each at its place in `json`.
struct Header {
  std::string json;
  std::vector<std::pair<size_t, const std::string*>> largeValues;  // (offset in json, value), in order
  const StreamedMetadataValue* streamed = nullptr;  // the last metadata value, at streamedAt
  size_t streamedAt = 0;
  uint64_t padding = 0;  // spaces after the JSON: the data starts 8-byte aligned

  uint64_t jsonBytes() const {
    uint64_t n = json.size() + padding;
    for (const auto& [at, value] : largeValues) n += jsonEscapedSize(*value);
    if (streamed) n += streamed->escapedSize;
    return n;
  }
  // Passes the header's bytes, length first, to `sink` a piece at a time.
  template <typename Sink>
  absl::Status write(Sink&& sink) const {
    const uint64_t n = jsonBytes();
    char length[8];
    for (int i = 0; i < 8; ++i) length[i] = char((n >> (8 * i)) & 0xFF);
    if (absl::Status s = sink(std::string_view(length, 8)); !s.ok()) return s;
    size_t from = 0;
    std::string escaped;
    constexpr size_t kChunk = 1 << 20;
    for (const auto& [at, value] : largeValues) {
      if (absl::Status s = sink(std::string_view(json).substr(from, at - from)); !s.ok()) return s;
      for (size_t v = 0; v < value->size(); v += kChunk) {
        escaped.clear();
        appendJsonEscaped(escaped, std::string_view(*value).substr(v, kChunk));
        if (absl::Status s = sink(escaped); !s.ok()) return s;
      }
      from = at;
    }
    if (streamed) {
      if (absl::Status s = sink(std::string_view(json).substr(from, streamedAt - from)); !s.ok()) return s;
      absl::Status failed;
      uint64_t written = 0;
      auto flush = [&] {
        written += escaped.size();
        if (failed.ok()) failed = sink(escaped);
        escaped.clear();
      };
      escaped.clear();
      streamed->write([&](std::string_view piece) {
        appendJsonEscaped(escaped, piece);
        if (escaped.size() >= kChunk) flush();
      });
      flush();
      if (!failed.ok()) return failed;
      if (written != streamed->escapedSize)
        return absl::InternalError(absl::StrCat("metadata '", streamed->key, "' was ", written,
                                                " bytes escaped, not the ", streamed->escapedSize, " announced"));
      from = streamedAt;
    }
    if (absl::Status s = sink(std::string_view(json).substr(from)); !s.ok()) return s;
    return sink(std::string(padding, ' '));
  }
};

// The header and the order the tensors' data follows in.
absl::Status prepare(const std::string& where, const std::vector<NamedTensorRef>& tensors,
                     const StringMap& metadata, const StreamedMetadataValue* streamed, Header& header,
                     std::vector<const NamedTensorRef*>& order) {
  std::set<std::string> names;
  for (const NamedTensorRef& r : tensors) {
    if (r.name.empty() || r.tensor == nullptr || r.name == "__metadata__")
      return absl::InvalidArgumentError(absl::StrCat(where, ": invalid tensor name '", r.name, "' or null tensor"));
    if (!names.insert(r.name).second)
      return absl::InvalidArgumentError(absl::StrCat(where, ": duplicate tensor name '", r.name, "'"));
    order.push_back(&r);
  }
  std::sort(order.begin(), order.end(), [](const NamedTensorRef* a, const NamedTensorRef* b) {
    int ra = entryFor(a->tensor->dtype()).rank, rb = entryFor(b->tensor->dtype()).rank;
    return ra != rb ? ra > rb : a->name < b->name;
  });
  std::set<std::string_view> keys;
  for (const auto& [k, v] : metadata)
    if (!keys.insert(k).second)
      return absl::InvalidArgumentError(absl::StrCat(where, ": duplicate metadata key '", k, "'"));
  if (streamed && !keys.insert(streamed->key).second)
    return absl::InvalidArgumentError(absl::StrCat(where, ": duplicate metadata key '", streamed->key, "'"));
  constexpr size_t kLargeValue = 1 << 16;
  JsonWriter json(header.json);
  json.beginObject();
  if (!metadata.empty() || streamed) {
    json.key("__metadata__").beginObject();
    for (const auto& [k, v] : metadata) {
      if (v.size() < kLargeValue) {
        json.key(k).string(v);
        continue;
      }
      json.key(k).raw("\"\"");
      header.largeValues.emplace_back(header.json.size() - 1, &v);
    }
    if (streamed) {
      json.key(streamed->key).raw("\"\"");
      header.streamed = streamed;
      header.streamedAt = header.json.size() - 1;
    }
    json.endObject();
  }
  uint64_t offset = 0;
  for (const NamedTensorRef* r : order) {
    uint64_t end = offset + r->tensor->nbytes();
    json.key(r->name).beginObject();
    json.key("dtype").string(safetensorsDTypeName(r->tensor->dtype()));
    json.key("shape").beginArray();
    for (int64_t d : r->tensor->shape()) json.integer(d);
    json.endArray();
    json.key("data_offsets").beginArray().integer(int64_t(offset)).integer(int64_t(end)).endArray();
    json.endObject();
    offset = end;
  }
  json.endObject();
  header.padding = (8 - header.jsonBytes() % 8) % 8;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> encodeSafetensors(const std::vector<NamedTensorRef>& tensors,
                                              const StringMap& metadata) {
  Header header;
  std::vector<const NamedTensorRef*> order;
  if (absl::Status s = prepare("safetensors", tensors, metadata, nullptr, header, order); !s.ok()) return s;
  std::string out;
  (void)header.write([&](std::string_view piece) {
    out += piece;
    return absl::OkStatus();
  });
  for (const NamedTensorRef* r : order)
    out.append(reinterpret_cast<const char*>(r->tensor->data()), r->tensor->nbytes());
  return out;
}

namespace {

absl::Status writeFile(const std::string& path, const std::vector<NamedTensorRef>& tensors, const StringMap& metadata,
                       const StreamedMetadataValue* streamed) {
  Header header;
  std::vector<const NamedTensorRef*> order;
  if (absl::Status s = prepare(path, tensors, metadata, streamed, header, order); !s.ok()) return s;
  absl::StatusOr<AtomicFile> f = AtomicFile::create(path);
  if (!f.ok()) return f.status();
  if (absl::Status s = header.write([&](std::string_view piece) { return f->write(piece); }); !s.ok()) return s;
  for (const NamedTensorRef* r : order) {
    if (r->tensor->nbytes() == 0) continue;
    if (absl::Status s = f->write(r->tensor->data(), r->tensor->nbytes()); !s.ok()) return s;
  }
  return f->commit();
}

}  // namespace

absl::Status writeSafetensors(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                              const StringMap& metadata) {
  return writeFile(path, tensors, metadata, nullptr);
}

absl::Status writeSafetensors(const std::string& path, const std::vector<NamedTensorRef>& tensors,
                              const StringMap& metadata, const StreamedMetadataValue& last) {
  return writeFile(path, tensors, metadata, &last);
}

}  // namespace amp::rt
