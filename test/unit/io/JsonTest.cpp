#include "runtime/io/Json.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/unit/io/IoTestUtil.h"

namespace amp::rt {
namespace {

using testing::expectError;

TEST(IoJson, ParsesAllKindsAndKeepsKeyOrder) {
  absl::StatusOr<JsonValue> v = parseJson(
      R"( {"z": null, "a": [true, false, -0.5, 1e3, 12], "m": {"k": "v\u00e9\n"}} )");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(v->isObject());
  ASSERT_EQ(v->members().size(), 3u);
  EXPECT_EQ(v->members()[0].first, "z");
  EXPECT_EQ(v->members()[1].first, "a");
  EXPECT_TRUE(v->find("z")->isNull());
  const JsonValue& a = *v->find("a");
  ASSERT_EQ(a.size(), 5u);
  EXPECT_TRUE(a.items()[0].asBool());
  EXPECT_FALSE(a.items()[1].asBool());
  EXPECT_EQ(a.items()[2].asDouble(), -0.5);
  EXPECT_FALSE(a.items()[2].asInt64().has_value());
  EXPECT_EQ(a.items()[3].asInt64(), 1000);
  EXPECT_EQ(a.items()[4].asInt64(), 12);
  EXPECT_EQ(v->find("m")->find("k")->asString(), "v\xc3\xa9\n");
  EXPECT_EQ(v->find("missing"), nullptr);
}

TEST(IoJson, LargeIntegersStayExact) {
  // 2^53 + 1 is not representable as a double; byte offsets need it exact.
  absl::StatusOr<JsonValue> v = parseJson("[9007199254740993, -9223372036854775808, 9223372036854775808]");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->items()[0].asInt64(), int64_t{9007199254740993});
  EXPECT_EQ(v->items()[1].asInt64(), INT64_MIN);
  EXPECT_FALSE(v->items()[2].asInt64().has_value());  // beyond int64: a double
  EXPECT_EQ(v->items()[2].asDouble(), 9223372036854775808.0);
  EXPECT_EQ(writeJson(*v), "[9007199254740993,-9223372036854775808,9223372036854775808]");
}

TEST(IoJson, SurrogatePairsAndEscapesRoundTrip) {
  absl::StatusOr<JsonValue> v = parseJson(R"("\ud83d\ude00 \"q\" \\ \/ \b\f\r\t \u0001")");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->asString(), "\xf0\x9f\x98\x80 \"q\" \\ / \b\f\r\t \x01");
  std::string out = writeJson(*v);
  EXPECT_EQ(out, R"("😀 \"q\" \\ / \b\f\r\t \u0001")");
  absl::StatusOr<JsonValue> back = parseJson(out);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *v);
}

TEST(IoJson, WriterCompactPrettyAndNumbers) {
  JsonValue o = JsonValue::object();
  o.set("steps", JsonValue::integer(100));
  o.set("loss", JsonValue::number(0.1));
  o.set("nan", JsonValue::number(NAN));
  o.set("list", JsonValue::array({JsonValue::boolean(true), JsonValue()}));
  o.set("empty", JsonValue::object());
  o.set("steps", JsonValue::integer(101));  // replaces in place, keeps position
  EXPECT_EQ(writeJson(o), R"({"steps":101,"loss":0.1,"nan":null,"list":[true,null],"empty":{}})");
  EXPECT_EQ(writeJson(o, 2),
            "{\n  \"steps\": 101,\n  \"loss\": 0.1,\n  \"nan\": null,\n  \"list\": [\n    true,\n"
            "    null\n  ],\n  \"empty\": {}\n}");
  absl::StatusOr<JsonValue> back = parseJson(writeJson(o, 2));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->find("loss")->asDouble(), 0.1);
  EXPECT_EQ(writeJson(JsonValue::number(1e300)), "1e+300");
  EXPECT_EQ(writeJson(JsonValue::number(-2.0)), "-2");
}

// JsonWriter writes what writeJson writes for the same document, and JsonBuilder builds the tree
// (ampc writes plans through both; bundles must not change with the writer).
TEST(IoJson, StreamingWriterAndBuilderMatchTheTree) {
  std::string longText(100000, 'a');
  longText[5] = '"';
  longText[70000] = '\x01';
  JsonValue tree = JsonValue::object();
  tree.set("n", JsonValue::integer(-7));
  tree.set("x", JsonValue::number(2.5));
  tree.set("whole", JsonValue::number(3.0));
  tree.set("inf", JsonValue::number(INFINITY));
  tree.set("s", JsonValue::string("tab\there \"q\" \\"));
  tree.set("long", JsonValue::string(longText));
  tree.set("nested", JsonValue::array({JsonValue::array(), JsonValue::object(), JsonValue(),
                                       JsonValue::object({{"k", JsonValue::boolean(false)}})}));
  for (int indent : {-1, 0, 2}) {
    std::string streamed;
    JsonWriter w(streamed, indent);
    w.beginObject();
    w.key("n").integer(-7);
    w.key("x").number(2.5);
    w.key("whole").number(3.0);
    w.key("inf").number(INFINITY);
    w.key("s").string("tab\there \"q\" \\");
    w.key("long").string(longText);
    w.key("nested").beginArray().beginArray().endArray().beginObject().endObject().null();
    w.beginObject().key("k").boolean(false).endObject().endArray();
    w.endObject();
    EXPECT_EQ(streamed, writeJson(tree, indent)) << "indent " << indent;
  }
  JsonBuilder b;
  b.beginObject().key("a").integer(1).key("l").beginArray().string("s").number(0.5).endArray();
  b.key("a").integer(2).endObject();  // a repeated key replaces in place, as JsonValue::set
  EXPECT_EQ(writeJson(b.take()), R"({"a":2,"l":["s",0.5]})");
}

struct BadCase {
  const char* text;
  const char* where;  // expected "line:column"
  const char* what;
};

TEST(IoJson, RejectsInvalidWithLineAndColumn) {
  const BadCase cases[] = {
      {"", "1:1", "unexpected end of input"},
      {"{\"a\":1,}", "1:8", "expected a string key"},
      {"[1,]", "1:4", "unexpected character ']'"},
      {"[1 2]", "1:4", "expected ',' or ']'"},
      {"{\"a\" 1}", "1:6", "expected ':'"},
      {"{\"a\":1,\n \"a\":2}", "2:2", "duplicate key \"a\""},
      {"01", "1:2", "leading zeros"},
      {"1.", "1:3", "expected a digit after '.'"},
      {"1e", "1:3", "exponent"},
      {"-", "1:2", "expected a digit"},
      {"NaN", "1:1", "unexpected character 'N'"},
      {"tru", "1:1", "invalid literal"},
      {"\"abc", "1:5", "unterminated string"},
      {"\"a\tb\"", "1:3", "control character"},
      {"\"\\x\"", "1:3", "invalid escape"},
      {"\"\\u12g4\"", "1:4", "invalid \\u escape"},
      {"\"\\ud800\"", "1:8", "unpaired UTF-16 surrogate"},
      {"\"\xff\"", "1:2", "invalid UTF-8"},
      {"\"\xc0\xaf\"", "1:2", "invalid UTF-8"},  // overlong '/'
      {"{} x", "1:4", "trailing characters"},
      {"1e999", "1:1", "out of range"},
      {"// c\n1", "1:1", "unexpected character '/'"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<JsonValue> v = parseJson(c.text, "cfg.json");
    ASSERT_FALSE(v.ok()) << "accepted: " << c.text;
    expectError(v.status(), absl::StatusCode::kInvalidArgument,
                {std::string("cfg.json:") + c.where + ":", c.what});
  }
}

TEST(IoJson, DepthLimitStopsStackExhaustion) {
  std::string deep(100000, '[');
  absl::StatusOr<JsonValue> v = parseJson(deep, "deep.json");
  ASSERT_FALSE(v.ok());
  expectError(v.status(), absl::StatusCode::kInvalidArgument, {"deep.json:1:", "nesting deeper"});
  std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(parseJson(ok).ok());
}

}  // namespace
}  // namespace amp::rt
