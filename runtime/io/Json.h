// A small, strict JSON DOM (RFC 8259) shared by safetensors headers, run summaries and bundles.
//
// Strict means: no comments, no trailing commas, no NaN/Infinity, no duplicate object keys, no
// unescaped control characters, valid UTF-8 only, nesting depth <= 256. Errors carry
// "line:column". Objects keep their key order (safetensors and bundles are order-sensitive).
#ifndef AMP_RUNTIME_IO_JSON_H
#define AMP_RUNTIME_IO_JSON_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace amp::rt {

class JsonValue {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;  // null
  static JsonValue boolean(bool b);
  static JsonValue number(double d);
  // Keeps the exact integer (doubles lose precision above 2^53: byte offsets must not).
  static JsonValue integer(int64_t i);
  static JsonValue string(std::string s);
  static JsonValue array(std::vector<JsonValue> items = {});
  static JsonValue object(std::vector<Member> members = {});

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  // Accessors; calling one of the wrong kind returns a default (false, 0, "", empty).
  bool asBool() const { return kind_ == Kind::Bool && bool_; }
  double asDouble() const { return kind_ == Kind::Number ? num_ : 0.0; }
  // The value as an int64 when it is a number that is exactly an integer in int64 range
  // (an integer literal that fits, or an integral double). nullopt otherwise.
  std::optional<int64_t> asInt64() const;
  const std::string& asString() const { return str_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<Member>& members() const { return members_; }
  size_t size() const { return kind_ == Kind::Array ? items_.size() : members_.size(); }

  // Object lookup; nullptr when absent or not an object.
  const JsonValue* find(std::string_view key) const;
  // Mutators: append to an array; set (replace or append) a key of an object.
  void push(JsonValue v);
  void set(std::string key, JsonValue v);

  // Structural equality (numbers compare by value; object key order matters).
  bool operator==(const JsonValue& o) const;
  bool operator!=(const JsonValue& o) const { return !(*this == o); }

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool exactInt_ = false;  // int_ holds the exact value
  double num_ = 0;
  int64_t int_ = 0;
  std::string str_;
  std::vector<JsonValue> items_;
  std::vector<Member> members_;
};

// Parses exactly one JSON value (surrounded by optional whitespace). Errors are InvalidArgument
// with "<source>:<line>:<column>: <problem>".
absl::StatusOr<JsonValue> parseJson(std::string_view text, std::string_view source = "<json>");

// Writes JSON text as it goes, in exactly writeJson's format, for documents too large to hold as
// a JsonValue tree (a 100k-op plan's tree takes gigabytes where its text takes tens of megabytes).
// Calls must nest as JSON does: a key before each value inside an object, none elsewhere.
class JsonWriter {
 public:
  JsonWriter(std::string& out, int indent = -1) : out_(out), indent_(indent) {}

  JsonWriter& beginObject() { return open('{'); }
  JsonWriter& endObject() { return close('}'); }
  JsonWriter& beginArray() { return open('['); }
  JsonWriter& endArray() { return close(']'); }
  JsonWriter& key(std::string_view k);
  JsonWriter& null();
  JsonWriter& boolean(bool b);
  JsonWriter& integer(int64_t i);
  // As JsonValue::number: integral values print as integers, non-finite ones as null.
  JsonWriter& number(double d);
  JsonWriter& string(std::string_view s);
  JsonWriter& value(const JsonValue& v);
  // A value already in JSON form, written as it is.
  JsonWriter& raw(std::string_view json);

 private:
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  void beforeValue();
  void newline(size_t level);

  std::string& out_;
  int indent_;
  std::vector<size_t> itemsPerLevel_;  // values written so far in each open container
  bool afterKey_ = false;
};

// The characters of `s` as they stand inside a JSON string (without the quotes), and their count.
void appendJsonEscaped(std::string& out, std::string_view s);
size_t jsonEscapedSize(std::string_view s);

// Builds a JsonValue through JsonWriter's calls, so that one function can write a document either
// as text or as a tree. A repeated key replaces the earlier value, as JsonValue::set does.
class JsonBuilder {
 public:
  JsonBuilder& beginObject();
  JsonBuilder& endObject() { return end(); }
  JsonBuilder& beginArray();
  JsonBuilder& endArray() { return end(); }
  JsonBuilder& key(std::string_view k);
  JsonBuilder& null() { return add(JsonValue()); }
  JsonBuilder& boolean(bool b) { return add(JsonValue::boolean(b)); }
  JsonBuilder& integer(int64_t i) { return add(JsonValue::integer(i)); }
  JsonBuilder& number(double d) { return add(JsonValue::number(d)); }
  JsonBuilder& string(std::string_view s) { return add(JsonValue::string(std::string(s))); }
  JsonBuilder& value(JsonValue v) { return add(std::move(v)); }

  JsonValue take() { return std::move(root_); }

 private:
  JsonBuilder& add(JsonValue v);
  JsonBuilder& end();

  JsonValue root_;
  std::vector<JsonValue> open_;    // containers begun and not yet ended
  std::vector<std::string> keys_;  // per open container: the key of its next member
};

// Serialises. indent < 0: compact, no spaces (the form safetensors uses); indent >= 0: pretty
// with that many spaces per level. Integers print exactly; other numbers print the shortest
// decimal that round-trips; non-finite numbers (not representable in JSON) print as null.
std::string writeJson(const JsonValue& v, int indent = -1);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_JSON_H
