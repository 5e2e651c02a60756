#include "operator.h"

#include <cstring>

namespace mxlite {

// Declare every factory named in the list.
#define MXL_OPERATOR(name, family, factory) \
  namespace family {                        \
  Status factory(AttrParser* attrs, std::unique_ptr<Operator>* out); \
  }
#define MXL_OPERATOR_ALIAS(alias, canonical)
#include "op_list.inc"
#undef MXL_OPERATOR
#undef MXL_OPERATOR_ALIAS

namespace operator_cc {

using Factory = Status (*)(AttrParser*, std::unique_ptr<Operator>*);
struct Registration {
  const char* name;
  Factory factory;
};
struct Alias {
  const char* alias;
  const char* canonical;
};

#define MXL_OPERATOR(name, family, factory) {name, &family::factory},
#define MXL_OPERATOR_ALIAS(alias, canonical)
const Registration kOperators[] = {
#include "op_list.inc"
};
#undef MXL_OPERATOR
#undef MXL_OPERATOR_ALIAS

#define MXL_OPERATOR(name, family, factory)
#define MXL_OPERATOR_ALIAS(alias, canonical) {alias, canonical},
const Alias kAliases[] = {
#include "op_list.inc"
};
#undef MXL_OPERATOR
#undef MXL_OPERATOR_ALIAS

const Registration* Find(const std::string& op_name) {
  std::string name = op_name;
  for (const Alias& alias : kAliases) {
    if (name == alias.alias) {
      name = alias.canonical;
      break;
    }
  }
  for (const Registration& registration : kOperators) {
    if (name == registration.name) return &registration;
  }
  return nullptr;
}

}  // namespace operator_cc

std::string CanonicalOpName(const std::string& op_name) {
  const operator_cc::Registration* registration = operator_cc::Find(op_name);
  return registration ? registration->name : "";
}

Status CreateOperator(const std::string& op_name, const std::string& node_name,
                      const AttrMap& attrs, std::unique_ptr<Operator>* out) {
  const operator_cc::Registration* registration = operator_cc::Find(op_name);
  MXL_CHECK(registration != nullptr, "node '", node_name, "': operator '", op_name,
            "' is not supported by mxlite");
  AttrParser parser(node_name, registration->name, attrs);
  MXL_RETURN_IF_ERROR(registration->factory(&parser, out));
  return parser.Finish();
}

Status Operator::InferType(std::vector<int>* in, std::vector<int>* out) const {
  // Everything float32 for now: the dtype pass checks that nothing else is
  // asked for and names the input that is.
  for (size_t i = 0; i < in->size(); ++i) {
    int& dtype = (*in)[i];
    if (dtype == kUnknownDType) dtype = kFloat32;
    MXL_CHECK(dtype == kFloat32, "input '", InputNames()[i], "' has dtype ", DTypeName(dtype),
              "; this operator runs in float32 only");
  }
  for (int& dtype : *out) dtype = kFloat32;
  return Status();
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
