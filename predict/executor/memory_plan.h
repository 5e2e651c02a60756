/*
 * Memory planning for the intermediate arrays of a forward pass.
 *
 * Walk the operators in execution order, keeping a reference count per
 * storage block (how many pending reads its data still has, plus one for a
 * graph output, which is never released):
 *   1. In place: an output may take over an input's block when the operator
 *      declares the pair, the sizes match, the input was made by an operator
 *      (variables belong to the user), no other output took it yet, and
 *      either this operator is its last reader or the output is an identity
 *      view of the input (then the block simply gains readers).
 *   2. Every other output, largest first, takes a free block: the smallest
 *      one at least as large (up to 16x larger), else the largest smaller one
 *      (which grows), else a new block. This is MXNet's co-sharing rule.
 *   3. After the operator, each input's block loses a reader and returns to
 *      the free list when none remain; so do outputs nobody reads (hidden
 *      outputs such as BatchNorm's mean).
 * Blocks are then laid out back to back in one arena.
 */
#ifndef MXLITE_EXECUTOR_MEMORY_PLAN_H_
#define MXLITE_EXECUTOR_MEMORY_PLAN_H_

#include <cstddef>
#include <vector>

#include "../graph/graph.h"

namespace mxlite {

struct MemoryPlan {
  // Per node, per output: block index, or -1 for variables.
  std::vector<std::vector<int>> entry_block;
  std::vector<size_t> block_bytes;
  std::vector<size_t> block_offset;  // in the arena, aligned
  size_t arena_bytes = 0;
  size_t naive_bytes = 0;            // sum of all output sizes (no sharing)
};

// entry_bytes[node][output] is the size of each operator output.
Status PlanMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  MemoryPlan* plan);

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_MEMORY_PLAN_H_
