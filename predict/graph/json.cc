#include "json.h"

#include <cstdlib>
#include <cstring>

namespace mxlite {

namespace json_cc {

constexpr int kMaxDepth = 512;

class Parser {
 public:
  Parser(const char* text, size_t size) : text_(text), size_(size) {}

  Status ParseDocument(JsonValue* out) {
    SkipSpace();
    MXL_RETURN_IF_ERROR(ParseValue(out, 0));
    SkipSpace();
    if (pos_ != size_) return Fail("unexpected text after the JSON document");
    return Status();
  }

 private:
  Status Fail(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < size_; ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Status::Error(StrCat("malformed JSON at line ", line, ", column ", column, ": ", what));
  }
  // 'c' for printable ASCII, else its code ("byte 0xc3"), so that messages
  // stay valid text whatever the input holds.
  static std::string Quote(char c) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) return StrCat("'", c, "'");
    const char* digits = "0123456789abcdef";
    return StrCat("byte 0x", digits[byte >> 4], digits[byte & 15]);
  }
  bool AtEnd() const { return pos_ >= size_; }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                        text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool ConsumeWord(const char* word) {
    size_t length = std::strlen(word);
    if (size_ - pos_ < length || std::strncmp(text_ + pos_, word, length) != 0) return false;
    pos_ += length;
    return true;
  }

  Status ParseValue(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return Fail("nesting too deep");
    if (AtEnd()) return Fail("unexpected end of input");
    char c = Peek();
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      out->type = JsonValue::kString;
      return ParseString(&out->string);
    }
    if (ConsumeWord("true")) {
      out->type = JsonValue::kBool;
      out->boolean = true;
      return Status();
    }
    if (ConsumeWord("false")) {
      out->type = JsonValue::kBool;
      return Status();
    }
    if (ConsumeWord("null")) {
      out->type = JsonValue::kNull;
      return Status();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(out);
    return Fail(StrCat("unexpected character ", Quote(c)));
  }

  Status ParseNumber(JsonValue* out) {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    while (!AtEnd() && std::strchr("0123456789.eE+-", text_[pos_]) != nullptr) ++pos_;
    std::string token(text_ + start, pos_ - start);
    char* end = nullptr;
    double value = std::strtod(token.c_str(), &end);
    if (end == nullptr || *end != '\0' || token == "-") {
      pos_ = start;
      return Fail(StrCat("invalid number '", token, "'"));
    }
    out->type = JsonValue::kNumber;
    out->number = value;
    return Status();
  }

  static void AppendUtf8(unsigned code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  Status ParseHex4(unsigned* code) {
    if (size_ - pos_ < 4) return Fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      value <<= 4;
      if (h >= '0' && h <= '9') value |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') value |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') value |= static_cast<unsigned>(h - 'A' + 10);
      else return Fail("invalid \\u escape");
    }
    *code = value;
    return Status();
  }

  Status ParseString(std::string* out) {
    ++pos_;  // opening quote
    out->clear();
    while (true) {
      if (AtEnd()) return Fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return Status();
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (AtEnd()) return Fail("unterminated string");
      char escape = text_[pos_++];
      switch (escape) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          unsigned code = 0;
          MXL_RETURN_IF_ERROR(ParseHex4(&code));
          if (code >= 0xD800 && code < 0xDC00 && ConsumeWord("\\u")) {
            unsigned low = 0;
            MXL_RETURN_IF_ERROR(ParseHex4(&low));
            if (low >= 0xDC00 && low < 0xE000) code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(code, out);
          break;
        }
        default: return Fail(StrCat("invalid escape after '\\': ", Quote(escape)));
      }
    }
  }

  Status ParseArray(JsonValue* out, int depth) {
    ++pos_;  // [
    out->type = JsonValue::kArray;
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return Status();
    }
    while (true) {
      SkipSpace();
      out->array.emplace_back();
      MXL_RETURN_IF_ERROR(ParseValue(&out->array.back(), depth + 1));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return Status();
      }
      return Fail(AtEnd() ? "unexpected end of input in an array" : "expected ',' or ']'");
    }
  }

  Status ParseObject(JsonValue* out, int depth) {
    ++pos_;  // {
    out->type = JsonValue::kObject;
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return Status();
    }
    while (true) {
      SkipSpace();
      if (Peek() != '"') {
        return Fail(AtEnd() ? "unexpected end of input in an object" : "expected a member name");
      }
      std::string key;
      MXL_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (Peek() != ':') return Fail("expected ':'");
      ++pos_;
      SkipSpace();
      out->object.emplace_back(std::move(key), JsonValue());
      MXL_RETURN_IF_ERROR(ParseValue(&out->object.back().second, depth + 1));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return Status();
      }
      return Fail(AtEnd() ? "unexpected end of input in an object" : "expected ',' or '}'");
    }
  }

  const char* text_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace json_cc

const char* JsonTypeName(JsonValue::Type type) {
  switch (type) {
    case JsonValue::kNull: return "null";
    case JsonValue::kBool: return "a boolean";
    case JsonValue::kNumber: return "a number";
    case JsonValue::kString: return "a string";
    case JsonValue::kArray: return "an array";
    case JsonValue::kObject: return "an object";
  }
  return "?";
}

Status ParseJson(const char* text, size_t size, JsonValue* out) {
  *out = JsonValue();
  json_cc::Parser parser(text, size);
  return parser.ParseDocument(out);
}

}  // namespace mxlite
