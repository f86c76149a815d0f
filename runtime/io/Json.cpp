#include "runtime/io/Json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace amp::rt {

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}
JsonValue JsonValue::number(double d) {
  JsonValue v;
  v.kind_ = Kind::Number;
  v.num_ = d;
  return v;
}
JsonValue JsonValue::integer(int64_t i) {
  JsonValue v;
  v.kind_ = Kind::Number;
  v.num_ = static_cast<double>(i);
  v.int_ = i;
  v.exactInt_ = true;
  return v;
}
JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.kind_ = Kind::String;
  v.str_ = std::move(s);
  return v;
}
JsonValue JsonValue::array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::Array;
  v.items_ = std::move(items);
  return v;
}
JsonValue JsonValue::object(std::vector<Member> members) {
  JsonValue v;
  v.kind_ = Kind::Object;
  v.members_ = std::move(members);
  return v;
}

std::optional<int64_t> JsonValue::asInt64() const {
  if (kind_ != Kind::Number) return std::nullopt;
  if (exactInt_) return int_;
  // 2^63 is exactly representable; anything >= it does not fit.
  if (std::isfinite(num_) && num_ == std::floor(num_) && num_ >= -9223372036854775808.0 &&
      num_ < 9223372036854775808.0)
    return static_cast<int64_t>(num_);
  return std::nullopt;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind_ != Kind::Object) return nullptr;
  for (const Member& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

void JsonValue::push(JsonValue v) {
  if (kind_ == Kind::Array) items_.push_back(std::move(v));
}

void JsonValue::set(std::string key, JsonValue v) {
  if (kind_ != Kind::Object) return;
  for (Member& m : members_)
    if (m.first == key) {
      m.second = std::move(v);
      return;
    }
  members_.emplace_back(std::move(key), std::move(v));
}

bool JsonValue::operator==(const JsonValue& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Null: return true;
    case Kind::Bool: return bool_ == o.bool_;
    case Kind::Number:
      if (exactInt_ && o.exactInt_) return int_ == o.int_;
      return num_ == o.num_;
    case Kind::String: return str_ == o.str_;
    case Kind::Array: return items_ == o.items_;
    case Kind::Object: return members_ == o.members_;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent over a string_view; `pos_` never passes `text_.size()`.
namespace {

constexpr int kMaxDepth = 256;  // deep enough for any real header; stops stack exhaustion

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  absl::StatusOr<JsonValue> parseDocument() {
    skipWs();
    JsonValue v;
    if (absl::Status s = parseValue(v, 0); !s.ok()) return s;
    skipWs();
    if (pos_ != text_.size()) return error("unexpected trailing characters after the JSON value");
    return v;
  }

 private:
  absl::Status error(const std::string& what) const { return errorAt(pos_, what); }
  absl::Status errorAt(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(source_, ":", line, ":", col, ": ", what));
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipWs() {
    while (!atEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                        text_[pos_] == '\r'))
      ++pos_;
  }

  absl::Status expectLiteral(std::string_view lit) {
    if (text_.substr(pos_, lit.size()) != lit)
      return error(absl::StrCat("invalid literal (expected '", std::string(lit), "')"));
    pos_ += lit.size();
    return absl::OkStatus();
  }

  absl::Status parseValue(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return error("nesting deeper than 256 levels");
    if (atEnd()) return error("unexpected end of input, expected a value");
    char c = peek();
    switch (c) {
      case 'n':
        out = JsonValue();
        return expectLiteral("null");
      case 't':
        out = JsonValue::boolean(true);
        return expectLiteral("true");
      case 'f':
        out = JsonValue::boolean(false);
        return expectLiteral("false");
      case '"': {
        std::string s;
        if (absl::Status st = parseString(s); !st.ok()) return st;
        out = JsonValue::string(std::move(s));
        return absl::OkStatus();
      }
      case '[': return parseArray(out, depth);
      case '{': return parseObject(out, depth);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return parseNumber(out);
        return error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
    }
  }

  absl::Status parseArray(JsonValue& out, int depth) {
    ++pos_;  // '['
    out = JsonValue::array();
    skipWs();
    if (peek() == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      skipWs();
      JsonValue item;
      if (absl::Status s = parseValue(item, depth + 1); !s.ok()) return s;
      out.push(std::move(item));
      skipWs();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      return error(atEnd() ? "unexpected end of input in array" : "expected ',' or ']' in array");
    }
  }

  absl::Status parseObject(JsonValue& out, int depth) {
    ++pos_;  // '{'
    std::vector<JsonValue::Member> members;
    skipWs();
    if (peek() == '}') {
      ++pos_;
      out = JsonValue::object();
      return absl::OkStatus();
    }
    while (true) {
      skipWs();
      if (peek() != '"')
        return error(atEnd() ? "unexpected end of input in object" : "expected a string key");
      size_t keyPos = pos_;
      std::string key;
      if (absl::Status s = parseString(key); !s.ok()) return s;
      for (const auto& m : members)
        if (m.first == key) return errorAt(keyPos, absl::StrCat("duplicate key \"", key, "\""));
      skipWs();
      if (peek() != ':') return error("expected ':' after object key");
      ++pos_;
      skipWs();
      JsonValue value;
      if (absl::Status s = parseValue(value, depth + 1); !s.ok()) return s;
      members.emplace_back(std::move(key), std::move(value));
      skipWs();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        out = JsonValue::object(std::move(members));
        return absl::OkStatus();
      }
      return error(atEnd() ? "unexpected end of input in object" : "expected ',' or '}' in object");
    }
  }

  absl::Status parseNumber(JsonValue& out) {
    size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (!atEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_, ++n;
      return n;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') return error("leading zeros are not allowed in numbers");
    } else if (digits() == 0) {
      return error("expected a digit");
    }
    bool isInt = true;
    if (peek() == '.') {
      ++pos_;
      isInt = false;
      if (digits() == 0) return error("expected a digit after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      isInt = false;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) return error("expected a digit in the exponent");
    }
    const char* b = text_.data() + start;
    const char* e = text_.data() + pos_;
    if (isInt) {
      int64_t i = 0;
      auto [p, ec] = std::from_chars(b, e, i);
      if (ec == std::errc() && p == e) {
        out = JsonValue::integer(i);
        return absl::OkStatus();
      }
      // Out of int64 range: fall through to a (possibly inexact) double.
    }
    double d = 0;
    auto [p, ec] = std::from_chars(b, e, d);
    if (ec == std::errc::result_out_of_range) return errorAt(start, "number out of range");
    if (ec != std::errc() || p != e) return errorAt(start, "invalid number");
    out = JsonValue::number(d);
    return absl::OkStatus();
  }

  static void appendUtf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parseHex4(uint32_t& v) {
    if (text_.size() - pos_ < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return false;
    }
    pos_ += 4;
    return true;
  }

  // Length of the valid UTF-8 sequence at pos_ (>= 2 bytes), or 0 if invalid.
  size_t utf8SeqLen() const {
    auto at = [&](size_t i) -> uint8_t {
      return pos_ + i < text_.size() ? static_cast<uint8_t>(text_[pos_ + i]) : 0;
    };
    uint8_t c = at(0);
    auto cont = [&](size_t i) { return (at(i) & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
      uint8_t c1 = at(1);
      if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
      if (c == 0xED && c1 > 0x9F) return 0;  // UTF-16 surrogate
      return cont(1) && cont(2) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
      uint8_t c1 = at(1);
      if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
      if (c == 0xF4 && c1 > 0x8F) return 0;  // > U+10FFFF
      return cont(1) && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
  }

  absl::Status parseString(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (atEnd()) return error("unterminated string");
      uint8_t c = static_cast<uint8_t>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) return error("unescaped control character in string");
      if (c == '\\') {
        ++pos_;
        if (atEnd()) return error("unterminated string");
        char e = text_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp;
            if (!parseHex4(cp)) return error("invalid \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t lo;
              if (text_.substr(pos_, 2) != "\\u") return error("unpaired UTF-16 surrogate");
              pos_ += 2;
              if (!parseHex4(lo) || lo < 0xDC00 || lo > 0xDFFF)
                return error("unpaired UTF-16 surrogate");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              return error("unpaired UTF-16 surrogate");
            }
            appendUtf8(out, cp);
            break;
          }
          default: --pos_; return error("invalid escape sequence");
        }
        continue;
      }
      if (c < 0x80) {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      size_t n = utf8SeqLen();
      if (n == 0) return error("invalid UTF-8 in string");
      out.append(text_.substr(pos_, n));
      pos_ += n;
    }
  }

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
};

void writeString(std::string& out, std::string_view s) {
  out += '"';
  appendJsonEscaped(out, s);
  out += '"';
}

void writeInteger(std::string& out, int64_t i) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, i);
  out.append(buf, r.ptr);
}

}  // namespace

void appendJsonEscaped(std::string& out, std::string_view s) {
  size_t plainFrom = 0;  // characters that need no escape are appended a run at a time
  for (size_t at = 0; at < s.size(); ++at) {
    const unsigned char c = static_cast<unsigned char>(s[at]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plainFrom, at - plainFrom);
    plainFrom = at + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
    }
  }
  out.append(s.data() + plainFrom, s.size() - plainFrom);
}

size_t jsonEscapedSize(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if (c >= 0x20 && c != '"' && c != '\\') n += 1;
    else if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') n += 2;
    else n += 6;  // \u00XX
  }
  return n;
}

void JsonWriter::newline(size_t level) {
  if (indent_ < 0) return;
  out_ += '\n';
  out_.append(static_cast<size_t>(indent_) * level, ' ');
}

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (itemsPerLevel_.empty()) return;
  if (itemsPerLevel_.back()++) out_ += ',';
  newline(itemsPerLevel_.size());
}

JsonWriter& JsonWriter::open(char bracket) {
  beforeValue();
  out_ += bracket;
  itemsPerLevel_.push_back(0);
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  const size_t items = itemsPerLevel_.back();
  itemsPerLevel_.pop_back();
  if (items) newline(itemsPerLevel_.size());
  out_ += bracket;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  beforeValue();
  writeString(out_, k);
  out_ += indent_ < 0 ? ":" : ": ";
  afterKey_ = true;
  return *this;
}

JsonWriter& JsonWriter::null() {
  beforeValue();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::boolean(bool b) {
  beforeValue();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::integer(int64_t i) {
  beforeValue();
  writeInteger(out_, i);
  return *this;
}

JsonWriter& JsonWriter::number(double d) { return value(JsonValue::number(d)); }

JsonWriter& JsonWriter::raw(std::string_view json) {
  beforeValue();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view s) {
  beforeValue();
  writeString(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(const JsonValue& v) {
  switch (v.kind()) {
    case JsonValue::Kind::Null: return null();
    case JsonValue::Kind::Bool: return boolean(v.asBool());
    case JsonValue::Kind::Number: {
      beforeValue();
      if (std::optional<int64_t> i = v.asInt64()) {  // exact integers (and integral doubles) print without exponent
        writeInteger(out_, *i);
      } else if (!std::isfinite(v.asDouble())) {
        out_ += "null";  // JSON has no NaN/Inf
      } else {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, v.asDouble());  // shortest round-trip form
        out_.append(buf, r.ptr);
      }
      return *this;
    }
    case JsonValue::Kind::String: return string(v.asString());
    case JsonValue::Kind::Array:
      beginArray();
      for (const JsonValue& item : v.items()) value(item);
      return endArray();
    case JsonValue::Kind::Object:
      beginObject();
      for (const auto& [k, member] : v.members()) key(k).value(member);
      return endObject();
  }
  return *this;
}

JsonBuilder& JsonBuilder::add(JsonValue v) {
  if (open_.empty()) {
    root_ = std::move(v);
  } else if (open_.back().isArray()) {
    open_.back().push(std::move(v));
  } else {
    open_.back().set(std::move(keys_.back()), std::move(v));
  }
  return *this;
}

JsonBuilder& JsonBuilder::beginObject() {
  open_.push_back(JsonValue::object());
  keys_.emplace_back();
  return *this;
}

JsonBuilder& JsonBuilder::beginArray() {
  open_.push_back(JsonValue::array());
  keys_.emplace_back();
  return *this;
}

JsonBuilder& JsonBuilder::end() {
  JsonValue done = std::move(open_.back());
  open_.pop_back();
  keys_.pop_back();
  return add(std::move(done));
}

JsonBuilder& JsonBuilder::key(std::string_view k) {
  keys_.back() = std::string(k);
  return *this;
}

absl::StatusOr<JsonValue> parseJson(std::string_view text, std::string_view source) {
  return Parser(text, source).parseDocument();
}

std::string writeJson(const JsonValue& v, int indent) {
  std::string out;
  JsonWriter(out, indent).value(v);
  return out;
}

}  // namespace amp::rt
