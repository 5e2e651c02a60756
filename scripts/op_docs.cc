/*
 * op_docs: prints the operator registry as JSON, one object per operator
 * (name, aliases, attributes as their factories read them, dtypes, and a
 * factory error if documenting it failed). scripts/gen_op_docs.py compiles
 * it together with the amalgamation and turns the output into
 * docs/operators.md. Not part of the library (the .so exports only the C
 * predict API).
 */
#include <cstdio>
#include <string>

#include "../predict/operators/operator.h"

namespace op_docs {

std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace op_docs

int main() {
  using op_docs::Quote;
  const std::vector<mxlite::OperatorDoc> docs = mxlite::DescribeOperators();
  std::printf("[\n");
  for (size_t i = 0; i < docs.size(); ++i) {
    const mxlite::OperatorDoc& doc = docs[i];
    std::string aliases, attrs;
    for (size_t k = 0; k < doc.aliases.size(); ++k) aliases += (k ? ", " : "") + Quote(doc.aliases[k]);
    for (size_t k = 0; k < doc.attrs.size(); ++k) {
      const mxlite::AttrDoc& attr = doc.attrs[k];
      attrs += std::string(k ? ", " : "") + "{\"name\": " + Quote(attr.name) +
               ", \"type\": " + Quote(attr.type) + ", \"default\": " + Quote(attr.default_value) +
               ", \"required\": " + (attr.required ? "true" : "false") + "}";
    }
    std::printf("{\"name\": %s, \"aliases\": [%s], \"attrs\": [%s], \"dtypes\": %s, \"error\": %s}%s\n",
                Quote(doc.name).c_str(), aliases.c_str(), attrs.c_str(), Quote(doc.dtypes).c_str(),
                Quote(doc.error).c_str(), i + 1 < docs.size() ? "," : "");
  }
  std::printf("]\n");
  return 0;
}
