#include "model.h"

#include "../graph/fuse.h"
#include "../ndarray/ndarray_io.h"

namespace mxlite {

namespace model_cc {

// Loads the parameters that the graph uses, keyed by variable name, and
// lists every name the file holds.
Status LoadParams(const void* bytes, size_t size, const Graph& graph,
                  std::map<std::string, NDArray>* params, std::vector<std::string>* file_names) {
  if (size == 0) return Status();
  MXL_CHECK(bytes != nullptr, "param_bytes is NULL but param_size is ", size);
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  MXL_RETURN_IF_ERROR(LoadNDArrayList(bytes, size, "params", &arrays, &names));
  *file_names = names;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name = names[i];
    if (name.compare(0, 4, "arg:") == 0 || name.compare(0, 4, "aux:") == 0) name = name.substr(4);
    int node = graph.FindNode(name);
    if (node < 0 || !graph.nodes[node].is_variable()) continue;  // unused entries are fine
    MXL_CHECK(!arrays[i].is_none(), "params: '", names[i], "' is an empty (none) array");
    MXL_CHECK(params->count(name) == 0, "params: '", name, "' appears twice");
    (*params)[name] = arrays[i];  // in its stored dtype; type inference checks it
  }
  return Status();
}

}  // namespace model_cc

Status LoadModel(const char* symbol_json, size_t symbol_json_size, const void* param_bytes,
                 size_t param_size, const std::vector<std::string>& output_keys,
                 std::shared_ptr<Model>* out) {
  MXL_CHECK(symbol_json != nullptr, "the symbol JSON is NULL");
  auto model = std::make_shared<Model>();
  MXL_RETURN_IF_ERROR(LoadSymbolJson(symbol_json, symbol_json_size, &model->graph));
  if (!output_keys.empty()) {
    std::vector<OutputSelector> selectors;
    for (const std::string& key : output_keys) {
      selectors.push_back(OutputSelector::PredictKey(key));
    }
    MXL_RETURN_IF_ERROR(SelectOutputs(selectors, &model->graph));
  }
  PruneToOutputs(&model->graph);
  MXL_RETURN_IF_ERROR(model_cc::LoadParams(param_bytes, param_size, model->graph, &model->params,
                                           &model->file_names));
  *out = std::move(model);
  return Status();
}

Status CheckInputShape(const std::string& name, const Shape& shape) {
  MXL_CHECK(shape.ndim() > 0, "input '", name, "': the shape has no dimensions");
  for (int i = 0; i < shape.ndim(); ++i) {
    MXL_CHECK(shape.dims()[i] > 0, "input '", name, "': dimensions must be positive, got ",
              shape.ToString(), " (dimension ", i, " is ", shape.dims()[i], ")");
  }
  return Status();
}

std::string QuotedNames(const std::vector<std::string>& names, size_t limit) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < limit; ++i) {
    text += StrCat(i == 0 ? "'" : ", '", names[i], "'");
  }
  if (names.size() > limit) text += StrCat(" and ", names.size() - limit, " more");
  return text.empty() ? "none" : text;
}

namespace model_cc {

// A slot at which an operator reads a learned parameter.
bool IsParameterSlot(const std::string& slot) {
  for (const char* name :
       {"weight", "bias", "gamma", "beta", "moving_mean", "moving_var", "parameters"}) {
    if (slot == name) return true;
  }
  return false;
}

// The parameters as ParameterNames lists them, each with the first node
// slot that reads it ("input 'weight' of node 'c1' (Convolution)").
std::vector<std::pair<std::string, std::string>> ParameterReaders(const Graph& graph) {
  std::vector<std::string> reader(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable()) continue;
    const std::vector<std::string> slots = node.op->InputNames();
    const std::vector<int> unread = node.op->UnreadInputs();
    for (size_t i = 0; i < node.inputs.size() && i < slots.size(); ++i) {
      bool skipped = false;
      for (int slot : unread) skipped |= slot == static_cast<int>(i);
      const int from = node.inputs[i].node;
      if (skipped || !IsParameterSlot(slots[i]) || !graph.nodes[from].is_variable() ||
          !reader[from].empty()) {
        continue;
      }
      reader[from] =
          StrCat("input '", slots[i], "' of node ", graph.Describe(static_cast<int>(n)));
    }
  }
  std::vector<std::pair<std::string, std::string>> parameters;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!reader[n].empty()) parameters.emplace_back(graph.nodes[n].name, reader[n]);
  }
  return parameters;
}

}  // namespace model_cc

std::vector<std::string> ParameterNames(const Model& model) {
  std::vector<std::string> names;
  for (const auto& parameter : model_cc::ParameterReaders(model.graph)) {
    names.push_back(parameter.first);
  }
  return names;
}

Status CheckParameters(const Model& model, const std::vector<std::string>& inputs) {
  const auto parameters = model_cc::ParameterReaders(model.graph);
  std::vector<std::string> missing;
  std::string first_reader;
  size_t provided = 0;
  for (const auto& parameter : parameters) {
    if (model.params.count(parameter.first)) ++provided;
    bool given = false;
    for (const std::string& input : inputs) given |= input == parameter.first;
    if (model.params.count(parameter.first) || given) continue;
    if (missing.empty()) first_reader = parameter.second;
    missing.push_back(parameter.first);
  }
  if (missing.empty()) return Status();
  if (provided == 0 && !model.file_names.empty()) {
    return Status::Error(StrCat(
        "params: the file provides none of the model's ", parameters.size(),
        " parameters (first expected: '", parameters[0].first, "'); it holds ",
        QuotedNames(model.file_names, 3),
        ": was it saved for another model, or by Gluon's save_parameters()? A block's "
        "export() writes a matching pair of symbol and params files"));
  }
  if (missing.size() == 1) {
    return Status::Error(StrCat("parameter '", missing[0], "' (", first_reader,
                                ") is neither in the params file nor among the inputs"));
  }
  return Status::Error(StrCat("parameter '", missing[0], "' (", first_reader,
                              ") is neither in the params file nor among the inputs, nor are ",
                              missing.size() - 1, " more of the model's ", parameters.size(),
                              " parameters (", QuotedNames(missing, 6),
                              "): was the params file saved for another model?"));
}


InputList ListInputs(const Model& model) {
  const Graph& graph = model.graph;
  std::vector<bool> read(graph.nodes.size(), false);
  for (const Node& node : graph.nodes) {
    if (node.is_variable()) continue;
    std::vector<int> unread = node.op->UnreadInputs();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      bool skipped = false;
      for (int slot : unread) skipped |= slot == static_cast<int>(i);
      if (!skipped) read[node.inputs[i].node] = true;
    }
  }
  for (const NodeEntry& output : graph.outputs) read[output.node] = true;
  InputList inputs;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (!node.is_variable() || model.params.count(node.name)) continue;
    inputs.names.push_back(node.name);
    if (read[n]) inputs.required.push_back(node.name);
  }
  return inputs;
}

std::vector<std::pair<std::string, NodeEntry>> Internals(const Graph& graph) {
  std::vector<std::pair<std::string, NodeEntry>> internals;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const int visible = node.is_variable() ? 1 : node.op->NumVisibleOutputs();
    for (int i = 0; i < visible; ++i) {
      internals.emplace_back(node.OutputName(i), NodeEntry{static_cast<int>(n), i});
    }
  }
  return internals;
}

namespace model_cc {

// Positions of the outputs called `wanted` in `internals`.
std::vector<int64_t> PositionsOf(const std::vector<std::pair<std::string, NodeEntry>>& internals,
                                 const std::string& wanted) {
  std::vector<int64_t> positions;
  for (size_t i = 0; i < internals.size(); ++i) {
    if (internals[i].first == wanted) positions.push_back(static_cast<int64_t>(i));
  }
  return positions;
}

// MXPredCreatePartialOut's rule: key k selects the output "k_output".
// MXNet's predict API takes the first match without a word; a name that
// several nodes share would then give an output nobody asked for, so it is
// refused, as MXNet's sym.get_internals()[name] refuses it.
Status ResolvePredictKey(const Graph& graph,
                         const std::vector<std::pair<std::string, NodeEntry>>& internals,
                         const std::string& key, NodeEntry* out) {
  const std::string wanted = key + "_output";
  const std::vector<int64_t> positions = PositionsOf(internals, wanted);
  MXL_CHECK(!positions.empty(), "output key '", key,
            "': the graph has no internal output named '", wanted, "'");
  std::vector<NodeEntry> found;
  for (int64_t position : positions) found.push_back(internals[position].second);
  MXL_CHECK(found.size() == 1, "output key '", key, "': ", found.size(),
            " outputs are named '", wanted, "' (", DescribeEntries(graph, found),
            "), so the key does not say which; give the node wanted a name of its own in "
            "the symbol JSON (MXNet's predict API would take the first silently)");
  *out = found[0];
  return Status();
}

}  // namespace model_cc

Status ResolveOutput(const Graph& graph,
                     const std::vector<std::pair<std::string, NodeEntry>>& internals,
                     const OutputSelector& selector, NodeEntry* out) {
  const int64_t count = static_cast<int64_t>(internals.size());
  if (selector.kind == OutputSelector::kPredictKey) {
    return model_cc::ResolvePredictKey(graph, internals, selector.name, out);
  }
  if (selector.kind == OutputSelector::kPosition) {
    MXL_CHECK(selector.index >= 0 && selector.index < count, "output position ", selector.index,
              " is outside get_internals(), which lists ", count, " outputs (0 to ", count - 1,
              ")");
    *out = internals[static_cast<size_t>(selector.index)].second;
    return Status();
  }
  // Exact names first; MXNet's partial-output key form only when none is.
  for (const std::string& wanted : {selector.name, selector.name + "_output"}) {
    const std::vector<int64_t> positions = model_cc::PositionsOf(internals, wanted);
    if (positions.empty()) continue;
    if (positions.size() > 1) {
      std::vector<NodeEntry> entries;
      std::string listed;
      for (int64_t position : positions) {
        entries.push_back(internals[static_cast<size_t>(position)].second);
        listed += StrCat(listed.empty() ? "" : (position == positions.back() ? " or " : ", "),
                         position);
      }
      return Status::Error(StrCat(
          "output '", selector.name, "' is ambiguous: ", positions.size(),
          " outputs are named '", wanted, "' (", DescribeEntries(graph, entries),
          "); select one by its position in get_internals() instead, ", listed,
          " (e.g. with_outputs(", positions.back(), "), as MXNet's sym.get_internals()[",
          positions.back(), "]), or give the nodes names of their own in the symbol JSON"));
    }
    *out = internals[static_cast<size_t>(positions[0])].second;
    return Status();
  }
  return Status::Error(StrCat("the graph has no output named '", selector.name,
                              "' (get_internals() lists the names)"));
}

Status SelectOutputs(const std::vector<OutputSelector>& selectors, Graph* graph) {
  const auto internals = Internals(*graph);
  std::vector<NodeEntry> outputs;
  for (const OutputSelector& selector : selectors) {
    NodeEntry entry{0, 0};
    MXL_RETURN_IF_ERROR(ResolveOutput(*graph, internals, selector, &entry));
    outputs.push_back(entry);
  }
  graph->outputs = outputs;
  return Status();
}

Status SelectModelOutputs(const Model& full, const std::vector<OutputSelector>& selectors,
                          std::shared_ptr<const Model>* out) {
  auto model = std::make_shared<Model>();
  model->graph = full.graph;
  model->params = full.params;
  model->prepared = full.prepared;  // same parameter arrays, so same prepared forms
  MXL_RETURN_IF_ERROR(SelectOutputs(selectors, &model->graph));
  PruneToOutputs(&model->graph);
  *out = std::move(model);
  return Status();
}

Status ListSymbolNames(const std::string& symbol_json, SymbolNames* out) {
  Graph graph;
  MXL_RETURN_IF_ERROR(LoadSymbolJson(symbol_json.data(), symbol_json.size(), &graph));
  std::vector<int> arguments, aux_states;
  graph.ListVariables(&arguments, &aux_states);
  SymbolNames names;
  for (int node : arguments) names.arguments.push_back(graph.nodes[node].name);
  for (int node : aux_states) names.aux_states.push_back(graph.nodes[node].name);
  for (const NodeEntry& output : graph.outputs) {
    names.outputs.push_back(graph.nodes[output.node].OutputName(output.index));
  }
  for (const auto& internal : Internals(graph)) names.internals.push_back(internal.first);
  *out = std::move(names);
  return Status();
}

Status ComputeMemoryReportFromJson(const std::string& symbol_json, const std::string& source,
                                   const std::map<std::string, Shape>& input_shapes, bool fuse,
                                   FusionTarget target, MemoryReport* report) {
  Graph graph;
  MXL_RETURN_IF_ERROR(LoadSymbolJson(symbol_json.data(), symbol_json.size(), &graph)
                          .WithContext(source + ": "));
  PruneToOutputs(&graph);
  Graph optimized;
  MXL_RETURN_IF_ERROR(
      OptimizeGraph(graph, fuse, target, &optimized).WithContext(source + ": "));
  graph = std::move(optimized);
  return ComputeMemoryReport(graph, input_shapes, {}, fuse, report).WithContext(source + ": ");
}

}  // namespace mxlite
