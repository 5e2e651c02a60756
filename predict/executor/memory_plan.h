/*
 * Memory planning for the intermediate arrays of a forward pass.
 *
 * Every operator output (an "entry") needs storage while it is live: from
 * the step its operator writes it until its last reader has run (graph
 * outputs stay live to the end; outputs nobody reads, such as BatchNorm's
 * mean and var, live for their one step). Variables are the user's arrays
 * and are not planned. The plan puts every entry at an offset in one arena;
 * the executor allocates the arena once and makes each entry a view into it.
 * Two mechanisms let entries share bytes:
 *
 *   In place. An operator output takes over an input's buffer when the
 *   operator declares the pair (Operator::InplaceOptions), the sizes are
 *   equal, the input was made by an operator (variables belong to the user),
 *   no other output of the step took that input, the output has a reader,
 *   and either the output is an identity view of the input (Flatten,
 *   Dropout at inference: the data is the same, so the buffer simply gains
 *   the output's readers), or the operator is the buffer's last reader (and
 *   the reuse rule below accepts the earlier readers). Entries joined this
 *   way form one buffer.
 *
 *   Laid end to end. When an operator's output is nothing but its inputs
 *   end to end (Concat of a batch of one along channels; see
 *   Operator::InputsLaidEndToEnd), each input becomes a part of that
 *   output's buffer, at its offset there: its producer writes it in place
 *   and the Concat copies nothing. That holds for inputs made long before
 *   the Concat too: DenseNet's blocks (each layer's features joined to the
 *   previous join) become one buffer per block, each layer writing its
 *   features into its slot. An earlier session measured that 1.4% slower
 *   than copying the old joins (their readers waited on memory the copy
 *   had streamed in); since the 1x1 GEMM prefetches the rows it normalises
 *   (gemm.cc), densenet121 runs 2% faster at one thread and 4% at two laid
 *   in place, Inception's towers the same either way, SqueezeNet 3%
 *   faster. Parts may still nest. An entry is a part of at most one
 *   output (the first Concat in node order that takes it), and never when
 *   it is a graph output or a variable, appears twice in the same Concat,
 *   is an identity view, is empty, or would start off kBufferAlignment;
 *   such inputs are copied. The buffer is live from its
 *   first part's writer to the output's last reader, and the reuse rules
 *   below treat every part's writer as a writer of the buffer. No operator
 *   overwrites a part in place, and no part is made in place of another
 *   entry. A part's bytes stay taken until the whole is last read, so
 *   laying in place can cost memory (DenseNet's blocks on a GPU, whose
 *   graph keeps each block's input BatchNorm standing): PlanMemory also
 *   plans with every Concat input copied and keeps that plan where its
 *   arena is smaller.
 *
 *   Co-share. Two buffers may occupy the same bytes when one is finished
 *   before the other starts (as the reuse rule below defines it).
 *   Placement is offset-based, as in TFLite Micro's greedy memory planner:
 *   buffers are taken in some order and each goes to the lowest offset
 *   where it overlaps no already placed buffer it conflicts with. Several
 *   orders are tried (largest first with four tie-breaks, first written
 *   first, largest size x lifetime first, most conflicts first); then a
 *   local search moves a buffer that reaches the top of the arena earlier
 *   in the best order and keeps the change unless the arena grows. It stops
 *   at the largest live total (nothing can do better) or after
 *   kSearchSteps placements, so plans are deterministic.
 *
 * Reuse rules and concurrency:
 *   - dataflow: one buffer's bytes go to another only when every access of
 *     the first is a strict ancestor of each of the second's writers, and an
 *     in-place overwrite only when every earlier reader is an ancestor of
 *     the overwriting operator. Reuse then follows graph edges, so the plan
 *     adds no ordering: any schedule that runs each operator after the
 *     operators it reads from -- the executor's sequential loop, or the
 *     threaded engine with one variable per entry, reads as const_vars and
 *     writes as mutable_vars -- is safe, and branches that could run in
 *     parallel (Inception's towers, a ResNet shortcut) never share bytes
 *     while both might be live.
 *   - execution order: a buffer is reused once all accesses of its
 *     previous tenant have run in node order, and an operator overwrites an
 *     input when it is the last reader in node order. Smaller when a branch
 *     keeps a buffer alive (a ResNet-v2 shortcut convolution reading the
 *     same activation as the main branch), but it orders operators the
 *     graph does not: the plan lists those orderings as `ordering_edges`
 *     (earlier tenant's access -> each of the later tenant's writers, or earlier
 *     reader -> in-place writer), which a parallel schedule must add as
 *     dependencies. Only these pairs are ordered, not the whole graph.
 * By default (ReuseRule::kAuto) the planner makes both plans and keeps the
 * dataflow one unless it is more than kDataflowTolerancePercent larger.
 * Graphs with more than kMaxParallelSafeOperators operators get the
 * execution-order plan, with reuses listed as edges (the ancestor bitsets
 * would be too large to tell which the graph already implies): for an
 * in-place overwrite, from the buffer's accesses since its previous
 * overwrite; for co-shared bytes, from the accesses of each byte's latest
 * earlier tenant. Earlier accesses reach the writer through those, so the
 * listed edges are enough, and their number and the planning time grow
 * with the graph, not with its square. The
 * executor runs operators sequentially in node order today, for which both
 * plans are safe.
 *
 * The lower bound is the largest total of simultaneously live bytes at any
 * step of the execution order (node order), counting an in-place pair as
 * one buffer under the execution-order version of the in-place rule (last
 * reader in node order), with the Concat inputs laid in place or copied,
 * whichever peaks lower. No arena for that order can be smaller. Every size
 * here is rounded up to kBufferAlignment, the alignment each entry gets.
 */
#ifndef MXLITE_EXECUTOR_MEMORY_PLAN_H_
#define MXLITE_EXECUTOR_MEMORY_PLAN_H_

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../graph/graph.h"
#include "../graph/infer.h"

namespace mxlite {

// Above this many operators the ancestor sets (n^2 bits) get too large and
// the planner uses the execution-order rule (see above).
constexpr size_t kMaxParallelSafeOperators = 16384;
// How much larger (percent) the dataflow plan may be and still be chosen.
constexpr size_t kDataflowTolerancePercent = 1;

enum class ReuseRule {
  kAuto,            // dataflow unless that costs more than the tolerance
  kDataflow,        // reuse along graph edges only (adds no ordering)
  kExecutionOrder,  // reuse whenever node order allows (may add edges)
};

struct PlanOptions {
  bool inplace = true;  // let outputs take over inputs' buffers
  bool coshare = true;  // let buffers with disjoint lifetimes share bytes
  ReuseRule rule = ReuseRule::kAuto;
  // False: plan as for a graph of more than kMaxParallelSafeOperators
  // operators, whatever its size (lets tests check that plan on small graphs).
  bool ancestry = true;
};

// An operator output laid inside another (see "Laid end to end" above):
// `part` occupies bytes [offset, offset + its size) of `whole`.
struct EntryPart {
  NodeEntry part;
  NodeEntry whole;
  size_t offset;
};

struct MemoryPlan {
  // Per node, per output: block (buffer) index, or -1 for variables.
  std::vector<std::vector<int>> entry_block;
  // Per node, per output: the entry's byte offset inside its block (0 but
  // for parts laid inside a Concat's output).
  std::vector<std::vector<size_t>> entry_offset;
  std::vector<size_t> block_bytes;   // rounded up to kBufferAlignment
  std::vector<size_t> block_offset;  // in the arena, aligned
  size_t arena_bytes = 0;
  size_t naive_bytes = 0;            // sum of all output sizes (no sharing)
  // (a, b): node a must finish before node b starts, in addition to the
  // graph's edges, for the plan to be safe under a parallel schedule.
  // Always a < b, so node order satisfies them.
  std::vector<std::pair<int, int>> ordering_edges;
  bool parallel_safe = true;         // ordering_edges is empty
  // The entries laid inside others in this plan: the parts PlanMemory was
  // given, or none where copying them planned a smaller arena.
  std::vector<EntryPart> parts;
};

// What each strategy would allocate for one graph and input shapes.
struct MemoryReport {
  size_t naive_bytes = 0;        // every operator output its own buffer
  size_t inplace_bytes = 0;      // in place only
  size_t coshare_bytes = 0;      // co-share only
  size_t planned_bytes = 0;      // both: what the executor allocates
  size_t lower_bound_bytes = 0;  // largest simultaneously live total
  size_t num_entries = 0;        // operator outputs, hidden ones included
  size_t num_blocks = 0;         // buffers in the final plan
  size_t ordering_edges = 0;     // edges the final plan adds (0: dataflow plan)
};

// The bytes of every entry (node output) for the inferred shapes and
// dtypes; a shape too large to allocate is an error naming the output.
Status EntryBytes(const Graph& graph, const EntryShapes& shapes, const EntryDTypes& dtypes,
                  std::vector<std::vector<size_t>>* entry_bytes);

// The entries that may be laid inside other entries, from the operators'
// InputsLaidEndToEnd and the rules above ("Laid end to end"), in node order
// of the outputs that hold them.
Status FindEntryParts(const Graph& graph, const EntryShapes& shapes, const EntryDTypes& dtypes,
                      std::vector<EntryPart>* parts);

// entry_bytes[node][output] is the size of each operator output; `parts`
// (from FindEntryParts; applied only with options.inplace) lays entries
// inside others.
Status PlanMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  const std::vector<EntryPart>& parts, const PlanOptions& options,
                  MemoryPlan* plan);
inline Status PlanMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                         const PlanOptions& options, MemoryPlan* plan) {
  return PlanMemory(graph, entry_bytes, {}, options, plan);
}
inline Status PlanMemory(const Graph& graph,
                         const std::vector<std::vector<size_t>>& entry_bytes,
                         MemoryPlan* plan) {
  return PlanMemory(graph, entry_bytes, {}, PlanOptions(), plan);
}

// The four strategies and the lower bound for the given entry sizes.
Status ReportMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                    const std::vector<EntryPart>& parts, MemoryReport* report);

// The same from the graph alone: shapes are inferred from `input_shapes`
// (weights get theirs from the operators' attributes, so no params are
// needed); dtypes from `input_dtypes`, inputs not named there being float32.
// With `with_parts`, Concat inputs are laid inside their outputs
// (FindEntryParts), as an executor with graph optimisation does.
Status ComputeMemoryReport(const Graph& graph, const std::map<std::string, Shape>& input_shapes,
                           const std::map<std::string, int>& input_dtypes, bool with_parts,
                           MemoryReport* report);

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_MEMORY_PLAN_H_
