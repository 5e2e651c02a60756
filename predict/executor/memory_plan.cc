#include "memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "../ndarray/ndarray.h"

namespace mxlite {

namespace memory_plan_cc {

constexpr size_t kMatchRange = 16;

class BlockPool {
 public:
  int Request(size_t bytes) {
    if (bytes == 0) bytes = 1;
    // Smallest free block in [bytes, bytes * range].
    auto fit = free_.lower_bound(bytes);
    if (fit != free_.end() && fit->first <= bytes * kMatchRange) return Take(fit, bytes);
    // Otherwise the largest smaller block in [bytes / range, bytes), grown.
    if (fit != free_.begin()) {
      auto smaller = std::prev(fit);
      if (smaller->first >= bytes / kMatchRange) return Take(smaller, bytes);
    }
    sizes_.push_back(bytes);
    return static_cast<int>(sizes_.size()) - 1;
  }
  void Release(int block) { free_.emplace(sizes_[block], block); }
  const std::vector<size_t>& sizes() const { return sizes_; }

 private:
  int Take(std::multimap<size_t, int>::iterator it, size_t bytes) {
    int block = it->second;
    free_.erase(it);
    sizes_[block] = std::max(sizes_[block], bytes);
    return block;
  }
  std::multimap<size_t, int> free_;  // size -> block
  std::vector<size_t> sizes_;
};

}  // namespace memory_plan_cc

Status PlanMemory(const Graph& graph, const std::vector<std::vector<size_t>>& entry_bytes,
                  MemoryPlan* plan) {
  using memory_plan_cc::BlockPool;
  const size_t count = graph.nodes.size();
  // Pending reads of every entry.
  std::vector<std::vector<int>> readers(count);
  for (size_t n = 0; n < count; ++n) readers[n].assign(graph.nodes[n].num_outputs(), 0);
  for (const Node& node : graph.nodes) {
    for (const NodeEntry& input : node.inputs) ++readers[input.node][input.index];
  }
  for (const NodeEntry& output : graph.outputs) ++readers[output.node][output.index];

  plan->entry_block.assign(count, {});
  plan->naive_bytes = 0;
  BlockPool pool;
  std::vector<int> block_refs;
  auto refs_of = [&](int block) -> int& {
    if (block >= static_cast<int>(block_refs.size())) block_refs.resize(block + 1, 0);
    return block_refs[block];
  };

  for (size_t n = 0; n < count; ++n) {
    const Node& node = graph.nodes[n];
    std::vector<int>& blocks = plan->entry_block[n];
    blocks.assign(node.num_outputs(), -1);
    if (node.is_variable()) continue;
    for (size_t bytes : entry_bytes[n]) plan->naive_bytes += bytes;

    // 1. In place.
    std::vector<bool> input_taken(node.inputs.size(), false);
    for (const InplacePair& pair : node.op->InplaceOptions()) {
      const NodeEntry& input = node.inputs[pair.input];
      int block = plan->entry_block[input.node].empty() ? -1
                  : plan->entry_block[input.node][input.index];
      if (block < 0 || input_taken[pair.input] || blocks[pair.output] >= 0) continue;
      if (readers[n][pair.output] == 0) continue;
      if (entry_bytes[input.node][input.index] != entry_bytes[n][pair.output]) continue;
      if (!pair.identity && refs_of(block) != 1) continue;
      blocks[pair.output] = block;
      input_taken[pair.input] = true;
      refs_of(block) += readers[n][pair.output];
    }
    // 2. Fresh or shared blocks, largest first.
    std::vector<int> order(node.num_outputs());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return entry_bytes[n][a] > entry_bytes[n][b]; });
    for (int i : order) {
      if (blocks[i] >= 0) continue;
      blocks[i] = pool.Request(entry_bytes[n][i]);
      refs_of(blocks[i]) = readers[n][i];
    }
    // 3. Release what this operator was the last to read.
    for (const NodeEntry& input : node.inputs) {
      if (graph.nodes[input.node].is_variable()) continue;
      int block = plan->entry_block[input.node][input.index];
      if (--refs_of(block) == 0) pool.Release(block);
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      if (readers[n][i] == 0 && refs_of(blocks[i]) == 0) pool.Release(blocks[i]);
    }
  }

  plan->block_bytes = pool.sizes();
  plan->block_offset.resize(plan->block_bytes.size());
  size_t offset = 0;
  for (size_t b = 0; b < plan->block_bytes.size(); ++b) {
    plan->block_offset[b] = offset;
    offset += (plan->block_bytes[b] + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  }
  plan->arena_bytes = offset;
  return Status();
}

}  // namespace mxlite
