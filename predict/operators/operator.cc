#include "operator.h"

#include <cstring>

namespace mxlite {

const RuntimeOptions& Operator::runtime_options() const {
  static const RuntimeOptions defaults;
  return runtime_options_ != nullptr ? *runtime_options_ : defaults;
}

// Declare every factory named in the list.
#define MXL_OPERATOR(name, family, factory, dtypes) \
  namespace family {                                \
  Status factory(AttrParser* attrs, std::unique_ptr<Operator>* out); \
  }
#define MXL_INTERNAL_OPERATOR(name, family, factory, dtypes) \
  MXL_OPERATOR(name, family, factory, dtypes)
#define MXL_OPERATOR_ALIAS(alias, canonical)
#include "op_list.inc"
#undef MXL_OPERATOR
#undef MXL_INTERNAL_OPERATOR
#undef MXL_OPERATOR_ALIAS

namespace operator_cc {

using Factory = Status (*)(AttrParser*, std::unique_ptr<Operator>*);
struct Registration {
  const char* name;
  Factory factory;
  DTypeSupport dtypes;
  bool internal;  // the graph optimiser's own (MXL_INTERNAL_OPERATOR)
};
struct Alias {
  const char* alias;
  const char* canonical;
};

#define MXL_OPERATOR(name, family, factory, dtypes) {name, &family::factory, dtypes, false},
#define MXL_INTERNAL_OPERATOR(name, family, factory, dtypes) \
  {name, &family::factory, dtypes, true},
#define MXL_OPERATOR_ALIAS(alias, canonical)
const Registration kOperators[] = {
#include "op_list.inc"
};
#undef MXL_OPERATOR
#undef MXL_INTERNAL_OPERATOR
#undef MXL_OPERATOR_ALIAS

#define MXL_OPERATOR(name, family, factory, dtypes)
#define MXL_INTERNAL_OPERATOR(name, family, factory, dtypes)
#define MXL_OPERATOR_ALIAS(alias, canonical) {alias, canonical},
const Alias kAliases[] = {
#include "op_list.inc"
};
#undef MXL_OPERATOR
#undef MXL_INTERNAL_OPERATOR
#undef MXL_OPERATOR_ALIAS

// The registration of `op_name` (an alias resolved), or null when unknown.
// Internal operators are found only for mxlite's own callers.
const Registration* Find(const std::string& op_name, OpSource source) {
  std::string name = op_name;
  for (const Alias& alias : kAliases) {
    if (name == alias.alias) {
      name = alias.canonical;
      break;
    }
  }
  for (const Registration& registration : kOperators) {
    if (name != registration.name) continue;
    if (registration.internal && source != OpSource::kInternal) return nullptr;
    return &registration;
  }
  return nullptr;
}

// Operators compute in float32; the executor converts other dtypes on the
// way in and out, so any valid dtype works where the rule allows it.
bool IsSupportedDType(int dtype, bool float_only) {
  if (float_only) {
    return dtype == kFloat32 || dtype == kFloat16 || dtype == kFloat64 || dtype == kBfloat16;
  }
  return IsValidDType(dtype);
}

}  // namespace operator_cc

std::string CanonicalOpName(const std::string& op_name) {
  const operator_cc::Registration* registration = operator_cc::Find(op_name, OpSource::kUser);
  return registration ? registration->name : "";
}

Status CreateOperator(const std::string& op_name, const std::string& node_name,
                      const AttrMap& attrs, std::unique_ptr<Operator>* out, OpSource source) {
  const operator_cc::Registration* registration = operator_cc::Find(op_name, source);
  MXL_CHECK(registration != nullptr, "node '", node_name, "': operator '", op_name,
            "' is not supported by mxlite");
  AttrParser parser(node_name, registration->name, attrs);
  MXL_RETURN_IF_ERROR(registration->factory(&parser, out));
  MXL_RETURN_IF_ERROR(parser.Finish());
  (*out)->set_dtype_rule(registration->dtypes.rule);
  return Status();
}

std::vector<OperatorDoc> DescribeOperators() {
  using namespace operator_cc;
  std::vector<OperatorDoc> docs;
  for (const Registration& registration : kOperators) {
    OperatorDoc doc;
    doc.name = registration.name;
    for (const Alias& alias : kAliases) {
      if (doc.name == alias.canonical) doc.aliases.push_back(alias.alias);
    }
    const AttrMap no_attrs;
    AttrParser parser("(docs)", registration.name, no_attrs);
    parser.set_docs(&doc.attrs);
    std::unique_ptr<Operator> op;
    // Without attributes a factory may well reject the defaults (a missing
    // required attribute, a kernel that global_pool would make optional);
    // an internal error (a name missing from its family's table) is a
    // defect the documentation tool reports.
    Status status = registration.factory(&parser, &op);
    if (!status.ok() && status.message().compare(0, 15, "internal error:") == 0) {
      doc.error = status.message();
    }
    doc.dtypes = registration.dtypes.text;
    docs.push_back(std::move(doc));
  }
  return docs;
}

Status Operator::InferType(std::vector<int>* in, std::vector<int>* out) const {
  MXL_CHECK(dtype_rule_ != DTypeRule::kOwn, "internal error: no dtype rule for this operator");
  std::vector<int> all_inputs;
  for (size_t i = 0; i < in->size(); ++i) all_inputs.push_back(static_cast<int>(i));
  return UnifyDTypes(*this, all_inputs, dtype_rule_ == DTypeRule::kFloat, in, out);
}

Status UnifyDTypes(const Operator& op, const std::vector<int>& inputs, bool floats_only,
                   std::vector<int>* in, std::vector<int>* out) {
  // Take the dtype from whichever slot knows it, check the others agree,
  // then fill in the unknown ones.
  const std::vector<std::string> names = op.InputNames();
  int dtype = kUnknownDType;
  std::string source;
  auto merge = [&](int candidate, const std::string& what) -> Status {
    if (candidate == kUnknownDType) return Status();
    if (dtype == kUnknownDType) {
      dtype = candidate;
      source = what;
      return Status();
    }
    MXL_CHECK(candidate == dtype, what, " has dtype ", DTypeName(candidate), " but ", source,
              " has ", DTypeName(dtype), "; this operator needs one dtype for both");
    return Status();
  };
  for (int i : inputs) MXL_RETURN_IF_ERROR(merge((*in)[i], StrCat("input '", names[i], "'")));
  for (int& slot : *out) MXL_RETURN_IF_ERROR(merge(slot, "the output"));
  if (dtype == kUnknownDType) return Status();
  MXL_CHECK(operator_cc::IsSupportedDType(dtype, floats_only), source, " has dtype ",
            DTypeName(dtype), ", which this operator does not support (it takes ",
            floats_only ? kFloatTypes.text : kAnyTypes.text, ")");
  for (int i : inputs) (*in)[i] = dtype;
  for (int& slot : *out) slot = dtype;
  return Status();
}

std::vector<std::string> NumberedNames(const char* prefix, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

Status UnifyShapes(const Operator& op, const std::vector<int>& inputs, std::vector<Shape>* in,
                   Shape* shape) {
  const std::vector<std::string> names = op.InputNames();
  for (int i : inputs) {
    const Shape before = *shape;
    MXL_CHECK(MergeShape(shape, (*in)[i]), "input '", names[i], "' has shape ",
              (*in)[i].ToString(), " but the operator needs it to match ", before.ToString());
  }
  for (int i : inputs) MXL_RETURN_IF_ERROR(AssignShape(in, i, *shape, "input", names));
  return Status();
}

Status SameShapeInference(const Operator& op, std::vector<Shape>* in, std::vector<Shape>* out) {
  MXL_RETURN_IF_ERROR(AssignShape(out, 0, (*in)[0], "output", op.OutputNames()));
  return AssignShape(in, 0, (*out)[0], "input", op.InputNames());
}

Status AssignShape(std::vector<Shape>* shapes, int index, const Shape& want, const char* what,
                   const std::vector<std::string>& names) {
  Shape& have = (*shapes)[index];
  Shape before = have;
  if (!MergeShape(&have, want)) {
    const std::string name = index < static_cast<int>(names.size()) ? names[index] : "?";
    return Status::Error(StrCat(what, " '", name, "' has shape ", before.ToString(),
                                " but the operator needs ", want.ToString()));
  }
  return Status();
}

}  // namespace mxlite
