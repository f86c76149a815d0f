#include "runtime/io/Safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "runtime/io/Json.h"
#include "test/unit/io/IoTestUtil.h"

namespace amp::rt {
namespace {

using testing::expectError;
using testing::patterned;
using testing::putLE;
using testing::readBytes;
using testing::TempDir;
using testing::writeBytes;

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  putLE(s, 0, v, 8);
  return s;
}

std::string f32Bytes(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

Tensor f32Tensor(Shape shape, std::initializer_list<float> v) {
  Tensor t(DType::F32, std::move(shape));
  std::memcpy(t.data(), v.begin(), v.size() * 4);
  return t;
}

// Expected bytes from the reference implementation's own tests (safetensors/src/tensor.rs).
TEST(IoSafetensors, MatchesReferenceSerializationBytes) {
  Tensor t = f32Tensor({1, 2, 3}, {0, 1, 2, 3, 4, 5});
  std::string json = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size(), 64u);
  EXPECT_EQ(*encodeSafetensors({{"attn.0", &t}}), le64(64) + json + f32Bytes({0, 1, 2, 3, 4, 5}));

  Tensor u = f32Tensor({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5});
  std::string json2 = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  EXPECT_EQ(*encodeSafetensors({{"attn0", &u}}), le64(72) + json2 + "       " + f32Bytes({0, 1, 2, 3, 4, 5}));

  EXPECT_EQ(*encodeSafetensors({}), le64(8) + "{}      ");
  EXPECT_EQ(*encodeSafetensors({}, {{"framework", "pt"}}), le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST(IoSafetensors, WriteOrderFollowsReferenceSort) {
  Tensor f32a(DType::F32, {1}), f32b(DType::F32, {1}), i64(DType::I64, {1}), bf16(DType::BF16, {3}),
      u8(DType::U8, {1}), b(DType::Bool, {1}), f8(DType::F8E4M3FN, {1}), f8b(DType::F8E5M2, {1});
  absl::StatusOr<std::string> bytes = encodeSafetensors(
      {{"b", &f32b}, {"a", &f32a}, {"c", &i64}, {"d", &bf16}, {"e", &u8}, {"f", &b}, {"g", &f8b}, {"h", &f8}},
      {{"step", "3"}});
  ASSERT_TRUE(bytes.ok());
  uint64_t n = 0;
  std::memcpy(&n, bytes->data(), 8);
  EXPECT_EQ(n % 8, 0u);
  absl::StatusOr<JsonValue> h = parseJson(bytes->substr(8, n));
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<std::string> keys;
  for (const auto& m : h->members()) keys.push_back(m.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"__metadata__", "c", "a", "b", "d", "h", "g", "e", "f"}));
  EXPECT_EQ(writeJson(*h->find("d")), R"({"dtype":"BF16","shape":[3],"data_offsets":[16,22]})");
}

TEST(IoSafetensors, RoundTripsEveryDTypeBitwiseWithMetadata) {
  TempDir dir;
  std::vector<Tensor> ts;
  const DType all[] = {DType::F32, DType::F16,  DType::BF16, DType::F8E4M3FN, DType::F8E5M2,
                       DType::I64, DType::I32, DType::U8,   DType::Bool,     DType::F64};
  for (DType t : all) ts.push_back(patterned(t, {2, 3, 5}, static_cast<uint8_t>(ts.size() * 11)));
  ts.push_back(Tensor(DType::F32, {}));
  ts.push_back(Tensor(DType::F16, {0, 3}));
  std::vector<NamedTensorRef> refs;
  for (size_t i = 0; i < ts.size(); ++i) refs.push_back({"p." + std::to_string(i), &ts[i]});
  StringMap md = {{"format", "ampc"}, {"note", "ünïcode \"quoted\"\n"}};
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(writeSafetensors(path, refs, md).ok());
  EXPECT_EQ(readBytes(path), *encodeSafetensors(refs, md));
  absl::StatusOr<SafetensorsContents> back = readSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metadata, md);
  ASSERT_EQ(back->tensors.size(), ts.size());
  for (const NamedTensor& nt : back->tensors) {
    size_t i = std::stoul(nt.name.substr(2));
    EXPECT_TRUE(nt.tensor.bitwiseEquals(ts[i])) << nt.name;
  }
}

// Large metadata values (a bundle's plan) are escaped while the header is written, in chunks; the
// bytes are those of the header written whole.
TEST(IoSafetensors, LargeMetadataValuesWriteTheSameHeader) {
  TempDir dir;
  std::string plan = "{\"steps\":[";
  while (plan.size() < (3u << 20)) plan += "{\"op\":\"amp.neg\",\"loc\":\"m.mlir:1:2\"},\t\x01\n";
  plan += "]}";
  Tensor t = patterned(DType::F32, {3}, 7);
  std::vector<NamedTensorRef> refs = {{"w", &t}};
  StringMap md = {{"small", "a\"b"}, {"plan", plan}, {"after", "z"}};
  JsonValue root = JsonValue::object();
  JsonValue meta = JsonValue::object();
  for (const auto& [k, v] : md) meta.set(k, JsonValue::string(v));
  root.set("__metadata__", std::move(meta));
  root.set("w", JsonValue::object({{"dtype", JsonValue::string("F32")},
                                   {"shape", JsonValue::array({JsonValue::integer(3)})},
                                   {"data_offsets", JsonValue::array({JsonValue::integer(0), JsonValue::integer(12)})}}));
  std::string json = writeJson(root);
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string expected = le64(json.size()) + json + std::string(reinterpret_cast<const char*>(t.data()), 12);
  EXPECT_EQ(*encodeSafetensors(refs, md), expected);
  std::string path = dir.file("large.safetensors");
  ASSERT_TRUE(writeSafetensors(path, refs, md).ok());
  EXPECT_EQ(readBytes(path), expected);
  absl::StatusOr<SafetensorsContents> back = readSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metadata, md);
}

TEST(IoSafetensors, ReadsAnyOffsetOrderAndPadding) {
  // Header entries need not be in offset order; trailing spaces pad the header.
  TempDir dir;
  std::string json = R"({"y":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
         R"("x":{"shape":[4],"dtype":"U8","data_offsets":[0,4]}}   )";
  writeBytes(dir.file("o.safetensors"), le64(json.size()) + json + std::string("\x01\x02\x03\x04\x2a\0\0\0", 8));
  absl::StatusOr<SafetensorsContents> c = readSafetensors(dir.file("o.safetensors"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->tensors.size(), 2u);
  EXPECT_EQ(c->tensors[0].name, "x");
  EXPECT_EQ(c->tensors[1].name, "y");
  EXPECT_EQ(c->tensors[1].tensor.as<int32_t>()[0], 42);
}

TEST(IoSafetensors, WriterRejectsBadInput) {
  TempDir dir;
  Tensor t(DType::F32, {1});
  expectError(writeSafetensors(dir.file("a.safetensors"), {{"w", &t}, {"w", &t}}),
              absl::StatusCode::kInvalidArgument, {"a.safetensors", "duplicate tensor name 'w'"});
  expectError(writeSafetensors(dir.file("a.safetensors"), {{"__metadata__", &t}}),
              absl::StatusCode::kInvalidArgument, {"a.safetensors", "invalid tensor name"});
  expectError(writeSafetensors(dir.file("a.safetensors"), {}, {{"k", "1"}, {"k", "2"}}),
              absl::StatusCode::kInvalidArgument, {"a.safetensors", "duplicate metadata key 'k'"});
  EXPECT_FALSE(std::ifstream(dir.file("a.safetensors")).good());
}

struct Corrupt {
  const char* label;
  std::string bytes;
  absl::StatusCode code;
  std::string what;
};

std::string file(const std::string& json, const std::string& data) { return le64(json.size()) + json + data; }

TEST(IoSafetensors, EveryCorruptionIsAClearError) {
  const std::string d8(8, '\0');
  auto one = [&](const std::string& entry) { return file("{\"w\":" + entry + "}", d8); };
  const std::vector<Corrupt> cases = {
      {"empty", "", absl::StatusCode::kDataLoss, "empty file"},
      {"short", "\x10\0\0", absl::StatusCode::kDataLoss, "truncated"},
      {"huge-len", le64(1000000000000) + std::string(112, ' '), absl::StatusCode::kDataLoss,
       "header length 1000000000000 exceeds file size 120"},
      {"tiny-len", le64(1) + "{", absl::StatusCode::kDataLoss, "too small"},
      {"bad-json", file(R"({"w":{"dtype":"F32",}})", d8), absl::StatusCode::kDataLoss, "header JSON:1:21: expected a string key"},
      {"bad-utf8", file("{\"\xff\":1}", ""), absl::StatusCode::kDataLoss, "invalid UTF-8"},
      {"dup-key", file(R"({"w":1,"w":2})", ""), absl::StatusCode::kDataLoss, "duplicate key"},
      {"not-object", file("[]", ""), absl::StatusCode::kDataLoss, "not an object"},
      {"entry-not-object", file(R"({"w":3})", ""), absl::StatusCode::kDataLoss, "tensor 'w': entry is not an object"},
      {"missing-key", one(R"({"dtype":"F32","shape":[2]})"), absl::StatusCode::kDataLoss, "exactly the keys"},
      {"extra-key", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1})"), absl::StatusCode::kDataLoss,
       "exactly the keys"},
      {"bad-dtype", one(R"({"dtype":"F33","shape":[2],"data_offsets":[0,8]})"), absl::StatusCode::kDataLoss,
       "unknown dtype \"F33\""},
      {"lower-dtype", one(R"({"dtype":"f32","shape":[2],"data_offsets":[0,8]})"), absl::StatusCode::kDataLoss,
       "unknown dtype \"f32\""},
      {"unsupported-dtype", one(R"({"dtype":"I16","shape":[4],"data_offsets":[0,8]})"),
       absl::StatusCode::kUnimplemented, "dtype \"I16\" is not supported"},
      {"dtype-not-string", one(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"), absl::StatusCode::kDataLoss,
       "\"dtype\" is not a string"},
      {"neg-dim", one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), absl::StatusCode::kDataLoss,
       "non-negative integers"},
      {"frac-dim", one(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), absl::StatusCode::kDataLoss,
       "non-negative integers"},
      {"shape-size", one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), absl::StatusCode::kDataLoss,
       "needs 12 bytes but data_offsets span 8"},
      {"overflow", one(R"({"dtype":"F64","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,8]})"),
       absl::StatusCode::kDataLoss, "overflows"},
      {"offsets-shape", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), absl::StatusCode::kDataLoss,
       "[begin, end]"},
      {"offsets-reversed", one(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), absl::StatusCode::kDataLoss,
       "end before they begin"},
      {"offsets-out-of-range", one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"),
       absl::StatusCode::kDataLoss, "truncated: data_offsets reach 16 but the file holds 8"},
      {"gap", file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8), absl::StatusCode::kDataLoss,
       "leave a gap"},
      {"overlap",
       file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            d8),
       absl::StatusCode::kDataLoss, "overlap the previous tensor"},
      {"trailing", one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"), absl::StatusCode::kDataLoss,
       "4 trailing bytes"},
      {"metadata-type", file(R"({"__metadata__":{"k":1}})", ""), absl::StatusCode::kDataLoss,
       "\"__metadata__\" value for \"k\" is not a string"},
      {"metadata-not-object", file(R"({"__metadata__":"x"})", ""), absl::StatusCode::kDataLoss,
       "\"__metadata__\" is not an object"},
  };
  TempDir dir;
  for (const Corrupt& c : cases) {
    SCOPED_TRACE(c.label);
    std::string path = dir.file(std::string(c.label) + ".safetensors");
    writeBytes(path, c.bytes);
    absl::StatusOr<SafetensorsContents> r = readSafetensors(path);
    ASSERT_FALSE(r.ok());
    expectError(r.status(), c.code, {path, c.what});
  }
  // A header over the reference's 100 MB limit is refused before it is read (sparse file).
  std::string big = dir.file("big.safetensors");
  writeBytes(big, le64(100000001));
  ASSERT_EQ(::truncate(big.c_str(), 8 + 100000001), 0);
  expectError(readSafetensors(big).status(), absl::StatusCode::kDataLoss, {big, "100 MB limit"});
  expectError(readSafetensors(dir.file("missing.safetensors")).status(), absl::StatusCode::kNotFound,
              {"missing.safetensors", "no such file"});
}

}  // namespace
}  // namespace amp::rt
