/*
 * A small JSON reader for symbol files: a DOM of values, object members in
 * file order. Errors give the line and column. Nesting depth is bounded so
 * that hostile input cannot overflow the stack.
 */
#ifndef MXLITE_GRAPH_JSON_H_
#define MXLITE_GRAPH_JSON_H_

#include <string>
#include <utility>
#include <vector>

#include "../base/status.h"

namespace mxlite {

struct JsonValue {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  // Member `key` of an object, or null when absent or not an object.
  const JsonValue* Find(const std::string& key) const {
    if (type != kObject) return nullptr;
    for (const auto& member : object) {
      if (member.first == key) return &member.second;
    }
    return nullptr;
  }
  bool is_string() const { return type == kString; }
  bool is_array() const { return type == kArray; }
  bool is_object() const { return type == kObject; }
  bool is_number() const { return type == kNumber; }
};

const char* JsonTypeName(JsonValue::Type type);

// Parses `size` bytes of `text`; trailing whitespace only is allowed.
Status ParseJson(const char* text, size_t size, JsonValue* out);

}  // namespace mxlite

#endif  // MXLITE_GRAPH_JSON_H_
