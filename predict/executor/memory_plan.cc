#include "memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "../graph/infer.h"
#include "../ndarray/ndarray.h"

namespace mxlite {
namespace memory_plan_cc {

// The local search's budget: at most kSearchSteps placements, fewer for big
// graphs (kSearchWork conflict-list entries in all, counted as if each step
// placed every buffer), and it gives up after kSearchStall placements
// without progress. The zoo models' first orders already meet the lower
// bound, or the search does within a few thousand cheap steps. Detection
// heads keep many buffers live at once (YOLOv3: 123 buffers, 6007 conflict
// entries), where the search gains little per step and a budget ten times
// this one made most of the load time (BENCHMARKS.md, "Memory planning").
constexpr size_t kSearchSteps = 10000;
constexpr size_t kSearchWork = 5000000;
constexpr size_t kSearchStall = 3000;

size_t Aligned(size_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// Which operator nodes are strict ancestors of which: one bitset row per
// operator, built in node order (a row is the union of its inputs' rows and
// the inputs themselves). n^2 bits, hence kMaxParallelSafeOperators.
class Ancestry {
 public:
  // False when the graph has too many operators for the bitsets.
  bool Build(const Graph& graph) {
    op_index_.assign(graph.nodes.size(), -1);
    size_t ops = 0;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!graph.nodes[n].is_variable()) op_index_[n] = static_cast<int>(ops++);
    }
    if (ops > kMaxParallelSafeOperators) return false;
    words_ = (ops + 63) / 64;
    bits_.assign(ops * words_, 0);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (op_index_[n] < 0) continue;
      uint64_t* row = &bits_[op_index_[n] * words_];
      for (const NodeEntry& input : graph.nodes[n].inputs) {
        const int parent = op_index_[input.node];
        if (parent < 0) continue;
        const uint64_t* parent_row = &bits_[parent * words_];
        for (size_t w = 0; w < words_; ++w) row[w] |= parent_row[w];
        row[parent / 64] |= uint64_t{1} << (parent % 64);
      }
    }
    return true;
  }
  // Is operator node `a` a strict ancestor of operator node `b`?
  bool IsAncestor(int a, int b) const {
    const size_t bit = static_cast<size_t>(op_index_[a]);
    return (bits_[op_index_[b] * words_ + bit / 64] >> (bit % 64)) & 1;
  }

 private:
  std::vector<int> op_index_;  // node -> operator number, -1 for variables
  size_t words_ = 0;
  std::vector<uint64_t> bits_;
};

// Storage for one or more entries joined by in-place or laid end to end.
struct Buffer {
  size_t bytes = 0;           // aligned
  int first = 0;              // the node that writes it first
  int last = 0;               // the last node that touches it; end for outputs
  std::vector<int> accesses;  // every node that writes or reads it, ascending
  // The nodes that write an entry into it other than in place: `first`,
  // and the writers of its other parts (which need not descend from it).
  std::vector<int> writers;
};

struct BufferSet {
  std::vector<Buffer> buffers;
  std::vector<std::vector<int>> entry_buffer;     // per node, per output; -1: variable
  std::vector<std::vector<size_t>> entry_offset;  // per node, per output: bytes into it
};

// Where each entry lies when laid inside another: the outermost entry that
// holds it (node -1: none; an outermost entry holds itself) and the offset
// there, through every level of nesting.
struct Holder {
  NodeEntry root{-1, 0};
  size_t offset = 0;
};

std::vector<std::vector<Holder>> Holders(const Graph& graph,
                                         const std::vector<EntryPart>& parts) {
  std::vector<std::vector<Holder>> holders(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    holders[n].resize(static_cast<size_t>(graph.nodes[n].num_outputs()));
  }
  // A part's whole is made after it, so going back over the parts, each
  // whole's own holder is final before its parts look it up.
  std::vector<std::vector<const EntryPart*>> part_of(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    part_of[n].assign(holders[n].size(), nullptr);
  }
  for (const EntryPart& part : parts) part_of[part.part.node][part.part.index] = &part;
  for (int n = static_cast<int>(graph.nodes.size()) - 1; n >= 0; --n) {
    for (size_t i = 0; i < holders[n].size(); ++i) {
      const EntryPart* part = part_of[n][i];
      if (part == nullptr) continue;
      Holder& whole = holders[part->whole.node][part->whole.index];
      if (whole.root.node < 0) whole.root = part->whole;  // an outermost entry
      holders[n][i] = {whole.root, whole.offset + part->offset};
    }
  }
  return holders;
}

// Applies the in-place rule along node order and makes the buffers. Under
// the dataflow rule an operator overwrites an input only when every earlier
// reader is its ancestor; under the execution-order rule being the last
// reader in node order is enough, and each earlier reader that is not an
// ancestor adds an edge to `edges`. When `ancestry` is null (too many
// operators), only the accesses since the buffer's previous in-place
// overwrite get an edge: every access before it already has a path to that
// overwriter, which is an ancestor of every later one (each later entry of
// the buffer is made from its output). That keeps the edges, and the work,
// linear in the accesses instead of quadratic along an in-place chain.
// With `inplace`, entries in `parts` share their outermost entry's buffer.
void BuildBuffers(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  const std::vector<EntryPart>& parts, bool inplace, bool dataflow,
                  const Ancestry* ancestry, BufferSet* out,
                  std::set<std::pair<int, int>>* edges) {
  const int count = static_cast<int>(graph.nodes.size());
  const std::vector<std::vector<Holder>> holders =
      Holders(graph, inplace ? parts : std::vector<EntryPart>());
  std::map<std::pair<int, int>, int> root_buffer;  // outermost entry -> its buffer
  // Pending reads of every entry: one per consumer input, one per graph head.
  std::vector<std::vector<int>> readers(count);
  for (int n = 0; n < count; ++n) readers[n].assign(graph.nodes[n].num_outputs(), 0);
  for (const Node& node : graph.nodes) {
    for (const NodeEntry& input : node.inputs) ++readers[input.node][input.index];
  }
  for (const NodeEntry& output : graph.outputs) ++readers[output.node][output.index];

  std::vector<Buffer>& buffers = out->buffers;
  buffers.clear();
  out->entry_buffer.assign(count, {});
  std::vector<int> pending;  // per buffer: reads not yet done
  // Per buffer, without ancestry: the first access that may lack a path to
  // the buffer's next in-place overwriter.
  std::vector<size_t> unordered_from;
  auto touch = [&](int buffer, int node) {
    Buffer& b = buffers[buffer];
    if (b.accesses.empty() || b.accesses.back() != node) b.accesses.push_back(node);
    b.last = std::max(b.last, node);
  };

  out->entry_offset.assign(count, {});
  for (int n = 0; n < count; ++n) {
    const Node& node = graph.nodes[n];
    std::vector<int>& mine = out->entry_buffer[n];
    std::vector<size_t>& offsets = out->entry_offset[n];
    mine.assign(node.num_outputs(), -1);
    offsets.assign(node.num_outputs(), 0);
    if (node.is_variable()) continue;
    const int num_inputs = static_cast<int>(node.inputs.size());
    if (inplace) {
      std::vector<bool> input_taken(num_inputs, false);
      for (const InplacePair& pair : node.op->InplaceOptions()) {
        if (pair.input < 0 || pair.input >= num_inputs || pair.output < 0 ||
            pair.output >= node.num_outputs()) {
          continue;
        }
        const NodeEntry& input = node.inputs[pair.input];
        if (graph.nodes[input.node].is_variable()) continue;
        if (input_taken[pair.input] || mine[pair.output] >= 0) continue;
        if (readers[n][pair.output] == 0) continue;
        if (entry_bytes[input.node][input.index] != entry_bytes[n][pair.output]) continue;
        // Parts are made where their whole says, and only a buffer's whole
        // contents are overwritten in place (a part of it is not).
        if (holders[n][pair.output].root.node >= 0) continue;
        const int buffer = out->entry_buffer[input.node][input.index];
        if (out->entry_offset[input.node][input.index] != 0 ||
            Aligned(entry_bytes[input.node][input.index]) != buffers[buffer].bytes) {
          continue;
        }
        if (!pair.identity) {
          if (pending[buffer] != 1) continue;
          const std::vector<int>& accesses = buffers[buffer].accesses;
          if (ancestry == nullptr) {
            for (size_t a = unordered_from[buffer]; a < accesses.size(); ++a) {
              if (accesses[a] != n) edges->insert({accesses[a], n});
            }
            // n is accessed next (as the reader of its input); the edges
            // from the accesses after it start past it.
            unordered_from[buffer] = accesses.size() + 1;
          } else {
            std::vector<int> unordered;  // earlier accesses the graph does not order before n
            for (int access : accesses) {
              if (access != n && !ancestry->IsAncestor(access, n)) unordered.push_back(access);
            }
            if (dataflow && !unordered.empty()) continue;
            for (int access : unordered) edges->insert({access, n});
          }
        }
        mine[pair.output] = buffer;
        offsets[pair.output] = 0;
        input_taken[pair.input] = true;
        pending[buffer] += readers[n][pair.output];
      }
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      if (mine[i] >= 0) continue;
      const Holder& holder = holders[n][i];
      if (holder.root.node >= 0) {
        // A part, or a whole with parts: the outermost entry's buffer,
        // made by whichever of its entries comes first.
        const std::pair<int, int> root{holder.root.node, holder.root.index};
        auto found = root_buffer.find(root);
        if (found == root_buffer.end()) {
          Buffer buffer;
          buffer.bytes = Aligned(entry_bytes[root.first][root.second]);
          buffer.first = n;
          buffer.last = n;
          buffers.push_back(buffer);
          pending.push_back(0);
          unordered_from.push_back(0);
          found = root_buffer.emplace(root, static_cast<int>(buffers.size()) - 1).first;
        }
        mine[i] = found->second;
        offsets[i] = holder.offset;
        pending[found->second] += readers[n][i];
        buffers[found->second].writers.push_back(n);
        continue;
      }
      Buffer buffer;
      buffer.bytes = Aligned(entry_bytes[n][i]);
      buffer.first = n;
      buffer.last = n;
      buffer.writers.push_back(n);
      buffers.push_back(buffer);
      pending.push_back(readers[n][i]);
      unordered_from.push_back(0);
      mine[i] = static_cast<int>(buffers.size()) - 1;
    }
    for (const NodeEntry& input : node.inputs) {
      if (graph.nodes[input.node].is_variable()) continue;
      const int buffer = out->entry_buffer[input.node][input.index];
      touch(buffer, n);
      --pending[buffer];
    }
    for (int buffer : mine) touch(buffer, n);
  }
  for (const NodeEntry& output : graph.outputs) {
    const int buffer = out->entry_buffer[output.node][output.index];
    if (buffer >= 0) buffers[buffer].last = count;  // live to the end
  }
}

// Is `x` finished before `y` starts, in every schedule the rule admits?
// `dataflow` null: the execution-order rule.
bool Before(const Buffer& x, const Buffer& y, const Ancestry* dataflow) {
  if (x.last >= y.first) return false;  // also covers graph outputs
  if (dataflow == nullptr) return true;
  const Ancestry* ancestry = dataflow;
  for (int access : x.accesses) {
    for (int writer : y.writers) {
      if (!ancestry->IsAncestor(access, writer)) return false;
    }
  }
  return true;
}

// conflicts[b]: the buffers that may not share any byte with b, ascending.
std::vector<std::vector<int>> Conflicts(const std::vector<Buffer>& buffers,
                                        const Ancestry* dataflow) {
  const int count = static_cast<int>(buffers.size());
  std::vector<std::vector<int>> conflicts(count);
  if (dataflow == nullptr) {
    // Under the execution-order rule two buffers conflict when their
    // [first, last] steps overlap: sorted by first step, each buffer
    // conflicts with the ones after it that start before it ends. Time in
    // the size of the answer, not in all pairs (large graphs).
    std::vector<int> by_first(static_cast<size_t>(count));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::stable_sort(by_first.begin(), by_first.end(),
                     [&](int a, int b) { return buffers[a].first < buffers[b].first; });
    for (size_t i = 0; i < by_first.size(); ++i) {
      const int a = by_first[i];
      for (size_t j = i + 1; j < by_first.size() && buffers[by_first[j]].first <= buffers[a].last;
           ++j) {
        conflicts[a].push_back(by_first[j]);
        conflicts[by_first[j]].push_back(a);
      }
    }
    for (std::vector<int>& list : conflicts) std::sort(list.begin(), list.end());
    return conflicts;
  }
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      if (Before(buffers[a], buffers[b], dataflow) || Before(buffers[b], buffers[a], dataflow)) {
        continue;
      }
      conflicts[a].push_back(b);
      conflicts[b].push_back(a);
    }
  }
  return conflicts;
}

constexpr size_t kUnplaced = static_cast<size_t>(-1);

// Places order[from...] after order[0, from), whose offsets are already in
// *offsets (those of the others kUnplaced) and reach up to `arena`: each at
// the lowest offset where it overlaps no placed buffer it conflicts with.
// Returns the arena size, or stops early and returns limit + 1 as soon as it
// would exceed `limit`.
size_t PlaceFrom(const std::vector<Buffer>& buffers,
                 const std::vector<std::vector<int>>& conflicts, const std::vector<int>& order,
                 size_t from, size_t arena, size_t limit, std::vector<size_t>* offsets) {
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of placed conflicts
  for (size_t position = from; position < order.size(); ++position) {
    const int b = order[position];
    busy.clear();
    for (int other : conflicts[b]) {
      if ((*offsets)[other] == kUnplaced) continue;
      busy.emplace_back((*offsets)[other], (*offsets)[other] + buffers[other].bytes);
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& range : busy) {
      if (range.first >= offset + buffers[b].bytes) break;  // the gap before it fits
      offset = std::max(offset, range.second);
    }
    (*offsets)[b] = offset;
    arena = std::max(arena, offset + buffers[b].bytes);
    if (arena > limit) return limit + 1;
  }
  return arena;
}

// Places the buffers in `order` from an empty arena. Returns the arena size.
size_t Place(const std::vector<Buffer>& buffers, const std::vector<std::vector<int>>& conflicts,
             const std::vector<int>& order, std::vector<size_t>* offsets) {
  offsets->assign(buffers.size(), kUnplaced);
  return PlaceFrom(buffers, conflicts, order, 0, 0, static_cast<size_t>(-1) - 1, offsets);
}

// A small deterministic generator (xorshift64*) for the local search.
class SearchRandom {
 public:
  size_t Below(size_t bound) {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<size_t>((state_ * 0x2545f4914f6cdd1dull) >> 33) % bound;
  }

 private:
  uint64_t state_ = 0x9e3779b97f4a7c15ull;
};

// Tries several placement orders, then improves the best one by a local
// search over orders (below). Stops as soon as the arena is down to
// `target` (the caller's lower bound, or what is good enough) or the budget
// is spent; the random moves come from a fixed seed, so the result does not
// depend on timing. Any packing is reachable: placing buffers in the order
// of their offsets in a packing reproduces it or a lower one.
size_t PlaceBest(const std::vector<Buffer>& buffers, const Ancestry* dataflow, size_t target,
                 std::vector<size_t>* offsets) {
  offsets->clear();
  if (buffers.empty()) return 0;
  const std::vector<std::vector<int>> conflicts = Conflicts(buffers, dataflow);
  // In doubles and 64 bits below: size_t products and sums could wrap on
  // 32-bit targets.
  auto area = [&](int b) {
    return static_cast<double>(buffers[b].bytes) * (buffers[b].last - buffers[b].first + 1);
  };
  using Less = std::function<bool(int, int)>;
  // Largest first (big buffers claim the low offsets, small ones fill the
  // gaps), with ties between equal sizes broken four ways: which of two
  // equal buffers goes low decides whether a chain of growing buffers
  // (DenseNet's concatenations) packs or leaves holes.
  auto by_size = [&](std::function<bool(const Buffer&, const Buffer&)> tie) -> Less {
    return [&buffers, tie](int a, int b) {
      if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
      return tie(buffers[a], buffers[b]);
    };
  };
  const std::vector<Less> orders = {
      by_size([](const Buffer& a, const Buffer& b) { return a.first < b.first; }),
      by_size([](const Buffer& a, const Buffer& b) { return a.last > b.last; }),
      by_size([](const Buffer& a, const Buffer& b) { return a.first > b.first; }),
      by_size([](const Buffer& a, const Buffer& b) { return a.last < b.last; }),
      // First written first: what a run-time allocator would see.
      [&](int a, int b) { return buffers[a].first < buffers[b].first; },
      // Largest area in the (time, offset) plane first.
      [&](int a, int b) { return area(a) > area(b); },
      // Most constrained first.
      [&](int a, int b) { return conflicts[a].size() > conflicts[b].size(); },
  };
  size_t best = static_cast<size_t>(-1);
  std::vector<int> best_order;
  std::vector<size_t> candidate;
  for (const Less& less : orders) {
    std::vector<int> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), less);
    const size_t arena = Place(buffers, conflicts, order, &candidate);
    if (arena < best) {
      best = arena;
      best_order = order;
      *offsets = candidate;
    }
  }
  // The search: swap two random places in the order and keep the result
  // unless it is worse, comparing the arena first and then the bytes that
  // stick out above `target` (which tells apart orders with equal arenas
  // and so gives the search a slope to follow). The budget is in units of
  // conflict-list work, so big graphs get fewer, costlier steps; the search
  // also ends after kSearchStall steps without progress.
  size_t work_per_step = buffers.size();
  for (const std::vector<int>& list : conflicts) work_per_step += list.size();
  const size_t steps = std::min(kSearchSteps, std::max<size_t>(kSearchWork / work_per_step, 100));
  auto excess = [&](const std::vector<size_t>& placed) {
    uint64_t total = 0;
    for (size_t b = 0; b < buffers.size(); ++b) {
      const size_t end = placed[b] + buffers[b].bytes;
      if (end > target) total += end - target;
    }
    return total;
  };
  uint64_t best_excess = excess(*offsets);
  // A swap changes nothing before its first position: the candidate starts
  // from the best placement's offsets of that prefix (prefix_end[k]: the
  // arena of best_order[0, k)), and gives up once its arena passes the best
  // one's, which it would be rejected for anyway. The same plans, sooner.
  std::vector<size_t> prefix_end(buffers.size() + 1, 0);
  const auto update_prefix_end = [&]() {
    for (size_t k = 0; k < best_order.size(); ++k) {
      const int b = best_order[k];
      prefix_end[k + 1] = std::max(prefix_end[k], (*offsets)[b] + buffers[b].bytes);
    }
  };
  update_prefix_end();
  SearchRandom random;
  size_t stalled = 0;
  std::vector<int> order;
  for (size_t step = 0; step < steps && best > target && stalled < kSearchStall; ++step) {
    const size_t i = random.Below(buffers.size()), j = random.Below(buffers.size());
    if (i == j) continue;
    order = best_order;
    std::swap(order[i], order[j]);
    const size_t from = std::min(i, j);
    candidate = *offsets;
    for (size_t k = from; k < order.size(); ++k) candidate[order[k]] = kUnplaced;
    const size_t arena =
        PlaceFrom(buffers, conflicts, order, from, prefix_end[from], best, &candidate);
    if (arena > best) {
      ++stalled;
      continue;
    }
    const uint64_t candidate_excess = excess(candidate);
    if (arena == best && candidate_excess > best_excess) {
      ++stalled;
      continue;
    }
    stalled = arena < best || candidate_excess < best_excess ? 0 : stalled + 1;
    best = arena;
    best_excess = candidate_excess;
    best_order.swap(order);
    offsets->swap(candidate);
    update_prefix_end();
  }
  return best;
}

// The largest total of buffers live at one step (node order).
size_t LiveBytesPeak(const std::vector<Buffer>& buffers, int steps) {
  std::vector<long long> delta(static_cast<size_t>(steps) + 2, 0);
  for (const Buffer& buffer : buffers) {
    delta[buffer.first] += static_cast<long long>(buffer.bytes);
    delta[buffer.last + 1] -= static_cast<long long>(buffer.bytes);
  }
  long long live = 0, peak = 0;
  for (long long change : delta) {
    live += change;
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

Status CheckEntryBytes(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes) {
  MXL_CHECK(entry_bytes.size() == graph.nodes.size(), "memory plan: sizes given for ",
            entry_bytes.size(), " nodes but the graph has ", graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    MXL_CHECK(graph.nodes[n].is_variable() ||
                  entry_bytes[n].size() == static_cast<size_t>(graph.nodes[n].num_outputs()),
              "memory plan: node ", graph.Describe(static_cast<int>(n)), " has ",
              graph.nodes[n].num_outputs(), " outputs but ", entry_bytes[n].size(),
              " sizes were given");
  }
  return Status();
}

// The ordering edges of an execution-order plan without ancestry (too many
// operators to tell which reuses the graph already orders): for each buffer
// and each of its bytes, only the latest earlier tenant of that byte gets
// edges (from each of its accesses to each writer of the buffer). An
// earlier tenant of the byte has edges to that tenant's writers, which are
// among its accesses, so the chain orders it too; the checker in
// tests/cpp/plan_tool.cc follows such paths. The arena is painted in order
// of first steps, each buffer over the byte ranges it takes, so the work is
// n log n in the buffers plus the edges.
void AddReuseEdgesWithoutAncestry(const std::vector<Buffer>& buffers,
                                  const std::vector<size_t>& offsets,
                                  std::set<std::pair<int, int>>* edges) {
  std::vector<int> by_first(buffers.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](int a, int b) { return buffers[a].first < buffers[b].first; });
  // Byte ranges of the arena: each key starts a range that runs to the next
  // key, holding its latest tenant (-1: none yet).
  std::map<size_t, int> tenant{{0, -1}};
  // Splits the range holding `at` so that one starts there; returns it.
  auto split = [&](size_t at) {
    auto next = tenant.upper_bound(at);
    auto holder = std::prev(next);
    if (holder->first == at) return holder;
    return tenant.emplace_hint(next, at, holder->second);
  };
  std::vector<int> previous;
  for (int b : by_first) {
    const Buffer& y = buffers[b];
    if (y.bytes == 0) continue;
    const size_t begin = offsets[b], end = begin + y.bytes;
    split(end);  // first: splitting at `begin` next keeps this iterator valid
    auto first = split(begin);
    auto last = tenant.find(end);
    previous.clear();
    for (auto it = first; it != last; ++it) {
      if (it->second >= 0) previous.push_back(it->second);
    }
    std::sort(previous.begin(), previous.end());
    previous.erase(std::unique(previous.begin(), previous.end()), previous.end());
    for (int p : previous) {
      for (int access : buffers[p].accesses) {
        for (int writer : y.writers) edges->insert({access, writer});
      }
    }
    tenant.erase(std::next(first), last);
    first->second = b;
  }
}

// One plan under one reuse rule. The placement search stops once the
// arena is down to `good_enough` (or to the live-bytes peak, if higher).
void PlanWithRule(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  const std::vector<EntryPart>& parts, const PlanOptions& options, bool dataflow,
                  const Ancestry* ancestry, size_t good_enough, MemoryPlan* plan) {
  BufferSet set;
  std::set<std::pair<int, int>> edges;
  BuildBuffers(graph, entry_bytes, parts, options.inplace, dataflow, ancestry, &set, &edges);
  plan->entry_block = set.entry_buffer;
  plan->entry_offset = set.entry_offset;
  plan->block_bytes.clear();
  for (const Buffer& buffer : set.buffers) plan->block_bytes.push_back(buffer.bytes);
  plan->naive_bytes = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].is_variable()) continue;
    for (size_t bytes : entry_bytes[n]) plan->naive_bytes += Aligned(bytes);
  }
  plan->block_offset.clear();
  if (options.coshare) {
    const size_t peak = LiveBytesPeak(set.buffers, static_cast<int>(graph.nodes.size()));
    plan->arena_bytes = PlaceBest(set.buffers, dataflow ? ancestry : nullptr,
                                  std::max(peak, good_enough), &plan->block_offset);
  } else {
    size_t offset = 0;
    for (size_t bytes : plan->block_bytes) {
      plan->block_offset.push_back(offset);
      offset += bytes;
    }
    plan->arena_bytes = offset;
  }
  if (!dataflow && options.coshare && ancestry == nullptr) {
    AddReuseEdgesWithoutAncestry(set.buffers, plan->block_offset, &edges);
  } else if (!dataflow && options.coshare) {
    // Every reuse of bytes the graph does not already order becomes an edge
    // from each access of the earlier tenant to each of the later one's
    // writers.
    const std::vector<Buffer>& buffers = set.buffers;
    for (size_t a = 0; a < buffers.size(); ++a) {
      for (size_t b = 0; b < buffers.size(); ++b) {
        const Buffer& x = buffers[a];
        const Buffer& y = buffers[b];
        if (a == b || x.last >= y.first) continue;
        const size_t x_begin = plan->block_offset[a], y_begin = plan->block_offset[b];
        if (x_begin >= y_begin + y.bytes || y_begin >= x_begin + x.bytes) continue;
        for (int access : x.accesses) {
          for (int writer : y.writers) {
            if (ancestry == nullptr || !ancestry->IsAncestor(access, writer)) {
              edges.insert({access, writer});
            }
          }
        }
      }
    }
  }
  plan->ordering_edges.assign(edges.begin(), edges.end());
  plan->parallel_safe = plan->ordering_edges.empty();
}

}  // namespace memory_plan_cc

Status FindEntryParts(const Graph& graph, const EntryShapes& shapes, const EntryDTypes& dtypes,
                      std::vector<EntryPart>* parts) {
  parts->clear();
  const int count = static_cast<int>(graph.nodes.size());
  MXL_CHECK(shapes.size() == graph.nodes.size() && dtypes.size() == graph.nodes.size(),
            "memory plan: shapes or dtypes missing for some of the ", count, " nodes");
  std::set<std::pair<int, int>> outputs, placed;
  for (const NodeEntry& output : graph.outputs) outputs.insert({output.node, output.index});
  std::vector<size_t> offsets;
  for (int n = 0; n < count; ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable() || node.num_outputs() < 1 || outputs.count({n, 0})) continue;
    std::vector<Shape> in;
    bool same_dtype = true;
    for (const NodeEntry& input : node.inputs) {
      in.push_back(shapes[input.node][input.index]);
      same_dtype = same_dtype && dtypes[input.node][input.index] == dtypes[n][0];
    }
    if (!same_dtype || !node.op->InputsLaidEndToEnd(in, shapes[n][0], DTypeSize(dtypes[n][0]),
                                                    &offsets) ||
        offsets.size() != node.inputs.size()) {
      continue;
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const NodeEntry& input = node.inputs[i];
      const std::pair<int, int> key{input.node, input.index};
      const Node& producer = graph.nodes[input.node];
      bool eligible = !producer.is_variable() && !outputs.count(key) && !placed.count(key) &&
                      shapes[input.node][input.index].Size() > 0 &&
                      offsets[i] % kBufferAlignment == 0;
      for (size_t j = 0; eligible && j < node.inputs.size(); ++j) {
        eligible = j == i || !(node.inputs[j] == input);
      }
      if (!eligible) continue;
      // An identity view is its producer's input, wherever that lies.
      for (const InplacePair& pair : producer.op->InplaceOptions()) {
        eligible = eligible && !(pair.identity && pair.output == input.index);
      }
      if (!eligible) continue;
      placed.insert(key);
      parts->push_back({input, NodeEntry{n, 0}, offsets[i]});
    }
  }
  return Status();
}

namespace memory_plan_cc {

// The lower bound (see memory_plan.h) with these parts laid in place: no
// plan of that layout, under any reuse rule, is smaller.
size_t LowerBound(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  const std::vector<EntryPart>& parts) {
  BufferSet execution_order;
  std::set<std::pair<int, int>> edges;
  BuildBuffers(graph, entry_bytes, parts, true, false, nullptr, &execution_order, &edges);
  return LiveBytesPeak(execution_order.buffers, static_cast<int>(graph.nodes.size()));
}

// PlanMemory with these parts laid in place, all of them.
Status PlanWithParts(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                     const std::vector<EntryPart>& parts, const PlanOptions& options,
                     MemoryPlan* plan) {
  Ancestry ancestry;
  const bool have_ancestry = options.ancestry && ancestry.Build(graph);
  const Ancestry* known = have_ancestry ? &ancestry : nullptr;
  const bool dataflow_possible = have_ancestry && options.rule != ReuseRule::kExecutionOrder;
  if (!dataflow_possible) {
    PlanWithRule(graph, entry_bytes, parts, options, false, known, 0, plan);
    return Status();
  }
  if (options.rule == ReuseRule::kDataflow) {
    PlanWithRule(graph, entry_bytes, parts, options, true, known, 0, plan);
    return Status();
  }
  // kAuto: the execution-order plan sets the bar the dataflow plan must
  // reach (within the tolerance) to be preferred.
  MemoryPlan execution_order;
  PlanWithRule(graph, entry_bytes, parts, options, false, known, 0, &execution_order);
  const size_t acceptable = execution_order.arena_bytes +
                            execution_order.arena_bytes / 100 * kDataflowTolerancePercent;
  PlanWithRule(graph, entry_bytes, parts, options, true, known, acceptable, plan);
  if (plan->arena_bytes > acceptable) *plan = std::move(execution_order);
  return Status();
}

}  // namespace memory_plan_cc

Status PlanMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  const std::vector<EntryPart>& parts, const PlanOptions& options,
                  MemoryPlan* plan) {
  using namespace memory_plan_cc;
  MXL_RETURN_IF_ERROR(CheckEntryBytes(graph, entry_bytes));
  MXL_RETURN_IF_ERROR(PlanWithParts(graph, entry_bytes, parts, options, plan));
  plan->parts.clear();
  if (parts.empty() || !options.inplace) return Status();
  plan->parts = parts;
  // Parts lengthen lives (see "Laid end to end"); where the plan that
  // copies every Concat input is smaller, it is the plan. It is made only
  // where its lower bound leaves it room to be.
  if (LowerBound(graph, entry_bytes, {}) >= plan->arena_bytes) return Status();
  MemoryPlan copied;
  MXL_RETURN_IF_ERROR(PlanWithParts(graph, entry_bytes, {}, options, &copied));
  if (copied.arena_bytes < plan->arena_bytes) *plan = std::move(copied);
  return Status();
}

Status ReportMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                    const std::vector<EntryPart>& parts, MemoryReport* report) {
  using namespace memory_plan_cc;
  MXL_RETURN_IF_ERROR(CheckEntryBytes(graph, entry_bytes));
  MemoryPlan plan;
  PlanOptions options;
  options.inplace = false;
  options.coshare = false;
  MXL_RETURN_IF_ERROR(PlanMemory(graph, entry_bytes, parts, options, &plan));
  report->naive_bytes = plan.arena_bytes;
  options.inplace = true;
  MXL_RETURN_IF_ERROR(PlanMemory(graph, entry_bytes, parts, options, &plan));
  report->inplace_bytes = plan.arena_bytes;
  options.inplace = false;
  options.coshare = true;
  MXL_RETURN_IF_ERROR(PlanMemory(graph, entry_bytes, parts, options, &plan));
  report->coshare_bytes = plan.arena_bytes;
  MXL_RETURN_IF_ERROR(PlanMemory(graph, entry_bytes, parts, PlanOptions(), &plan));
  report->planned_bytes = plan.arena_bytes;
  report->num_blocks = plan.block_bytes.size();
  report->ordering_edges = plan.ordering_edges.size();
  report->num_entries = 0;
  for (const Node& node : graph.nodes) {
    if (!node.is_variable()) report->num_entries += node.num_outputs();
  }
  // The plan may copy the Concat inputs instead (PlanMemory): the bound
  // is the smaller of the two layouts' peaks.
  report->lower_bound_bytes = LowerBound(graph, entry_bytes, {});
  if (!parts.empty()) {
    report->lower_bound_bytes =
        std::min(report->lower_bound_bytes, LowerBound(graph, entry_bytes, parts));
  }
  return Status();
}

Status EntryBytes(const Graph& graph, const EntryShapes& shapes, const EntryDTypes& dtypes,
                  std::vector<std::vector<size_t>>* entry_bytes) {
  entry_bytes->assign(graph.nodes.size(), {});
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (size_t i = 0; i < shapes[n].size(); ++i) {
      MXL_CHECK(shapes[n][i].CheckedSize() >= 0, "output '", graph.nodes[n].OutputName(i),
                "' of node ", graph.Describe(static_cast<int>(n)), " would have shape ",
                shapes[n][i].ToString(), ", which is too large");
      (*entry_bytes)[n].push_back(static_cast<size_t>(shapes[n][i].Size()) *
                                  DTypeSize(dtypes[n][i]));
    }
  }
  return Status();
}

Status ComputeMemoryReport(const Graph& graph, const std::map<std::string, Shape>& input_shapes,
                           const std::map<std::string, int>& input_dtypes, bool with_parts,
                           MemoryReport* report) {
  for (const auto& input : input_shapes) {
    const int node = graph.FindNode(input.first);
    MXL_CHECK(node >= 0 && graph.nodes[node].is_variable(), "input '", input.first,
              "' is not an input of the graph");
    MXL_CHECK(input.second.is_complete(), "input '", input.first, "' has incomplete shape ",
              input.second.ToString());
  }
  EntryShapes shapes;
  MXL_RETURN_IF_ERROR(InferShapes(graph, input_shapes, {}, &shapes));
  // Inputs without a dtype are float32, as in MXNet's predict API.
  std::map<std::string, int> known_dtypes = input_dtypes;
  for (const auto& input : input_shapes) known_dtypes.emplace(input.first, kFloat32);
  EntryDTypes dtypes;
  MXL_RETURN_IF_ERROR(InferDTypes(graph, known_dtypes, &dtypes));
  std::vector<std::vector<size_t>> entry_bytes;
  MXL_RETURN_IF_ERROR(EntryBytes(graph, shapes, dtypes, &entry_bytes));
  std::vector<EntryPart> parts;
  if (with_parts) MXL_RETURN_IF_ERROR(FindEntryParts(graph, shapes, dtypes, &parts));
  return ReportMemory(graph, entry_bytes, parts, report);
}

}  // namespace mxlite
