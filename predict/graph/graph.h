/*
 * Graph: the computation a symbol file describes.
 *
 * Nodes are kept in topological order (every input refers to an earlier
 * node), which is how MXNet writes them. A variable node (op "null") is an
 * input, a weight or an auxiliary state; every other node owns the Operator
 * built from its attributes at load time. An entry (node, index) names one
 * output of a node.
 */
#ifndef MXLITE_GRAPH_GRAPH_H_
#define MXLITE_GRAPH_GRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "../operators/operator.h"

namespace mxlite {

struct NodeEntry {
  int node = 0;
  int index = 0;
  bool operator==(const NodeEntry& other) const {
    return node == other.node && index == other.index;
  }
};

struct Node {
  std::string name;
  std::string op_name;          // canonical operator name; "null" for a variable
  AttrMap attrs;                // operator attributes, hidden ones included
  std::vector<NodeEntry> inputs;
  std::shared_ptr<Operator> op; // null for a variable
  // The nested graph of a subgraph operator (_sg_mkldnn_conv), which every
  // instance of its operator is given (CreateNodeOperator); null otherwise.
  std::shared_ptr<const Subgraph> subgraph;

  bool is_variable() const { return op == nullptr; }
  int num_outputs() const {
    return op ? static_cast<int>(op->OutputNames().size()) : 1;
  }
  // MXNet's output name: "<node>_<output>", or the bare name of a variable.
  std::string OutputName(int index) const {
    return op ? name + "_" + op->OutputNames()[index] : name;
  }
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<NodeEntry> outputs;  // the symbol's heads
  int mxnet_version = 0;           // from attrs.mxnet_version (0.8.0 if absent)

  // Index of the node called `name`, or -1.
  int FindNode(const std::string& name) const;
  // Variables read by the graph, split as MXNet does: auxiliary states are
  // inputs that some operator mutates; the rest are arguments. In node order.
  void ListVariables(std::vector<int>* arguments, std::vector<int>* aux_states) const;
  // Human description of an entry for messages: "'conv0' (Convolution)".
  std::string Describe(int node) const;
};

// A new instance of the node's operator, given the node's subgraph when it
// takes one (executors make their own instances).
Status CreateNodeOperator(const Node& node, OpSource source, std::unique_ptr<Operator>* out);

// Parses symbol JSON of any MXNet version (legacy files are upgraded) and
// builds every operator; unknown operators and attributes are errors here.
Status LoadSymbolJson(const char* text, size_t size, Graph* out);

// Tells apart outputs that share a name, for messages: each node described
// with its first input ("'relu0' (Activation) reading 'conv1_output'").
std::string DescribeEntries(const Graph& graph, const std::vector<NodeEntry>& entries);

// Drops every node that the outputs do not depend on.
void PruneToOutputs(Graph* graph);

}  // namespace mxlite

#endif  // MXLITE_GRAPH_GRAPH_H_
