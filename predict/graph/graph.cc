#include <memory>
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

Status CreateNodeOperator(const Node& node, OpSource source, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(CreateOperator(node.op_name, node.name, node.attrs, out, source));
  if (!(*out)->TakesSubgraph()) return Status();
  MXL_CHECK(node.subgraph != nullptr, "node '", node.name, "' (", node.op_name,
            "): the operator needs the node's subgraph, which it lacks");
  return (*out)->SetSubgraph(*node.subgraph);
}

}  // namespace mxlite
