#include <set>

#include "graph.h"

namespace mxlite {

int Graph::FindNode(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Graph::Describe(int node) const {
  const Node& n = nodes[node];
  return StrCat("'", n.name, "' (", n.is_variable() ? "variable" : n.op_name, ")");
}

void Graph::ListVariables(std::vector<int>* arguments, std::vector<int>* aux_states) const {
  std::vector<bool> mutated(nodes.size(), false);
  for (const Node& node : nodes) {
    if (node.is_variable()) continue;
    for (int slot : node.op->MutatedInputs()) {
      if (slot < static_cast<int>(node.inputs.size())) mutated[node.inputs[slot].node] = true;
    }
  }
  arguments->clear();
  aux_states->clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].is_variable()) continue;
    (mutated[i] ? aux_states : arguments)->push_back(static_cast<int>(i));
  }
}

std::string DescribeEntries(const Graph& graph, const std::vector<NodeEntry>& entries) {
  std::string text;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Node& node = graph.nodes[entries[i].node];
    if (i > 0) text += "; ";
    text += graph.Describe(entries[i].node);
    if (node.inputs.empty()) continue;
    const NodeEntry& input = node.inputs[0];
    text += StrCat(" reading '", graph.nodes[input.node].OutputName(input.index), "'");
    if (node.inputs.size() > 1) text += StrCat(" and ", node.inputs.size() - 1, " more");
  }
  return text;
}

Status SelectOutputs(const std::vector<std::string>& keys, Graph* graph) {
  std::vector<NodeEntry> selected;
  for (const std::string& key : keys) {
    const std::string wanted = key + "_output";
    std::vector<NodeEntry> found;
    for (size_t n = 0; n < graph->nodes.size(); ++n) {
      const Node& node = graph->nodes[n];
      for (int i = 0; i < node.num_outputs(); ++i) {
        if (node.OutputName(i) == wanted) found.push_back(NodeEntry{static_cast<int>(n), i});
      }
    }
    MXL_CHECK(!found.empty(), "output key '", key, "': the graph has no internal output named '",
              wanted, "'");
    // MXNet's predict API takes the first match without a word; a name that
    // several nodes share (GluonCV's video models reuse one) would then give
    // an output nobody asked for, so it is refused, as MXNet's
    // sym.get_internals()[name] refuses it.
    MXL_CHECK(found.size() == 1, "output key '", key, "': ", found.size(),
              " outputs are named '", wanted, "' (", DescribeEntries(*graph, found),
              "), so the key does not say which; give the node wanted a name of its own in "
              "the symbol JSON (MXNet's predict API would take the first silently)");
    selected.push_back(found[0]);
  }
  graph->outputs = selected;
  return Status();
}

void PruneToOutputs(Graph* graph) {
  std::vector<bool> needed(graph->nodes.size(), false);
  for (const NodeEntry& entry : graph->outputs) needed[entry.node] = true;
  // Nodes are topologically ordered, so one backward sweep marks every
  // ancestor.
  for (size_t i = graph->nodes.size(); i-- > 0;) {
    if (!needed[i]) continue;
    for (const NodeEntry& input : graph->nodes[i].inputs) needed[input.node] = true;
  }
  std::vector<int> new_index(graph->nodes.size(), -1);
  std::vector<Node> kept;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (!needed[i]) continue;
    new_index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(graph->nodes[i]));
  }
  for (Node& node : kept) {
    for (NodeEntry& input : node.inputs) input.node = new_index[input.node];
  }
  for (NodeEntry& output : graph->outputs) output.node = new_index[output.node];
  graph->nodes = std::move(kept);
}

}  // namespace mxlite
