/*
 * plan_tool: the memory planner's report for a symbol file, and an
 * independent check of the plan the executor would use.
 *
 *   plan_tool SYMBOL_JSON --shape NAME=D0,D1,... [--shape ...] [--fused | --fused-cuda]
 *             [--json] [--check] [--no-ancestry]
 *
 * With --no-ancestry the plans are made as for a graph too large for the
 * ancestor bitsets (PlanOptions::ancestry; the report stays the normal one).
 * With --fused the graph is first rewritten by FuseOperators and Concat
 * inputs are laid inside their outputs, as an executor does by default;
 * --fused-cuda does the same for the graph a GPU executor runs
 * (FusionTarget::kCuda), whose plan the GPU's device arena mirrors.
 * Prints naive, in-place-only, co-share-only and planned bytes and the lower
 * bound (--json: one JSON object with the keys of `mxlite plan --json`, plus
 * the arena under each reuse rule alone, `dataflow_bytes` and
 * `execution_order_bytes`, and the ordering edges the plans add).
 * --check recomputes every entry's readers from the graph and verifies that
 * two entries whose arena ranges overlap are either joined in place by a
 * pair the operator declares, or one is a part laid inside the other (each
 * part checked to sit after the bytes of the Concat inputs before it), or
 * strictly ordered by graph edges plus the plan's ordering edges (all
 * accesses of one precede the other's writer), and that the arena holds
 * every entry; it prints "plan ok" or the first violation and exits 1.
 *
 * Built from the amalgamated source together with this file.
 */
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../../predict/executor/memory_plan.h"
#include "../../predict/executor/model.h"
#include "../../predict/graph/fuse.h"
#include "../../predict/graph/infer.h"

namespace plan_tool {

using namespace mxlite;

bool ParseShapeArg(const std::string& arg, std::map<std::string, Shape>* shapes) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  std::vector<int64_t> dims;
  std::stringstream stream(arg.substr(eq + 1));
  std::string dim;
  while (std::getline(stream, dim, ',')) {
    char* end = nullptr;
    const long long value = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || value < 0) return false;
    dims.push_back(value);
  }
  (*shapes)[arg.substr(0, eq)] = Shape(dims);
  return true;
}

// Every node that reads or writes each entry, from the graph alone.
std::vector<std::vector<std::set<int>>> EntryAccesses(const Graph& graph) {
  std::vector<std::vector<std::set<int>>> accesses(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    accesses[n].resize(graph.nodes[n].num_outputs());
    for (auto& set : accesses[n]) set.insert(static_cast<int>(n));
    for (const NodeEntry& input : graph.nodes[n].inputs) {
      accesses[input.node][input.index].insert(static_cast<int>(n));
    }
  }
  return accesses;
}

// ancestors[n]: every node with a path to n, through the graph's edges and
// the plan's extra ordering edges.
std::vector<std::set<int>> Ancestors(const Graph& graph,
                                     const std::vector<std::pair<int, int>>& extra_edges) {
  std::vector<std::vector<int>> parents(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const NodeEntry& input : graph.nodes[n].inputs) parents[n].push_back(input.node);
  }
  for (const auto& edge : extra_edges) parents[edge.second].push_back(edge.first);
  std::vector<std::set<int>> ancestors(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int parent : parents[n]) {
      ancestors[n].insert(parent);
      ancestors[n].insert(ancestors[parent].begin(), ancestors[parent].end());
    }
  }
  return ancestors;
}

// Is entry `later` made from entry `earlier` through declared in-place
// pairs (identity views only when `identity_only`)?
bool DerivedInPlace(const Graph& graph, NodeEntry earlier, NodeEntry later, bool identity_only) {
  if (earlier == later) return true;
  if (later.node <= earlier.node) return false;
  const Node& node = graph.nodes[later.node];
  if (node.is_variable()) return false;
  for (const InplacePair& pair : node.op->InplaceOptions()) {
    if (pair.output != later.index || (identity_only && !pair.identity)) continue;
    if (DerivedInPlace(graph, earlier, node.inputs[pair.input], identity_only)) return true;
  }
  return false;
}

int Check(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
          const std::vector<EntryPart>& parts, const MemoryPlan& plan) {
  const auto accesses = EntryAccesses(graph);
  for (const auto& edge : plan.ordering_edges) {
    if (edge.first >= edge.second) {
      std::printf("ordering edge %d -> %d goes backwards in node order\n", edge.first,
                  edge.second);
      return 1;
    }
  }
  const auto ancestors = Ancestors(graph, plan.ordering_edges);
  std::set<std::pair<int, int>> heads;
  for (const NodeEntry& output : graph.outputs) heads.insert({output.node, output.index});
  auto begin_of = [&](NodeEntry entry) {
    return plan.block_offset[plan.entry_block[entry.node][entry.index]] +
           plan.entry_offset[entry.node][entry.index];
  };
  struct Placed {
    NodeEntry entry;
    size_t begin, end;
  };
  std::vector<Placed> placed;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].is_variable()) continue;
    for (int i = 0; i < graph.nodes[n].num_outputs(); ++i) {
      const size_t begin = begin_of(NodeEntry{static_cast<int>(n), i});
      const size_t end = begin + entry_bytes[n][i];
      if (begin % kBufferAlignment != 0 || end > plan.arena_bytes) {
        std::printf("entry %s at [%zu, %zu) is misaligned or outside the %zu-byte arena\n",
                    graph.nodes[n].OutputName(i).c_str(), begin, end, plan.arena_bytes);
        return 1;
      }
      placed.push_back({NodeEntry{static_cast<int>(n), i}, begin, end});
    }
  }
  // Every part lies where its whole's inputs end to end put it: after the
  // bytes of the inputs before it, counted here from the graph.
  std::map<std::pair<int, int>, NodeEntry> whole_of;
  for (const EntryPart& part : parts) {
    size_t before = 0;
    bool found = false;
    for (const NodeEntry& input : graph.nodes[part.whole.node].inputs) {
      if (input == part.part) {
        found = true;
        break;
      }
      before += entry_bytes[input.node][input.index];
    }
    if (!found || begin_of(part.part) != begin_of(part.whole) + before) {
      std::printf("part %s does not lie after the inputs before it in %s\n",
                  graph.nodes[part.part.node].OutputName(part.part.index).c_str(),
                  graph.nodes[part.whole.node].OutputName(part.whole.index).c_str());
      return 1;
    }
    whole_of[{part.part.node, part.part.index}] = part.whole;
  }
  // Is `inner` a part of `outer`, at any depth?
  auto inside = [&](NodeEntry inner, NodeEntry outer) {
    for (auto it = whole_of.find({inner.node, inner.index}); it != whole_of.end();
         it = whole_of.find({it->second.node, it->second.index})) {
      if (it->second == outer) return true;
    }
    return false;
  };
  // Two entries may overlap in the arena when one is a part of the other,
  // when the later one is a view of the earlier one, or when the later
  // one's writer runs after every other access of the earlier one in every
  // schedule that keeps the graph's and the plan's edges (they are its
  // strict ancestors) and reads it only as a declared in-place input.
  auto may_overlap = [&](NodeEntry x, NodeEntry y) {
    if (inside(x, y) || DerivedInPlace(graph, x, y, true)) return true;
    if (x.node == y.node || heads.count({x.node, x.index})) return false;
    for (int access : accesses[x.node][x.index]) {
      if (access == y.node) {
        if (!DerivedInPlace(graph, x, y, false)) return false;
      } else if (!ancestors[y.node].count(access)) {
        return false;
      }
    }
    return true;
  };
  for (size_t a = 0; a < placed.size(); ++a) {
    for (size_t b = a + 1; b < placed.size(); ++b) {
      const Placed& x = placed[a];  // placed is in node order: x is not later
      const Placed& y = placed[b];
      if (x.begin >= y.end || y.begin >= x.end) continue;  // disjoint bytes
      if (may_overlap(x.entry, y.entry)) continue;
      std::printf("entries %s and %s overlap in the arena but may be live together\n",
                  graph.nodes[x.entry.node].OutputName(x.entry.index).c_str(),
                  graph.nodes[y.entry.node].OutputName(y.entry.index).c_str());
      return 1;
    }
  }
  std::printf("plan ok: %zu entries in %zu blocks, %zu bytes, %zu ordering edges\n",
              placed.size(), plan.block_bytes.size(), plan.arena_bytes,
              plan.ordering_edges.size());
  return 0;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s SYMBOL_JSON --shape NAME=D0,D1,... [--shape ...] "
                 "[--fused | --fused-cuda] [--json] [--check] [--no-ancestry]\n",
                 argv[0]);
    return 2;
  }
  std::map<std::string, Shape> shapes;
  bool json = false, check = false, fused = false, ancestry = true;
  FusionTarget target = FusionTarget::kCpu;
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--check") {
      check = true;
    } else if (arg == "--fused") {
      fused = true;
    } else if (arg == "--fused-cuda") {
      fused = true;
      target = FusionTarget::kCuda;
    } else if (arg == "--no-ancestry") {
      ancestry = false;
    } else if (arg == "--shape" && a + 1 < argc && ParseShapeArg(argv[a + 1], &shapes)) {
      ++a;
    } else {
      std::fprintf(stderr, "bad argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  MemoryReport report;
  Status status = ComputeMemoryReportFromJson(text, argv[1], shapes, fused, target, &report);
  // The same graph again, for the execution-order plan and the check.
  Graph graph;
  std::vector<std::vector<size_t>> entry_bytes;
  std::vector<EntryPart> parts;
  if (status.ok()) status = LoadSymbolJson(text.data(), text.size(), &graph);
  if (status.ok()) {
    PruneToOutputs(&graph);
    if (fused) {
      Graph rewritten;
      status = FuseOperators(graph, target, &rewritten);
      graph = std::move(rewritten);
    }
    EntryShapes entry_shapes;
    EntryDTypes dtypes;
    if (status.ok()) status = InferShapes(graph, shapes, {}, &entry_shapes);
    std::map<std::string, int> input_dtypes;
    for (const auto& input : shapes) input_dtypes[input.first] = kFloat32;
    if (status.ok()) status = InferDTypes(graph, input_dtypes, &dtypes);
    // As the report: parts with --fused (an executor's default), none without.
    if (status.ok() && fused) status = FindEntryParts(graph, entry_shapes, dtypes, &parts);
    for (size_t n = 0; status.ok() && n < graph.nodes.size(); ++n) {
      entry_bytes.emplace_back();
      for (size_t i = 0; i < entry_shapes[n].size(); ++i) {
        entry_bytes[n].push_back(static_cast<size_t>(entry_shapes[n][i].Size()) *
                                 DTypeSize(dtypes[n][i]));
      }
    }
  }
  MemoryPlan execution_order, dataflow, planned;
  PlanOptions options;
  options.ancestry = ancestry;
  options.rule = ReuseRule::kExecutionOrder;
  if (status.ok()) status = PlanMemory(graph, entry_bytes, parts, options, &execution_order);
  options.rule = ReuseRule::kDataflow;
  if (status.ok()) status = PlanMemory(graph, entry_bytes, parts, options, &dataflow);
  options.rule = ReuseRule::kAuto;
  if (status.ok()) status = PlanMemory(graph, entry_bytes, parts, options, &planned);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  if (json) {
    std::printf(
        "{\"naive_bytes\": %zu, \"inplace_bytes\": %zu, \"coshare_bytes\": %zu, "
        "\"planned_bytes\": %zu, \"lower_bound_bytes\": %zu, \"dataflow_bytes\": %zu, "
        "\"execution_order_bytes\": %zu, \"execution_order_edges\": %zu, "
        "\"ordering_edges\": %zu, \"num_entries\": %zu, \"num_blocks\": %zu}\n",
        report.naive_bytes, report.inplace_bytes, report.coshare_bytes, report.planned_bytes,
        report.lower_bound_bytes, dataflow.arena_bytes, execution_order.arena_bytes,
        execution_order.ordering_edges.size(), report.ordering_edges, report.num_entries,
        report.num_blocks);
  } else {
    std::printf("no sharing          %12zu bytes\n", report.naive_bytes);
    std::printf("in place only       %12zu bytes\n", report.inplace_bytes);
    std::printf("co-share only       %12zu bytes\n", report.coshare_bytes);
    std::printf("planned (both)      %12zu bytes  (%zu blocks for %zu entries, %zu edges added)\n",
                report.planned_bytes, report.num_blocks, report.num_entries,
                report.ordering_edges);
    std::printf("lower bound         %12zu bytes\n", report.lower_bound_bytes);
    std::printf("dataflow rule       %12zu bytes\n", dataflow.arena_bytes);
    std::printf("execution-order rule%12zu bytes  (%zu edges added)\n",
                execution_order.arena_bytes, execution_order.ordering_edges.size());
  }
  if (check) return Check(graph, entry_bytes, planned.parts, planned);
  return 0;
}

}  // namespace plan_tool

int main(int argc, char** argv) { return plan_tool::Main(argc, argv); }
