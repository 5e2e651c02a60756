/*
 * Executor: one bound forward pass of a model for fixed input shapes.
 *
 * Binding infers every shape and dtype, checks the parameters against them,
 * creates this executor's own operator instances, plans the intermediate
 * memory into one arena (memory_plan.h) and prepares each operator. Forward
 * then runs the operators in graph order with no allocation.
 *
 * Variables are of three kinds: inputs (named in the input shapes; each
 * executor owns them), parameters (shared, read-only, between executors of
 * one model: MXPredReshape and MXPredCreateMultiThread rely on that) and
 * unread arguments such as labels (zero-filled, never read).
 */
#ifndef MXLITE_EXECUTOR_EXECUTOR_H_
#define MXLITE_EXECUTOR_EXECUTOR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../graph/graph.h"
#include "../graph/infer.h"
#include "memory_plan.h"

namespace mxlite {

// A loaded model: the graph (pruned to its outputs) and its parameters
// converted to the graph's dtypes, shared by every executor made from it.
struct Model {
  Graph graph;
  std::map<std::string, NDArray> params;
};

// Called with (output name, array, user data) after each operator.
using MonitorFn = void (*)(const char*, void*, void*);

class Executor {
 public:
  static Status Create(std::shared_ptr<const Model> model,
                       const std::map<std::string, Shape>& input_shapes,
                       const std::map<std::string, int>& input_dtypes,
                       std::unique_ptr<Executor>* out);

  // A new executor for other input shapes, sharing this one's parameters.
  Status Reshape(const std::map<std::string, Shape>& input_shapes,
                 std::unique_ptr<Executor>* out) const;

  // Copies `count` elements (in the argument's dtype) into argument `name`.
  Status SetInput(const std::string& name, const void* data, size_t count);
  Status Forward();
  // Runs graph node `step` (variables count as steps).
  Status PartialForward(int step, int* step_left);

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const NDArray& output(int index) const { return outputs_[index]; }
  std::string output_name(int index) const;
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::map<std::string, Shape>& input_shapes() const { return input_shapes_; }
  const MemoryPlan& memory_plan() const { return plan_; }

  void SetMonitor(MonitorFn callback, void* user, bool monitor_all) {
    monitor_ = callback;
    monitor_user_ = user;
    monitor_all_ = monitor_all;
  }

 private:
  Executor() = default;
  Status Bind(const std::map<std::string, int>& input_dtypes);
  Status BindVariables(const EntryShapes& shapes, const EntryDTypes& dtypes);
  Status PrepareOperators();
  Status RunNode(int n);

  std::shared_ptr<const Model> model_;
  std::map<std::string, Shape> input_shapes_;
  std::map<std::string, int> input_dtypes_;
  std::vector<std::string> input_names_;
  std::vector<std::unique_ptr<Operator>> ops_;       // per node; null for variables
  std::vector<std::vector<NDArray>> entries_;        // per node, per output
  std::vector<std::vector<NDArray>> node_inputs_;    // per node, gathered once
  std::vector<NDArray> outputs_;
  std::shared_ptr<Storage> arena_;
  std::shared_ptr<Storage> workspace_;
  size_t workspace_bytes_ = 0;
  MemoryPlan plan_;
  bool prepared_ = false;
  MonitorFn monitor_ = nullptr;
  void* monitor_user_ = nullptr;
  bool monitor_all_ = false;
};

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_EXECUTOR_H_
