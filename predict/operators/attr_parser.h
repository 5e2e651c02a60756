/*
 * AttrParser: typed reading of one node's string attributes.
 *
 * MXNet stores attributes as strings: ints "3", floats "1e-05", booleans
 * "True"/"False"/"1"/"0", tuples "(3, 3)" or "[3,3]" (entries may be None),
 * enums by name. An operator factory asks for each attribute it knows with a
 * default or as required; the first problem is remembered and returned by
 * Finish(), which also rejects attributes the operator does not know. Hidden
 * attributes ("__shape__", "lr_mult", ...) never reach the parser.
 *
 * The same calls document the operator: with a documentation sink attached
 * (set_docs), every getter also records the attribute's name, type and
 * default. scripts/gen_op_docs.py runs each factory on no attributes that
 * way to write docs/operators.md, so the table cannot drift from the code.
 * Factories therefore read every attribute they know unconditionally.
 */
#ifndef MXLITE_OPERATORS_ATTR_PARSER_H_
#define MXLITE_OPERATORS_ATTR_PARSER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../base/dtype.h"
#include "../base/status.h"

namespace mxlite {

using AttrMap = std::map<std::string, std::string>;

// One attribute as a factory reads it, for the generated operator table.
struct AttrDoc {
  std::string name;
  std::string type;           // "int", "float", "boolean", "tuple of int", "{a, b}", ...
  std::string default_value;  // as MXNet would print it; empty when required
  bool required = false;
};

// An optional integer tuple entry ("None" in MXNet's notation).
constexpr int64_t kNoneInt = INT64_MIN;

class AttrParser {
 public:
  AttrParser(const std::string& node_name, const std::string& op_name, const AttrMap& attrs)
      : node_name_(node_name), op_name_(op_name), attrs_(attrs) {}

  bool Has(const char* key) const { return attrs_.count(key) != 0; }
  int64_t Int(const char* key);  // required
  int64_t Int(const char* key, int64_t default_value);
  double Float(const char* key);  // required
  double Float(const char* key, double default_value);
  bool Bool(const char* key, bool default_value);
  // Tuple of ints; a bare "3" is a 1-tuple. "None" entries give kNoneInt.
  std::vector<int64_t> Tuple(const char* key, const std::vector<int64_t>& default_value);
  std::vector<int64_t> Tuple(const char* key);  // required
  // Tuple of numbers ("(0.1, 0.2)", "[0.5]", "0.5").
  std::vector<double> FloatTuple(const char* key, const std::vector<double>& default_value);
  // Index of the value in `choices`; `default_index` when absent.
  int Enum(const char* key, const std::vector<std::string>& choices, int default_index);
  // A dtype by name among `choices` (numpy names, "None" allowed), as its
  // type flag; "None" gives kUnknownDType. `default_index` as for Enum.
  int DType(const char* key, const std::vector<std::string>& choices, int default_index);
  std::string String(const char* key, const std::string& default_value);
  std::string String(const char* key);  // required
  // An int or "None" (MXNet's "int or None" fields): "None" gives kNoneInt,
  // absence `default_value` (which may be kNoneInt).
  int64_t OptionalInt(const char* key, int64_t default_value = kNoneInt);
  // A number or "None"; false (and *value untouched) when None or absent.
  bool OptionalFloat(const char* key, double* value);
  // A boolean or "None" (None counts as false).
  bool OptionalBool(const char* key);
  // A tuple of ints or "None"; false when None or absent.
  bool OptionalTuple(const char* key, std::vector<int64_t>* value);
  // Marks an attribute as known but without effect on inference (cudnn_tune,
  // workspace, momentum, ...).
  void Ignore(const char* key) {
    used_.insert(key);
    Document(key, "ignored at inference", "", false);
  }
  // The same, for attributes whose value MXNet still reads (and refuses
  // when malformed, as momentum="(1,)"): the value must be a number, a
  // boolean, or one of `choices`, though it has no effect.
  void IgnoreFloat(const char* key);
  void IgnoreBool(const char* key);
  void IgnoreEnum(const char* key, const std::vector<std::string>& choices);

  // Records every attribute read from now on into `docs`.
  void set_docs(std::vector<AttrDoc>* docs) { docs_ = docs; }

  // Records a semantic problem with an attribute found by the factory.
  void Fail(const char* key, const std::string& problem);
  // The first problem, or an unknown-attribute error, or success.
  Status Finish() const;

  const std::string& node_name() const { return node_name_; }
  // The node's attributes, for a factory that hands them to another parser.
  const AttrMap& attrs() const { return attrs_; }
  const std::string& op_name() const { return op_name_; }

 private:
  const std::string* Lookup(const char* key, bool required);
  void Bad(const char* key, const std::string& value, const char* expected);
  void Document(const char* key, const std::string& type, const std::string& default_value,
                bool required);

  std::string node_name_;
  std::string op_name_;
  const AttrMap& attrs_;
  std::set<std::string> used_;
  std::string error_;
  std::vector<AttrDoc>* docs_ = nullptr;
};

// True for attributes that carry no operator meaning: "__x__" hints and the
// training-time keys MXNet hides (ctx_group, lr_mult, wd_mult,
// force_mirroring, mirror_stage), also in their "<input>_<key>" form.
bool IsHiddenAttr(const std::string& key);

// "(1, 2, 3)": a tuple as messages print it.
std::string TupleText(const std::vector<int64_t>& values);

// One window attribute of a convolution or pooling operator (kernel,
// stride, dilate, pad, ...): what each dimension of an empty tuple becomes,
// and the least value an entry may have.
struct WindowAttr {
  const char* key;
  std::vector<int64_t>* values;
  int64_t fill;
  int64_t minimum;
};

// Fills each empty tuple of `windows` with `rank` copies of its fill, then
// checks, in order, that each has `rank` entries (at least `rank` with
// `extra_allowed`: MXNet's pooling ignores the rest) and none below its
// minimum. The first problem is recorded on `attrs` ("(1, 1) has 2 entries
// but " + `kernel_text`, "(0, -1): entries must be >= 0") and false
// returned; the caller then returns attrs->Finish().
bool CheckWindowAttrs(AttrParser* attrs, const std::vector<WindowAttr>& windows, size_t rank,
                      const std::string& kernel_text, bool extra_allowed = false);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_ATTR_PARSER_H_
