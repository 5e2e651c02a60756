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
 *
 * Splitting a batch. Run layer by layer, a batch of N images makes every
 * intermediate result N images large: results stop fitting the caches
 * between layers, Concat inputs cannot be written in place (in NCHW they
 * interleave image by image), and threads meet at a barrier after every
 * layer. So when each operator computes the images apart
 * (Operator::ComputesImagesApart) and every intermediate result carries the
 * batch along axis 0 (checked by inferring the shapes for N images and for
 * one), the executor binds workers for one image and passes the batch
 * through them image by image: with T threads and enough images, T workers
 * of one thread each, every worker on images of its own in its own arena,
 * meeting only when the batch is done; otherwise one worker with all the
 * threads. Inputs and outputs keep the batch's shapes: workers read their
 * input images in place and their outputs are copied into the batch's.
 * split_batch=auto (the default) splits only where the weights, then read
 * once per image, are smaller than one image's intermediate results (see
 * SplitBatch); split_batch=0, graph optimisation off (monitoring,
 * step-by-step execution) and GPUs keep the batch whole.
 */
#ifndef MXLITE_EXECUTOR_EXECUTOR_H_
#define MXLITE_EXECUTOR_EXECUTOR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../base/options.h"
#include "../graph/graph.h"
#include "../graph/infer.h"
#include "../kernels/thread_pool.h"
#include "device.h"
#include "memory_plan.h"
#include "model.h"

namespace mxlite {

namespace cuda_runner_cc {
class CudaRunner;
}  // namespace cuda_runner_cc

// Called with (output name, array, user data) after each operator.
using MonitorFn = void (*)(const char*, void*, void*);

class Executor {
 public:
  // Binds `model` to the input shapes with `options` (threads, graph
  // optimisation, algorithm switches, profiling, the memory budget).
  static Status Create(std::shared_ptr<const Model> model,
                       const std::map<std::string, Shape>& input_shapes,
                       const std::map<std::string, int>& input_dtypes,
                       const RuntimeOptions& options, std::unique_ptr<Executor>* out);

  // A new executor for other input shapes, sharing this one's parameters
  // and, when it is large enough, its arena of intermediate results (as
  // MXNet's shared executor does): the two must not run at the same time.
  Status Reshape(const std::map<std::string, Shape>& input_shapes,
                 std::unique_ptr<Executor>* out) const;

  // The same executor without graph optimisation (fused operators), with
  // the current inputs: what monitoring and step-by-step execution need to
  // see every node of the symbol file, as MXNet shows them.
  Status Unoptimized(std::unique_ptr<Executor>* out) const;
  bool optimized() const { return options_.graph_optimization; }

  // Where the nodes run when a device runs them (DeviceRunner::Describe:
  // "GPU 0 (NVIDIA H200): 52 of 54 operators on the GPU; ..."), else "".
  std::string DeviceReport() const { return device_ ? device_->Describe() : std::string(); }

  // Copies `count` elements (in the argument's dtype) into argument `name`.
  Status SetInput(const std::string& name, const void* data, size_t count);
  Status Forward();
  // Runs graph node `step` (variables count as steps).
  Status PartialForward(int step, int* step_left);

  // An input read in place from the caller's memory (see ForwardWithInputs).
  struct ExternalInput {
    std::string name;
    const void* data;  // `count` elements of `dtype`, aligned for that type
    int dtype;
    size_t count;
  };
  // Forward, reading the named inputs straight from the caller's buffers
  // instead of copying them in. The buffers must stay unchanged until the
  // call returns and are not read after it: later passes read whatever
  // SetInput last wrote. Inputs not named keep those values too.
  Status ForwardWithInputs(const std::vector<ExternalInput>& inputs);
  // Hands out the outputs of the last pass without copying them: each
  // output's memory moves to the caller's array, and this executor takes
  // fresh memory for its next pass (blocks holding outputs live outside the
  // arena for this). An output that is a variable comes back as a copy.
  Status TakeOutputs(std::vector<NDArray>* out);

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const NDArray& output(int index) const { return outputs_[index]; }
  std::string output_name(int index) const;
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::map<std::string, Shape>& input_shapes() const { return input_shapes_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  // Bytes counted in the memory budget besides the plan's: the operators'
  // prepared weights, float32 copies of other dtypes, operator scratch.
  size_t prepared_bytes() const { return prepared_bytes_; }
  size_t float32_copy_bytes() const { return copy_bytes_; }
  size_t workspace_bytes() const { return workspace_bytes_; }

  void SetMonitor(MonitorFn callback, void* user, bool monitor_all) {
    monitor_ = callback;
    monitor_user_ = user;
    monitor_all_ = monitor_all;
  }

 private:
  // The CUDA backend mirrors the bound plan and runs host fallbacks
  // through RunNode (executor/device.h).
  friend class cuda_runner_cc::CudaRunner;
  Executor() = default;
  // Create, with the thread pool to use (null: from the options) and an
  // arena to reuse when it is large enough (null: a new one).
  static Status Make(std::shared_ptr<const Model> model,
                     const std::map<std::string, Shape>& input_shapes,
                     const std::map<std::string, int>& input_dtypes,
                     const RuntimeOptions& options, std::shared_ptr<ThreadPool> pool,
                     std::shared_ptr<Storage> reusable_arena, std::unique_ptr<Executor>* out);

 public:
  ~Executor();

 private:
  // Constant folding (graph optimisation on, CPU): see executor.cc.
  Status FoldConstants();
  Status Bind(const std::map<std::string, int>& input_dtypes);
  // Checks the variables of `graph` against the parameters and inputs and,
  // with `allocate`, gives each its array.
  Status BindVariables(const Graph& graph, const EntryShapes& shapes, const EntryDTypes& dtypes,
                       bool allocate);
  Status PrepareOperators();
  // a + b, saturating: a sum of sizes that overflows fails any budget.
  static size_t AddBytes(size_t a, size_t b);
  // An error naming the need and the budget when `bytes` exceeds it.
  Status CheckMemoryBudget(size_t bytes, const char* what) const;
  // What the budget covers before scratch: activations, float32 copies and
  // prepared weights.
  size_t BudgetedBytes() const {
    return AddBytes(AddBytes(activation_bytes_, copy_bytes_), prepared_bytes_);
  }
  Status RunNode(int n);

  // Splitting a batch (above): binds the workers when the graph allows it
  // for the batch's shapes and dtypes, else leaves image_workers_ empty.
  Status SplitBatch(const EntryShapes& shapes, const EntryDTypes& dtypes,
                    const std::map<std::string, Shape>& param_shapes);
  // One pass of the batch through the workers; `sources` holds each input's
  // batch (input_names_ order).
  Status ForwardImages(const std::vector<const char*>& sources);
  // Each input's data, in input_names_ order.
  std::vector<const char*> InputSources() const;
  // An error naming the problem when `input` is not an input of this
  // executor or has the wrong dtype or element count.
  Status CheckExternalInput(const ExternalInput& input) const;

  // Operators compute in float32. A node that reads or writes an array of
  // another dtype (float16, int32, ...) runs on float32 copies: its inputs
  // are converted before the operator runs and its outputs converted back
  // (rounded to their dtype, as MXNet would store them) after it.
  struct Float32Copies {
    std::vector<NDArray> inputs;   // what the operator reads
    std::vector<NDArray> outputs;  // what it writes
    // Per input: a parameter's copy, converted once and shared through the
    // model's cache (held in `shared`), not converted on every run.
    std::vector<bool> converted_once;
    std::vector<std::shared_ptr<const NDArray>> shared;
    size_t bytes = 0;  // what the copies hold, shared ones included (budgeted)
  };
  // The model's array for input `i` of node `n` when that input is a
  // parameter that keeps its value (not also a caller's input), else null.
  const NDArray* ConstantParameter(int n, int i) const;
  Status MakeFloat32Copies(int n);
  void CopyInputsToFloat32(int n);
  void CopyOutputsFromFloat32(int n);

  // The model bound: the one given, or where constants were folded
  // (FoldConstants) a copy whose parameters also hold the folded values.
  std::shared_ptr<const Model> model_;
  // The folded values, shared through the model's PreparedCache.
  std::shared_ptr<const void> folded_constants_;
  RuntimeOptions options_;
  // A node's first run is kept apart: it pays once for what later passes
  // find ready (pages of the arena and of thread-local buffers faulted in,
  // workers woken, caches filled), which in a profile of a few passes
  // would otherwise show as the node's own time.
  struct OpProfile {
    double seconds = 0, first_seconds = 0;  // later runs; first runs
    int64_t calls = 0, first_calls = 0;
  };
  // Time per operator type when options_.profile is 1 (per node, in
  // execution order, when 2), printed on destruction.
  std::unique_ptr<std::map<std::string, OpProfile>> profile_;
  // Whether each node has run (CPU), and its runs after the first, for the
  // profile's pass count.
  std::vector<bool> profile_ran_;
  std::vector<int64_t> profile_later_runs_;
  // Adds one run of node n (`kernel`: the form that ran, or empty) to it;
  // first_run: the node's first (the CPU's own passes say; the CUDA runner
  // times no first pass).
  void AddToProfile(int n, const std::string& kernel, double seconds, bool first_run);
  Graph graph_;  // the model's graph, optimised unless options_.graph_optimization is off
  std::map<std::string, Shape> input_shapes_;
  std::map<std::string, int> input_dtypes_;
  std::vector<std::string> input_names_;
  std::vector<std::unique_ptr<Operator>> ops_;       // per node; null for variables
  std::vector<std::vector<NDArray>> entries_;        // per node, per output
  std::vector<std::vector<NDArray>> node_inputs_;    // per node, gathered once
  std::vector<std::unique_ptr<Float32Copies>> float32_copies_;  // per node; null: all float32
  std::vector<NDArray> outputs_;
  std::shared_ptr<Storage> arena_;
  std::shared_ptr<Storage> reusable_arena_;  // offered by Reshape, used by Bind
  // Per planned block: its own storage when it holds a graph output (so
  // TakeOutputs can hand it over), else null (a slice of arena_).
  std::vector<std::shared_ptr<Storage>> block_storage_;
  std::shared_ptr<Storage> workspace_;
  std::shared_ptr<ThreadPool> pool_;  // shared with executors made by Reshape
  size_t workspace_bytes_ = 0;
  size_t activation_bytes_ = 0;  // inputs, arena and output blocks (budgeted)
  size_t copy_bytes_ = 0;        // every node's Float32Copies (budgeted)
  size_t prepared_bytes_ = 0;    // the operators' PreparedBytes (budgeted)
  MemoryPlan plan_;
  // Splitting a batch: executors for one image each, and the batch size;
  // empty when the batch runs whole.
  std::vector<std::unique_ptr<Executor>> image_workers_;
  int64_t batch_images_ = 0;
  bool prepared_ = false;
  MonitorFn monitor_ = nullptr;
  void* monitor_user_ = nullptr;
  bool monitor_all_ = false;
  // Runs the nodes on a GPU when options_.device_id >= 0 (null: the CPU).
  // Declared last, so it goes before the arrays it mirrors.
  std::unique_ptr<DeviceRunner> device_;
};

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_EXECUTOR_H_
