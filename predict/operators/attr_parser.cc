#include "attr_parser.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mxlite {

namespace attr_parser_cc {

std::string Trim(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

bool ParseInt(const std::string& raw, int64_t* out) {
  std::string text = Trim(raw);
  // MXNet writes some ints with a long suffix in old files ("3L").
  if (!text.empty() && (text.back() == 'L' || text.back() == 'l')) text.pop_back();
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = value;
  return true;
}

bool ParseFloat(const std::string& raw, double* out) {
  std::string text = Trim(raw);
  if (text.empty()) return false;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0') return false;
  *out = value;
  return true;
}

// A number as MXNet reads a "float or None" field (dmlc::optional<double>,
// read with std::istream): decimal only, finite, within double's range.
// nan, inf, hexadecimal and overflowing values are refused, as MXNet 1.9.1
// refuses them ("Invalid Parameter format ... expect double or None").
bool ParseOptionalFloat(const std::string& raw, double* out) {
  const std::string text = Trim(raw);
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' &&
        c != '+' && c != '-') {
      return false;
    }
  }
  errno = 0;
  double value = 0;
  if (!ParseFloat(text, &value) || errno == ERANGE || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

bool ParseBool(const std::string& raw, bool* out) {
  std::string text = Trim(raw);
  if (text == "True" || text == "true" || text == "1") {
    *out = true;
  } else if (text == "False" || text == "false" || text == "0") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// The items of a tuple "(a, b)", "[a, b]" or "a, b" (a bare "a" is a
// 1-tuple), trimmed; false when malformed.
bool SplitTuple(const std::string& raw, std::vector<std::string>* items) {
  std::string text = Trim(raw);
  items->clear();
  if (!text.empty() && (text.front() == '(' || text.front() == '[')) {
    char close = text.front() == '(' ? ')' : ']';
    if (text.size() < 2 || text.back() != close) return false;
    text = text.substr(1, text.size() - 2);
  }
  text = Trim(text);
  if (text.empty()) return true;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = Trim(text.substr(start, comma == std::string::npos ? std::string::npos
                                                                          : comma - start));
    if (item.empty()) {
      // Python writes 1-tuples as "(3,)": a trailing comma is fine.
      if (comma == std::string::npos) break;
      return false;
    }
    items->push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

bool ParseTuple(const std::string& raw, std::vector<int64_t>* out) {
  std::vector<std::string> items;
  out->clear();
  if (!SplitTuple(raw, &items)) return false;
  for (const std::string& item : items) {
    int64_t value = 0;
    if (item == "None") {
      value = kNoneInt;
    } else if (!ParseInt(item, &value)) {
      return false;
    }
    out->push_back(value);
  }
  return true;
}

bool ParseFloatTuple(const std::string& raw, std::vector<double>* out) {
  std::vector<std::string> items;
  out->clear();
  if (!SplitTuple(raw, &items)) return false;
  for (const std::string& item : items) {
    double value = 0;
    if (!ParseFloat(item, &value)) return false;
    out->push_back(value);
  }
  return true;
}

// The shortest decimal text that reads back as `value` ("0.001", "1e-05").
std::string FormatNumber(double value) {
  char text[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string FormatTuple(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    text += (i ? ", " : "") + (values[i] == kNoneInt ? "None" : std::to_string(values[i]));
  }
  return text + (values.size() == 1 ? ",)" : ")");
}

std::string FormatFloatTuple(const std::vector<double>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + FormatNumber(values[i]);
  return text + (values.size() == 1 ? ",)" : ")");
}

bool IsNone(const std::string& raw) { return Trim(raw) == "None"; }

}  // namespace attr_parser_cc

bool IsHiddenAttr(const std::string& key) {
  if (key.size() >= 4 && key.compare(0, 2, "__") == 0 &&
      key.compare(key.size() - 2, 2, "__") == 0) {
    return true;
  }
  static constexpr char kHiddenKeys[][16] = {"ctx_group", "lr_mult", "wd_mult",
                                             "force_mirroring", "mirror_stage"};
  for (const char* hidden : kHiddenKeys) {
    std::string name(hidden);
    if (key == name) return true;
    if (key.size() > name.size() + 1 &&
        key.compare(key.size() - name.size() - 1, std::string::npos, "_" + name) == 0) {
      return true;
    }
  }
  return false;
}

void AttrParser::Document(const char* key, const std::string& type,
                          const std::string& default_value, bool required) {
  if (docs_ == nullptr) return;
  for (const AttrDoc& doc : *docs_) {
    if (doc.name == key) return;  // read twice: keep the first description
  }
  docs_->push_back(AttrDoc{key, type, required ? "" : default_value, required});
}

const std::string* AttrParser::Lookup(const char* key, bool required) {
  used_.insert(key);
  auto it = attrs_.find(key);
  if (it == attrs_.end()) {
    if (required && error_.empty()) {
      error_ = StrCat("node '", node_name_, "' (", op_name_, "): required attribute '", key,
                      "' is missing");
    }
    return nullptr;
  }
  return &it->second;
}

void AttrParser::Bad(const char* key, const std::string& value, const char* expected) {
  Fail(key, StrCat("value '", value, "' is not ", expected));
}

void AttrParser::Fail(const char* key, const std::string& problem) {
  if (error_.empty()) {
    error_ = StrCat("node '", node_name_, "' (", op_name_, "): attribute '", key, "': ", problem);
  }
}

int64_t AttrParser::Int(const char* key) {
  Document(key, "int", "", true);
  const std::string* raw = Lookup(key, true);
  int64_t value = 0;
  if (raw && !attr_parser_cc::ParseInt(*raw, &value)) Bad(key, *raw, "an integer");
  return value;
}

int64_t AttrParser::Int(const char* key, int64_t default_value) {
  Document(key, "int", std::to_string(default_value), false);
  const std::string* raw = Lookup(key, false);
  if (!raw) return default_value;
  int64_t value = default_value;
  if (!attr_parser_cc::ParseInt(*raw, &value)) Bad(key, *raw, "an integer");
  return value;
}

double AttrParser::Float(const char* key) {
  Document(key, "float", "", true);
  const std::string* raw = Lookup(key, true);
  double value = 0;
  if (raw && !attr_parser_cc::ParseFloat(*raw, &value)) Bad(key, *raw, "a number");
  return value;
}

double AttrParser::Float(const char* key, double default_value) {
  Document(key, "float", attr_parser_cc::FormatNumber(default_value), false);
  const std::string* raw = Lookup(key, false);
  if (!raw) return default_value;
  double value = default_value;
  if (!attr_parser_cc::ParseFloat(*raw, &value)) Bad(key, *raw, "a number");
  return value;
}

bool AttrParser::Bool(const char* key, bool default_value) {
  Document(key, "boolean", default_value ? "True" : "False", false);
  const std::string* raw = Lookup(key, false);
  if (!raw) return default_value;
  bool value = default_value;
  if (!attr_parser_cc::ParseBool(*raw, &value)) Bad(key, *raw, "a boolean (True/False/1/0)");
  return value;
}

std::vector<int64_t> AttrParser::Tuple(const char* key, const std::vector<int64_t>& default_value) {
  Document(key, "tuple of int", attr_parser_cc::FormatTuple(default_value), false);
  const std::string* raw = Lookup(key, false);
  if (!raw) return default_value;
  std::vector<int64_t> value;
  if (!attr_parser_cc::ParseTuple(*raw, &value)) {
    Bad(key, *raw, "a tuple of integers such as (3, 3)");
    return default_value;
  }
  return value;
}

std::vector<int64_t> AttrParser::Tuple(const char* key) {
  Document(key, "tuple of int", "", true);
  const std::string* raw = Lookup(key, true);
  std::vector<int64_t> value;
  if (raw && !attr_parser_cc::ParseTuple(*raw, &value)) {
    Bad(key, *raw, "a tuple of integers such as (3, 3)");
  }
  return value;
}

std::vector<double> AttrParser::FloatTuple(const char* key,
                                           const std::vector<double>& default_value) {
  Document(key, "tuple of float", attr_parser_cc::FormatFloatTuple(default_value), false);
  const std::string* raw = Lookup(key, false);
  if (!raw) return default_value;
  std::vector<double> value;
  if (!attr_parser_cc::ParseFloatTuple(*raw, &value)) {
    Bad(key, *raw, "a tuple of numbers such as (0.1, 0.2)");
    return default_value;
  }
  return value;
}

void AttrParser::IgnoreFloat(const char* key) {
  Ignore(key);
  const std::string* raw = Lookup(key, false);
  double value = 0;
  if (raw && !attr_parser_cc::ParseFloat(*raw, &value)) Bad(key, *raw, "a number");
}

void AttrParser::IgnoreBool(const char* key) {
  Ignore(key);
  const std::string* raw = Lookup(key, false);
  bool value = false;
  if (raw && !attr_parser_cc::ParseBool(*raw, &value)) {
    Bad(key, *raw, "a boolean (True/False/1/0)");
  }
}

void AttrParser::IgnoreEnum(const char* key, const std::vector<std::string>& choices) {
  Ignore(key);
  const std::string* raw = Lookup(key, false);
  if (raw == nullptr) return;
  const std::string text = attr_parser_cc::Trim(*raw);
  std::string allowed;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == text) return;
    allowed += (i ? ", " : "") + choices[i];
  }
  Fail(key, StrCat("value '", text, "' is not supported (expected one of: ", allowed, ")"));
}

int AttrParser::Enum(const char* key, const std::vector<std::string>& choices, int default_index) {
  std::string allowed;
  for (size_t i = 0; i < choices.size(); ++i) allowed += (i ? ", " : "") + choices[i];
  Document(key, "{" + allowed + "}", default_index >= 0 ? choices[default_index] : "",
           default_index < 0);
  const std::string* raw = Lookup(key, default_index < 0);
  if (!raw) return default_index;
  std::string text = attr_parser_cc::Trim(*raw);
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == text) return static_cast<int>(i);
  }
  Fail(key, StrCat("value '", text, "' is not supported (expected one of: ", allowed, ")"));
  return default_index < 0 ? 0 : default_index;
}

int AttrParser::DType(const char* key, const std::vector<std::string>& choices,
                      int default_index) {
  const int choice = Enum(key, choices, default_index);
  if (choice < 0 || choices[choice] == "None") return kUnknownDType;
  return DTypeFromName(choices[choice].c_str());
}

std::string AttrParser::String(const char* key, const std::string& default_value) {
  Document(key, "string", default_value, false);
  const std::string* raw = Lookup(key, false);
  return raw ? *raw : default_value;
}

std::string AttrParser::String(const char* key) {
  Document(key, "string", "", true);
  const std::string* raw = Lookup(key, true);
  return raw ? *raw : std::string();
}

int64_t AttrParser::OptionalInt(const char* key, int64_t default_value) {
  Document(key, "int or None",
           default_value == kNoneInt ? std::string("None") : std::to_string(default_value), false);
  const std::string* raw = Lookup(key, false);
  if (!raw) return default_value;
  if (attr_parser_cc::IsNone(*raw)) return kNoneInt;
  int64_t value = kNoneInt;
  if (!attr_parser_cc::ParseInt(*raw, &value)) Bad(key, *raw, "an integer or None");
  return value;
}

bool AttrParser::OptionalFloat(const char* key, double* value) {
  Document(key, "float or None", "None", false);
  const std::string* raw = Lookup(key, false);
  if (!raw || attr_parser_cc::IsNone(*raw)) return false;
  if (!attr_parser_cc::ParseOptionalFloat(*raw, value)) {
    Bad(key, *raw, "a finite decimal number or None");
    return false;
  }
  return true;
}

bool AttrParser::OptionalBool(const char* key) {
  Document(key, "boolean or None", "None", false);
  const std::string* raw = Lookup(key, false);
  if (!raw || attr_parser_cc::IsNone(*raw)) return false;
  bool value = false;
  if (!attr_parser_cc::ParseBool(*raw, &value)) Bad(key, *raw, "a boolean (True/False/1/0) or None");
  return value;
}

bool AttrParser::OptionalTuple(const char* key, std::vector<int64_t>* value) {
  Document(key, "tuple of int or None", "None", false);
  const std::string* raw = Lookup(key, false);
  if (!raw || attr_parser_cc::IsNone(*raw)) return false;
  if (!attr_parser_cc::ParseTuple(*raw, value)) {
    Bad(key, *raw, "a tuple of integers such as (1, 2), or None");
    return false;
  }
  return true;
}

Status AttrParser::Finish() const {
  if (!error_.empty()) return Status::Error(error_);
  for (const auto& attr : attrs_) {
    if (used_.count(attr.first) == 0 && !IsHiddenAttr(attr.first)) {
      return Status::Error(StrCat("node '", node_name_, "' (", op_name_, "): unknown attribute '",
                                  attr.first, "' = '", attr.second, "'"));
    }
  }
  return Status();
}

std::string TupleText(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + ")";
}

bool CheckWindowAttrs(AttrParser* attrs, const std::vector<WindowAttr>& windows, size_t rank,
                      const std::string& kernel_text, bool extra_allowed) {
  for (const WindowAttr& window : windows) {
    std::vector<int64_t>& values = *window.values;
    if (values.empty()) values.assign(rank, window.fill);
    if (extra_allowed ? values.size() < rank : values.size() != rank) {
      attrs->Fail(window.key, StrCat(TupleText(values), " has ", values.size(), " entries but ",
                                     kernel_text));
      return false;
    }
    for (int64_t value : values) {
      if (value < window.minimum) {
        attrs->Fail(window.key,
                    StrCat(TupleText(values), ": entries must be >= ", window.minimum));
        return false;
      }
    }
  }
  return true;
}

}  // namespace mxlite
