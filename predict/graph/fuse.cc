#include "fuse.h"

#include "../kernels/direct_conv.h"

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace mxlite {

namespace fuse_cc {

// Readers of every entry, graph outputs counting as readers.
struct Readers {
  std::vector<std::vector<int>> count;          // [node][output]
  std::vector<std::vector<NodeEntry>> reader;   // [node] -> (reader node, input slot)
};

Readers CountReaders(const Graph& graph) {
  Readers readers;
  readers.count.resize(graph.nodes.size());
  readers.reader.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    readers.count[n].assign(graph.nodes[n].num_outputs(), 0);
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      const NodeEntry& input = node.inputs[slot];
      ++readers.count[input.node][input.index];
      readers.reader[input.node].push_back(NodeEntry{static_cast<int>(n), static_cast<int>(slot)});
    }
  }
  for (const NodeEntry& output : graph.outputs) ++readers.count[output.node][output.index];
  return readers;
}

// The single reader of output 0 of `node`, or -1 (with its input slot).
int SoleReader(const Readers& readers, int node, int* slot) {
  if (readers.count[node][0] != 1 || readers.reader[node].size() != 1) return -1;
  const NodeEntry& only = readers.reader[node][0];
  *slot = only.index;
  return only.node;
}

bool AllHiddenOutputsUnused(const Readers& readers, int node) {
  for (size_t i = 1; i < readers.count[node].size(); ++i) {
    if (readers.count[node][i] != 0) return false;
  }
  return true;
}

std::string AttrOr(const Node& node, const char* key, const std::string& fallback) {
  auto it = node.attrs.find(key);
  return it == node.attrs.end() ? fallback : it->second;
}

// BatchNorm, or _contrib_SyncBatchNorm (the same at inference, on axis 1).
bool IsBatchNorm(const Node& node) {
  return node.op_name == "BatchNorm" || node.op_name == "_contrib_SyncBatchNorm";
}

// Lower/upper clamp of an activation node, or false when it is not a clamp.
bool ClampOf(const Node& node, std::string* lower, std::string* upper) {
  if (node.op_name == "Activation" && AttrOr(node, "act_type", "") == "relu") {
    *lower = "0";
    *upper = "inf";
    return true;
  }
  if (node.op_name == "clip") {
    *lower = AttrOr(node, "a_min", "-inf");
    *upper = AttrOr(node, "a_max", "inf");
    return true;
  }
  return false;
}

// The numbers of a tuple attribute ("(1, 1)", "[1]"; absent: none), or
// false where a sign has no number after it.
bool TupleNumbers(const Node& node, const char* key, std::vector<long>* numbers) {
  const std::string text = AttrOr(node, key, "");
  numbers->clear();
  size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
      char* end = nullptr;
      numbers->push_back(std::strtol(text.c_str() + i, &end, 10));
      if (end == text.c_str() + i) return false;
      i = static_cast<size_t>(end - text.c_str());
    } else {
      ++i;
    }
  }
  return true;
}

// Whether every number of a tuple attribute equals `value`; an absent
// attribute counts as all `value`.
bool TupleAll(const Node& node, const char* key, int value) {
  std::vector<long> numbers;
  if (!TupleNumbers(node, key, &numbers)) return false;
  for (long number : numbers) {
    if (number != value) return false;
  }
  return true;
}

// Entries of a well-formed tuple attribute (absent or "()": 0), else -1.
int TupleSize(const Node& node, const char* key) {
  std::vector<long> numbers;
  return TupleNumbers(node, key, &numbers) ? static_cast<int>(numbers.size()) : -1;
}

// A Convolution that only mixes channels: kernel, stride 1, pad 0, one
// group, channel-first layout (what Convolution's pointwise path runs).
bool IsPointwiseConvolution(const Node& node) {
  const std::string layout = AttrOr(node, "layout", "None");
  return node.op_name == "Convolution" && node.attrs.count("kernel") &&
         TupleAll(node, "kernel", 1) && TupleAll(node, "stride", 1) && TupleAll(node, "pad", 0) &&
         AttrOr(node, "num_group", "1") == "1" &&
         (layout == "None" || layout == "NCW" || layout == "NCHW" || layout == "NCDHW");
}

// A standing BatchNorm (and the relu/clip after it) whose result only a 1x1
// convolution reads: the convolution normalises its input as it reads it.
struct InputNorm {
  int batch_norm = -1;
  int clamp = -1;
};

struct Chain {
  int conv = -1;
  int batch_norm = -1;
  int add = -1;
  int add_other_slot = -1;  // the add's input slot holding the residual
  int clamp = -1;
  int pool = -1;
  int avg_pool = -1;  // an average pooling read or pooled by a 1x1 convolution (see below)
  int last = -1;
};

bool IsTrue(const std::string& text) { return text == "True" || text == "true" || text == "1"; }

// A 2-D pooling of `type` (max, avg) in NCHW, 'valid' or 'full'
// convention, not global: what a convolution can take in (a max pooling
// after a stem: see convolution.cc; an average pooling beside a 1x1
// convolution: see FindAveragePoolings).
bool IsFusablePool(const Node& node, const char* type) {
  const std::string layout = AttrOr(node, "layout", "None");
  const std::string convention = AttrOr(node, "pooling_convention", "valid");
  return node.op_name == "Pooling" && AttrOr(node, "pool_type", "max") == type &&
         !IsTrue(AttrOr(node, "global_pool", "False")) && TupleSize(node, "kernel") == 2 &&
         (convention == "valid" || convention == "full") &&
         (layout == "None" || layout == "NCHW");
}

// Whether `node` is a graph input, or a BatchNorm of one: what a network's
// stem reads. (The passes read the graph as loaded, before any rewrite.)
bool ReadsImage(const Graph& graph, const Node& node) {
  if (node.is_variable()) return true;
  return IsBatchNorm(node) && !node.inputs.empty() &&
         graph.nodes[node.inputs[0].node].is_variable();
}

// The chain starting at `conv`; nodes already claimed by an earlier chain
// (an add can end two convolutions' chains) are not taken again.
Chain FindChain(const Graph& graph, const Readers& readers, const std::vector<bool>& claimed,
                int conv, FusionTarget target) {
  Chain chain;
  chain.conv = chain.last = conv;
  int slot = -1;
  auto sole_free_reader = [&](int node, int* reader_slot) {
    int reader = SoleReader(readers, node, reader_slot);
    return reader >= 0 && !claimed[reader] ? reader : -1;
  };
  int next = sole_free_reader(chain.last, &slot);
  if (next >= 0 && IsBatchNorm(graph.nodes[next]) && slot == 0 &&
      AllHiddenOutputsUnused(readers, next)) {
    const std::string axis = AttrOr(graph.nodes[next], "axis", "1");
    if (std::atoi(axis.c_str()) == 1 && AttrOr(graph.nodes[next], "output_mean_var", "False") !=
                                            "True") {
      chain.batch_norm = chain.last = next;
      next = sole_free_reader(chain.last, &slot);
    }
  }
  if (next >= 0 && graph.nodes[next].op_name == "elemwise_add") {
    const NodeEntry& other = graph.nodes[next].inputs[1 - slot];
    // Adding the result to itself is not a residual.
    if (other.node != chain.last) {
      chain.add = chain.last = next;
      chain.add_other_slot = 1 - slot;
      next = sole_free_reader(chain.last, &slot);
    }
  }
  std::string lower, upper;
  if (next >= 0 && ClampOf(graph.nodes[next], &lower, &upper)) {
    chain.clamp = chain.last = next;
    next = sole_free_reader(chain.last, &slot);
  }
  // The max pooling after a stem: a 2-D convolution of a graph input, or of
  // a BatchNorm of one (ResNet v2 normalises its image first, and no
  // convolution can absorb that: its padding would be normalised too). Its
  // output, the size of the image times the filters, is the largest tensor
  // of most networks; fused, it stays in cache (see convolution.cc).
  // Only where the direct kernel, which computes it in bands of rows, runs
  // a stem's shape (the number of channels is not known here: a wider
  // layer computes all of its output into the workspace first, which costs
  // memory the unfused graph's plan would share).
  const Node& conv_node = graph.nodes[conv];
  const bool stem_shape = TupleSize(conv_node, "kernel") == 2 &&
                          AttrOr(conv_node, "num_group", "1") == "1" &&
                          TupleAll(conv_node, "dilate", 1) &&
                          (TupleAll(conv_node, "stride", 1) || TupleAll(conv_node, "stride", 2));
  if (next >= 0 && chain.add < 0 && stem_shape && target == FusionTarget::kCpu &&
      DirectConvKernelsPay() &&
      IsFusablePool(graph.nodes[next], "max") && !conv_node.inputs.empty() &&
      ReadsImage(graph, graph.nodes[conv_node.inputs[0].node])) {
    chain.pool = chain.last = next;
  }
  return chain;
}

// A depthwise convolution: one filter per group, more than one group.
bool IsDepthwiseConvolution(const Node& node) {
  if (node.op_name != "Convolution" && node.op_name != "_FusedConvolution") return false;
  const long groups = std::strtol(AttrOr(node, "num_group", "1").c_str(), nullptr, 10);
  const long filters = std::strtol(AttrOr(node, "num_filter", "0").c_str(), nullptr, 10);
  return groups > 1 && groups == filters;
}

// Makes `fused` a _FusedConvolution, appends it to *out and points the
// nodes it replaces (-1: none) at it. A convolution whose data is a
// depthwise convolution's output is marked so (with_depthwise_input), for
// the kernels that follow how the threads wrote it (see
// ProjectsByDepthHalves in conv_gemm.cc).
Status EmitFused(Node fused, std::initializer_list<int> members, std::vector<int>* new_index,
                 Graph* out) {
  fused.op_name = "_FusedConvolution";
  if (!fused.inputs.empty() && IsDepthwiseConvolution(out->nodes[fused.inputs[0].node])) {
    fused.attrs["with_depthwise_input"] = "True";
  }
  std::unique_ptr<Operator> op;
  MXL_RETURN_IF_ERROR(
      CreateOperator(fused.op_name, fused.name, fused.attrs, &op, OpSource::kInternal));
  fused.op.reset(op.release());
  const int index = static_cast<int>(out->nodes.size());
  for (int member : members) {
    if (member >= 0) (*new_index)[member] = index;
  }
  out->nodes.push_back(std::move(fused));
  return Status();
}

// The convolution reads the BatchNorm's input, and takes its parameters
// (after all other inputs) and the clamp between them.
template <class Remap>
void AddInputNorm(const Graph& graph, const InputNorm& norm, const Remap& remap, Node* fused) {
  const Node& bn = graph.nodes[norm.batch_norm];
  fused->inputs[0] = remap(bn.inputs[0]);
  fused->attrs["with_input_bn"] = "True";
  fused->attrs["in_bn_eps"] = AttrOr(bn, "eps", "0.001");
  fused->attrs["in_bn_fix_gamma"] = AttrOr(bn, "fix_gamma", "True");
  for (int slot = 1; slot <= 4; ++slot) fused->inputs.push_back(remap(bn.inputs[slot]));
  if (norm.clamp >= 0) {
    std::string lower, upper;
    ClampOf(graph.nodes[norm.clamp], &lower, &upper);
    fused->attrs["in_clamp_min"] = lower;
    fused->attrs["in_clamp_max"] = upper;
  }
}

// What the analysis passes decide, per node of the input graph, before
// one rewrite builds the optimised graph.
struct FusionPlan {
  FusionPlan(const Graph& g, FusionTarget t)
      : graph(g),
        target(t),
        readers(CountReaders(g)),
        count(static_cast<int>(g.nodes.size())),
        chain_ending_at(count),
        absorbed(count, false),
        input_norm_of(count),
        clamp_of_batch_norm(count, -1),
        elided(count, false) {}
  const Graph& graph;
  const FusionTarget target;
  const Readers readers;
  const int count;
  std::vector<Chain> chain_ending_at;       // per last link of a convolution chain
  std::vector<bool> absorbed;               // taken into a fused node
  std::vector<InputNorm> input_norm_of;     // per 1x1 convolution reading a BatchNorm
  std::vector<int> clamp_of_batch_norm;     // per relu/clip: the BatchNorm it follows
  std::vector<bool> elided;                 // Dropouts whose readers read their input
};

// Pass "convolution chains": Convolution -> BatchNorm -> elemwise_add ->
// relu/clip chains, each link taken while its input has one reader (see
// fuse.h).
void FindConvolutionChains(FusionPlan* plan) {
  for (int n = 0; n < plan->count; ++n) {
    if (plan->graph.nodes[n].op_name != "Convolution") continue;
    Chain chain = FindChain(plan->graph, plan->readers, plan->absorbed, n, plan->target);
    if (chain.last == n) continue;
    for (int member : {chain.conv, chain.batch_norm, chain.add, chain.clamp, chain.pool}) {
      if (member >= 0) plan->absorbed[member] = true;
    }
    plan->chain_ending_at[chain.last] = chain;
  }
}

// Pass "average pooling": a 2-D 1x1 convolution and an average pooling
// next to it become one convolution of the pooled input
// (with_input_avg_pool), which computes them in the cheaper order
// (convolution.cc). Both are linear and act on different axes (the
// pooling on each plane, the 1x1 convolution on each pixel's channels), so
// they commute: pooling first convolves a smaller map (DenseNet's
// transitions, a 1x1 convolution then a 2x2 stride-2 pooling: 4x fewer
// multiply-adds), convolving first pools fewer planes (Inception's
// branches, a 3x3 stride-1 pooling then a 1x1 convolution to a quarter as
// many channels). Taken:
//   - a pooling that only the convolution reads, before its chain (its
//     bias, BatchNorm, residual and clamp come after the sum of both);
//   - a pooling without padding that alone reads a chain of the
//     convolution and at most a BatchNorm: a per-filter affine map, which
//     passes through an average whose windows all hold the same count.
void FindAveragePoolings(FusionPlan* plan) {
  const Graph& graph = plan->graph;
  std::vector<int> chain_last(plan->count, -1);  // per convolution in a chain
  for (int n = 0; n < plan->count; ++n) {
    if (plan->chain_ending_at[n].conv >= 0) chain_last[plan->chain_ending_at[n].conv] = n;
  }
  for (int n = 0; n < plan->count; ++n) {
    const Node& conv = graph.nodes[n];
    if (!IsPointwiseConvolution(conv) || TupleSize(conv, "kernel") != 2 ||
        conv.inputs.empty()) {
      continue;
    }
    const int last = chain_last[n] >= 0 ? chain_last[n] : n;
    Chain chain = chain_last[n] >= 0 ? plan->chain_ending_at[last] : Chain();
    chain.conv = n;
    if (chain.last < 0) chain.last = n;
    int before_slot = -1, after_slot = -1;
    const int before = conv.inputs[0].node;
    const int after = SoleReader(plan->readers, last, &after_slot);
    if (!plan->absorbed[before] && IsFusablePool(graph.nodes[before], "avg") &&
        conv.inputs[0].index == 0 && SoleReader(plan->readers, before, &before_slot) == n &&
        before_slot == 0) {
      chain.avg_pool = before;
    } else if (after >= 0 && after_slot == 0 && !plan->absorbed[after] &&
               IsFusablePool(graph.nodes[after], "avg") && TupleAll(graph.nodes[after], "pad", 0) &&
               chain.add < 0 && chain.clamp < 0 && chain.pool < 0) {
      chain.avg_pool = chain.last = after;
    } else {
      continue;
    }
    plan->chain_ending_at[last] = Chain();
    plan->chain_ending_at[chain.last] = chain;
    plan->absorbed[n] = plan->absorbed[chain.avg_pool] = true;
  }
}

// Pass "input BatchNorm": a BatchNorm left standing (pre-activation
// networks normalise before the convolution) goes into the 1x1
// convolution that alone reads it, with the relu/clip between them.
void FindInputNorms(FusionPlan* plan) {
  const Graph& graph = plan->graph;
  for (int n = 0; n < plan->count; ++n) {
    const Node& bn = graph.nodes[n];
    if (plan->absorbed[n] || !IsBatchNorm(bn) ||
        !AllHiddenOutputsUnused(plan->readers, n)) {
      continue;
    }
    if (std::atoi(AttrOr(bn, "axis", "1").c_str()) != 1 ||
        AttrOr(bn, "output_mean_var", "False") == "True") {
      continue;
    }
    int slot = -1, clamp = -1;
    int reader = SoleReader(plan->readers, n, &slot);
    std::string lower, upper;
    if (reader >= 0 && !plan->absorbed[reader] && ClampOf(graph.nodes[reader], &lower, &upper)) {
      clamp = reader;
      reader = SoleReader(plan->readers, clamp, &slot);
    }
    if (reader < 0 || slot != 0 || !IsPointwiseConvolution(graph.nodes[reader])) continue;
    plan->input_norm_of[reader] = InputNorm{n, clamp};
    plan->absorbed[n] = true;
    if (clamp >= 0) plan->absorbed[clamp] = true;
  }
}

// Pass "BatchNorm clamp": a BatchNorm still standing takes a following
// relu/clip into its output loop (_FusedBatchNorm).
void FindBatchNormClamps(FusionPlan* plan) {
  for (int n = 0; n < plan->count; ++n) {
    if (plan->absorbed[n] || !IsBatchNorm(plan->graph.nodes[n])) continue;
    if (!AllHiddenOutputsUnused(plan->readers, n)) continue;
    int slot = -1;
    const int next = SoleReader(plan->readers, n, &slot);
    std::string lower, upper;
    if (next < 0 || plan->absorbed[next] || !ClampOf(plan->graph.nodes[next], &lower, &upper)) {
      continue;
    }
    plan->absorbed[n] = plan->absorbed[next] = true;
    plan->clamp_of_batch_norm[next] = n;
  }
}

// Pass "dropout": the identity at inference, so its readers read its input
// instead, unless its output is a graph output (which keeps its name) or
// its mask is read.
void FindDropouts(FusionPlan* plan) {
  for (int n = 0; n < plan->count; ++n) {
    if (plan->graph.nodes[n].op_name != "Dropout" || !AllHiddenOutputsUnused(plan->readers, n)) {
      continue;
    }
    bool graph_output = false;
    for (const NodeEntry& output : plan->graph.outputs) graph_output |= output.node == n;
    plan->elided[n] = !graph_output;
  }
}

// The analysis passes, in the order they run: each sees what the earlier
// ones took (a BatchNorm a convolution chain absorbed is not an input
// BatchNorm).
struct FusionPass {
  const char* name;
  void (*run)(FusionPlan* plan);
  bool cpu_only;  // the CUDA kernels have no fused form for it
};
const FusionPass kFusionPasses[] = {
    {"convolution chains", FindConvolutionChains, false},
    {"input BatchNorm", FindInputNorms, true},
    {"average pooling", FindAveragePoolings, true},
    {"BatchNorm clamp", FindBatchNormClamps, false},
    {"dropout", FindDropouts, false},
};

// The rewrite: the graph rebuilt in order, a fused node emitted where its
// chain ends, elided nodes' readers pointed at their inputs.
Status Rewrite(const FusionPlan& plan, Graph* out) {
  const Graph& graph = plan.graph;
  const int count = plan.count;
  const std::vector<Chain>& chain_ending_at = plan.chain_ending_at;
  const std::vector<bool>& absorbed = plan.absorbed;
  const std::vector<InputNorm>& input_norm_of = plan.input_norm_of;
  const std::vector<int>& clamp_of_batch_norm = plan.clamp_of_batch_norm;
  const std::vector<bool>& elided = plan.elided;
  // Rebuild in order; a fused node is emitted where its chain ends.
  *out = Graph();
  out->mxnet_version = graph.mxnet_version;
  std::vector<int> new_index(count, -1);
  auto remap = [&](NodeEntry entry) {
    while (elided[entry.node]) entry = graph.nodes[entry.node].inputs[0];
    return NodeEntry{new_index[entry.node], entry.index};
  };
  for (int n = 0; n < count; ++n) {
    if (elided[n]) continue;
    const Chain& chain = chain_ending_at[n];
    if (clamp_of_batch_norm[n] >= 0) {
      const Node& bn = graph.nodes[clamp_of_batch_norm[n]];
      Node fused;
      fused.name = graph.nodes[n].name;
      fused.attrs = bn.attrs;
      fused.attrs.erase("ndev");  // a SyncBatchNorm's device pairing: no effect here
      fused.attrs.erase("key");
      std::string lower, upper;
      ClampOf(graph.nodes[n], &lower, &upper);
      fused.attrs["clamp_min"] = lower;
      fused.attrs["clamp_max"] = upper;
      for (const NodeEntry& input : bn.inputs) fused.inputs.push_back(remap(input));
      fused.op_name = "_FusedBatchNorm";
      std::unique_ptr<Operator> op;
      MXL_RETURN_IF_ERROR(
          CreateOperator(fused.op_name, fused.name, fused.attrs, &op, OpSource::kInternal));
      fused.op.reset(op.release());
      new_index[clamp_of_batch_norm[n]] = new_index[n] = static_cast<int>(out->nodes.size());
      out->nodes.push_back(std::move(fused));
      continue;
    }
    if (absorbed[n] && chain.last != n) continue;
    if (!absorbed[n] && input_norm_of[n].batch_norm < 0) {
      Node copy = graph.nodes[n];
      for (NodeEntry& input : copy.inputs) input = remap(input);
      new_index[n] = static_cast<int>(out->nodes.size());
      out->nodes.push_back(std::move(copy));
      continue;
    }
    if (!absorbed[n]) {  // a convolution with an input BatchNorm alone
      Node fused;
      fused.name = graph.nodes[n].name;
      fused.attrs = graph.nodes[n].attrs;
      for (const NodeEntry& input : graph.nodes[n].inputs) fused.inputs.push_back(remap(input));
      AddInputNorm(graph, input_norm_of[n], remap, &fused);
      MXL_RETURN_IF_ERROR(EmitFused(std::move(fused), {n}, &new_index, out));
      continue;
    }
    const Node& conv = graph.nodes[chain.conv];
    Node fused;
    fused.name = graph.nodes[chain.last].name;
    fused.attrs = conv.attrs;
    for (const NodeEntry& input : conv.inputs) fused.inputs.push_back(remap(input));
    if (chain.batch_norm >= 0) {
      const Node& bn = graph.nodes[chain.batch_norm];
      fused.attrs["with_bn"] = "True";
      fused.attrs["bn_eps"] = AttrOr(bn, "eps", "0.001");
      fused.attrs["bn_fix_gamma"] = AttrOr(bn, "fix_gamma", "True");
      for (int slot = 1; slot <= 4; ++slot) fused.inputs.push_back(remap(bn.inputs[slot]));
    }
    if (chain.add >= 0) {
      fused.attrs["with_residual"] = "True";
      fused.inputs.push_back(remap(graph.nodes[chain.add].inputs[chain.add_other_slot]));
      // The CPU's 1x1 GEMM reads each residual element before it writes the
      // output there, so the output may take over the residual's buffer.
      if (plan.target == FusionTarget::kCpu && IsPointwiseConvolution(conv)) {
        fused.attrs["residual_in_place"] = "True";
      }
    }
    if (chain.clamp >= 0) {
      std::string lower, upper;
      ClampOf(graph.nodes[chain.clamp], &lower, &upper);
      fused.attrs["clamp_min"] = lower;
      fused.attrs["clamp_max"] = upper;
    }
    if (chain.pool >= 0) {
      const Node& pool = graph.nodes[chain.pool];
      fused.attrs["with_max_pool"] = "True";
      fused.attrs["pool_kernel"] = AttrOr(pool, "kernel", "");
      fused.attrs["pool_stride"] = AttrOr(pool, "stride", "()");
      fused.attrs["pool_pad"] = AttrOr(pool, "pad", "()");
      fused.attrs["pool_convention"] = AttrOr(pool, "pooling_convention", "valid");
    }
    if (chain.avg_pool >= 0) {
      const Node& pool = graph.nodes[chain.avg_pool];
      if (chain.avg_pool == conv.inputs[0].node) fused.inputs[0] = remap(pool.inputs[0]);
      fused.attrs["with_input_avg_pool"] = "True";
      fused.attrs["in_pool_kernel"] = AttrOr(pool, "kernel", "");
      fused.attrs["in_pool_stride"] = AttrOr(pool, "stride", "()");
      fused.attrs["in_pool_pad"] = AttrOr(pool, "pad", "()");
      fused.attrs["in_pool_convention"] = AttrOr(pool, "pooling_convention", "valid");
      fused.attrs["in_pool_count_include_pad"] = AttrOr(pool, "count_include_pad", "True");
    }
    if (input_norm_of[chain.conv].batch_norm >= 0) {
      AddInputNorm(graph, input_norm_of[chain.conv], remap, &fused);
    }
    // Every entry of the chain now reads as the fused node's output.
    MXL_RETURN_IF_ERROR(EmitFused(std::move(fused),
                                  {chain.conv, chain.batch_norm, chain.add, chain.clamp,
                                   chain.pool, chain.avg_pool},
                                  &new_index, out));
  }
  for (const NodeEntry& output : graph.outputs) out->outputs.push_back(remap(output));
  return Status();
}

}  // namespace fuse_cc

Status FuseOperators(const Graph& graph, FusionTarget target, Graph* out) {
  fuse_cc::FusionPlan plan(graph, target);
  for (const fuse_cc::FusionPass& pass : fuse_cc::kFusionPasses) {
    if (!pass.cpu_only || target == FusionTarget::kCpu) pass.run(&plan);
  }
  return fuse_cc::Rewrite(plan, out);
}

Status OptimizeGraph(const Graph& graph, bool optimize, FusionTarget target, Graph* out) {
  if (!optimize) {
    *out = graph;
    return Status();
  }
  return FuseOperators(graph, target, out);
}

}  // namespace mxlite
