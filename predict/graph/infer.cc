#include "infer.h"

#include <cstdlib>

namespace mxlite {

namespace infer_cc {

constexpr int kMaxSweeps = 16;

// Shared driver for shape and dtype inference: per-node attribute vectors
// gathered from the entries, passed to the operator, merged back.
template <typename Attr, typename Traits>
Status Propagate(const Graph& graph, std::vector<std::vector<Attr>>* entries,
                 const char* what) {
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool changed = false;
    const bool forward = sweep % 2 == 0;
    const int count = static_cast<int>(graph.nodes.size());
    for (int step = 0; step < count; ++step) {
      const int n = forward ? step : count - 1 - step;
      const Node& node = graph.nodes[n];
      if (node.is_variable()) continue;
      std::vector<Attr> in;
      for (const NodeEntry& input : node.inputs) in.push_back((*entries)[input.node][input.index]);
      std::vector<Attr> out = (*entries)[n];
      Status status = Traits::Infer(*node.op, &in, &out);
      if (!status.ok()) {
        return Status::Error(StrCat(what, " inference failed at node ", graph.Describe(n), ": ",
                                    status.message()));
      }
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        Attr& slot = (*entries)[node.inputs[i].node][node.inputs[i].index];
        Attr before = slot;
        if (!Traits::Merge(&slot, in[i])) {
          return Status::Error(StrCat(what, " inference failed at node ", graph.Describe(n),
                                      ": input '", node.op->InputNames()[i], "' is ",
                                      Traits::Text(before), " elsewhere but ",
                                      Traits::Text(in[i]), " here"));
        }
        changed |= !(slot == before);
      }
      for (size_t i = 0; i < out.size(); ++i) {
        Attr& slot = (*entries)[n][i];
        Attr before = slot;
        if (!Traits::Merge(&slot, out[i])) {
          return Status::Error(StrCat(what, " inference failed at node ", graph.Describe(n),
                                      ": output ", i, " conflicts"));
        }
        changed |= !(slot == before);
      }
    }
    if (!changed && sweep > 0) break;
  }
  return Status();
}

struct ShapeTraits {
  static Status Infer(const Operator& op, std::vector<Shape>* in, std::vector<Shape>* out) {
    return op.InferShape(in, out);
  }
  static bool Merge(Shape* target, const Shape& incoming) { return MergeShape(target, incoming); }
  static std::string Text(const Shape& shape) { return shape.ToString(); }
  static bool Complete(const Shape& shape) { return shape.is_complete(); }
};

struct DTypeTraits {
  static Status Infer(const Operator& op, std::vector<int>* in, std::vector<int>* out) {
    return op.InferType(in, out);
  }
  static bool Merge(int* target, int incoming) {
    if (incoming == kUnknownDType) return true;
    if (*target == kUnknownDType) {
      *target = incoming;
      return true;
    }
    return *target == incoming;
  }
  static std::string Text(int dtype) { return DTypeName(dtype); }
  static bool Complete(int dtype) { return dtype != kUnknownDType; }
};

// Names the first entry that stayed unknown.
template <typename Attr, typename Traits>
Status CheckComplete(const Graph& graph, const std::vector<std::vector<Attr>>& entries,
                     const char* what) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (size_t i = 0; i < entries[n].size(); ++i) {
      if (Traits::Complete(entries[n][i])) continue;
      if (node.is_variable()) {
        return Status::Error(StrCat("cannot infer the ", what, " of '", node.name,
                                    "': give it as an input ", what, " (it is ",
                                    Traits::Text(entries[n][i]), ")"));
      }
      std::string inputs;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const NodeEntry& input = node.inputs[k];
        inputs += StrCat(k ? ", " : "", node.op->InputNames()[k], "=",
                         Traits::Text(entries[input.node][input.index]));
      }
      return Status::Error(StrCat("cannot infer the ", what, " of output '", node.OutputName(i),
                                  "' of node ", graph.Describe(static_cast<int>(n)),
                                  " from its inputs (", inputs, ")"));
    }
  }
  return Status();
}

}  // namespace infer_cc

Shape ParseShapeHint(const std::string& text, bool* ok) {
  *ok = true;
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '-' || (c >= '0' && c <= '9')) {
      char* end = nullptr;
      long long value = std::strtoll(text.c_str() + pos, &end, 10);
      // A sign without a number ("(1- 3)") reads nothing: not a shape.
      if (end == text.c_str() + pos) {
        *ok = false;
        return Shape();
      }
      pos = static_cast<size_t>(end - text.c_str());
      dims.push_back(value <= 0 ? -1 : value);  // 0 and -1 both mean unknown
    } else if (c == '(' || c == ')' || c == '[' || c == ']' || c == ',' || c == ' ' ||
               c == 'L') {
      ++pos;
    } else {
      *ok = false;
      return Shape();
    }
  }
  if (dims.empty()) return Shape();  // rank unknown
  return Shape(std::move(dims));
}

Status InferShapes(const Graph& graph, const std::map<std::string, Shape>& known,
                   const std::map<std::string, Shape>& fallback, EntryShapes* shapes) {
  using namespace infer_cc;
  shapes->assign(graph.nodes.size(), {});
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    (*shapes)[n].assign(node.num_outputs(), Shape());
    if (!node.is_variable()) continue;
    auto given = known.find(node.name);
    if (given != known.end()) {
      (*shapes)[n][0] = given->second;
      continue;
    }
    auto hint = node.attrs.find("__shape__");
    if (hint != node.attrs.end()) {
      bool ok = false;
      (*shapes)[n][0] = ParseShapeHint(hint->second, &ok);
      MXL_CHECK(ok, "variable '", node.name, "': cannot parse __shape__ '", hint->second, "'");
    }
  }
  MXL_RETURN_IF_ERROR((Propagate<Shape, ShapeTraits>(graph, shapes, "shape")));
  // Seed what is still unknown from the parameters, then try again.
  bool seeded = false;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (!node.is_variable() || (*shapes)[n][0].is_complete()) continue;
    auto param = fallback.find(node.name);
    if (param == fallback.end()) continue;
    MXL_CHECK(MergeShape(&(*shapes)[n][0], param->second), "parameter '", node.name,
              "' has shape ", param->second.ToString(), " but the graph needs ",
              (*shapes)[n][0].ToString());
    seeded = true;
  }
  if (seeded) MXL_RETURN_IF_ERROR((Propagate<Shape, ShapeTraits>(graph, shapes, "shape")));
  return CheckComplete<Shape, ShapeTraits>(graph, *shapes, "shape");
}

Status InferDTypes(const Graph& graph, const std::map<std::string, int>& known,
                   EntryDTypes* dtypes) {
  using namespace infer_cc;
  dtypes->assign(graph.nodes.size(), {});
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    (*dtypes)[n].assign(node.num_outputs(), kUnknownDType);
    if (!node.is_variable()) continue;
    auto given = known.find(node.name);
    if (given != known.end()) {
      (*dtypes)[n][0] = given->second;
      continue;
    }
    auto hint = node.attrs.find("__dtype__");
    if (hint != node.attrs.end()) {
      int flag = std::atoi(hint->second.c_str());
      MXL_CHECK(flag == kUnknownDType || IsValidDType(flag), "variable '", node.name,
                "': unknown __dtype__ '", hint->second, "'");
      (*dtypes)[n][0] = flag;
    }
  }
  MXL_RETURN_IF_ERROR((Propagate<int, DTypeTraits>(graph, dtypes, "dtype")));
  return CheckComplete<int, DTypeTraits>(graph, *dtypes, "dtype");
}

}  // namespace mxlite
