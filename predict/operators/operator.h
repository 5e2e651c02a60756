/*
 * The operator interface.
 *
 * An operator is created from one graph node's attributes by its family's
 * factory (see op_list.inc). Creation parses and validates every attribute,
 * so an unknown attribute or a bad value is reported at load time, naming the
 * node, the op and the attribute. After that an operator answers three kinds
 * of question:
 *   - structure: input and output names, which inputs it mutates (those are
 *     auxiliary states, e.g. BatchNorm's moving statistics), which inputs the
 *     forward pass never reads (SoftmaxOutput's label);
 *   - inference: output shapes and dtypes from input shapes, filling in the
 *     shapes of weights that the attributes determine;
 *   - execution: Prepare once the shapes are final (choose kernels, size the
 *     scratch space), then Forward any number of times.
 * Each executor owns its own operator instances, so Prepare may keep state
 * (chosen kernels, scratch) and Forward needs no locking. Weights prepared
 * from constant inputs go through SharedPrepared, so that every executor of
 * a model shares one copy; such shared objects are immutable.
 */
#ifndef MXLITE_OPERATORS_OPERATOR_H_
#define MXLITE_OPERATORS_OPERATOR_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../base/options.h"
#include "../base/shape.h"
#include "../base/status.h"
#include "../ndarray/ndarray.h"
#include "attr_parser.h"
#include "prepared_cache.h"

namespace mxlite {

class ThreadPool;

// What Forward may use besides its inputs and outputs.
struct OpContext {
  void* workspace = nullptr;  // scratch of the size Prepare asked for
  size_t workspace_bytes = 0;
  ThreadPool* pool = nullptr;  // threads to split work over (null: run inline)
};

// Elements per task where the elementwise operators split a tensor over
// the thread pool (ParallelRanges): 64 KB of floats, enough to hide a
// task's start.
constexpr int64_t kElementwiseChunk = 16384;

// Rows of `row_length` elements a task takes where an operator splits whole
// rows over the pool: about kElementwiseChunk elements, at least one row.
inline int64_t RowsPerElementwiseTask(int64_t row_length) {
  return std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(1, row_length));
}

// Which element types an operator accepts. The registry (op_list.inc) states
// it per operator; the generated operator table prints the text. kFloat and
// kAny are implemented by Operator::InferType; kOwn operators override it.
enum class DTypeRule {
  kFloat,  // every input and output has one float type (float32/16/64, bfloat16)
  kAny,    // every input and output has one type, any of them
  kOwn,    // the operator's own rule, described by the text
};
struct DTypeSupport {
  DTypeRule rule;
  const char* text;
};
constexpr DTypeSupport kFloatTypes{DTypeRule::kFloat, "float32, float16, float64, bfloat16"};
constexpr DTypeSupport kAnyTypes{DTypeRule::kAny, "any type (all inputs and the output alike)"};
constexpr DTypeSupport OwnTypes(const char* text) { return {DTypeRule::kOwn, text}; }

// An output that may take over an input's buffer (see the memory planner).
struct InplacePair {
  int input;
  int output;
  bool identity;  // the output is the input's data unchanged (a view)
};

// A node's nested graph, as MXNet's subgraph operators (_sg_mkldnn_conv)
// carry it in the symbol file's "subgraphs": its nodes in topological order
// (op "null" for a variable), each input an (earlier node, output) pair, and
// the heads. The operator that takes it validates it (SetSubgraph).
struct SubgraphNode {
  std::string op;
  std::string name;
  AttrMap attrs;
  std::vector<std::pair<int, int>> inputs;
};
struct Subgraph {
  std::vector<SubgraphNode> nodes;
  std::vector<std::pair<int, int>> heads;
};

class Operator {
 public:
  virtual ~Operator() = default;

  // Operators built around a nested graph (MXNet's subgraph operators)
  // return true and take it, once, before any other question: their inputs
  // and outputs depend on it. The symbol loader passes a node's "subgraphs"
  // entry; for every other operator a non-empty one is an error.
  virtual bool TakesSubgraph() const { return false; }
  virtual Status SetSubgraph(const Subgraph& subgraph) {
    (void)subgraph;
    return Status::Error("internal error: this operator takes no subgraph");
  }
  // Inputs in order, as MXNet names them ("data", "weight", "bias").
  virtual std::vector<std::string> InputNames() const { return {"data"}; }
  // All outputs, hidden ones included (BatchNorm: output, mean, var).
  virtual std::vector<std::string> OutputNames() const { return {"output"}; }
  // How many leading outputs a symbol exposes.
  virtual int NumVisibleOutputs() const { return 1; }
  // Inputs the operator writes: they are auxiliary states, not arguments.
  virtual std::vector<int> MutatedInputs() const { return {}; }
  // Inputs the inference forward pass never reads (they need no value).
  virtual std::vector<int> UnreadInputs() const { return {}; }
  // (input, output) pairs that may share a buffer.
  virtual std::vector<InplacePair> InplaceOptions() const { return {}; }
  // For an operator whose output 0 holds nothing but its inputs laid end to
  // end (Concat along a dim with only unit dims before it): true, with each
  // input's byte offset in that output. The memory planner may then place
  // the inputs there (see memory_plan.h), so their producers write the
  // output directly; Forward must still check, input by input, whether the
  // data is already in place, since the planner need not have placed it.
  virtual bool InputsLaidEndToEnd(const std::vector<Shape>& in, const Shape& out,
                                  size_t element_bytes, std::vector<size_t>* offsets) const {
    (void)in;
    (void)out;
    (void)element_bytes;
    (void)offsets;
    return false;
  }

  // True when index b along axis 0 of every output depends only on index b
  // along axis 0 of the inputs that carry the batch (and on the others, such
  // as weights, whole), for inputs of these one-image shapes (axis 0 of
  // size 1 where the batch was). The executor may then run a batch one
  // image at a time (executor.h, "Splitting a batch"). The default, false,
  // keeps the batch whole: an operator must opt in.
  virtual bool ComputesImagesApart(const std::vector<Shape>& image_in) const {
    (void)image_in;
    return false;
  }

  // Completes the shapes it can: outputs from inputs, and inputs (weights)
  // that the attributes determine. Unknown shapes are Shape() or carry -1
  // dims; a contradiction is an error naming the input.
  virtual Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const = 0;
  // Default: the registry's rule (kFloat or kAny): all inputs and outputs
  // share one dtype, known from any of them.
  virtual Status InferType(std::vector<int>* in, std::vector<int>* out) const;

  // Called by the executor with the final dtypes (MXNet's types, which the
  // executor converts to and from float32 around the operator). Operators
  // whose arithmetic depends on the type override it: MXNet casts a scalar
  // attribute to the data type before using it.
  virtual void SetDTypes(const std::vector<int>& in, const std::vector<int>& out) {
    (void)in;
    (void)out;
  }

  // Called once the shapes are final and the weights are in place.
  virtual Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                         size_t* workspace_bytes) {
    (void)in;
    (void)out;
    *workspace_bytes = 0;
    return Status();
  }
  virtual Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                         const std::vector<NDArray>& out) = 0;
  // Which kernel Prepare chose, for profiles and reports ("" if only one).
  virtual const char* KernelName() const { return ""; }
  // Forward only moves input 0's bytes to output 0 (views: Reshape,
  // expand_dims, _copy, ...): it runs on the arrays in their own dtype, not
  // on float32 copies, so int64 and float64 values pass through exactly.
  virtual bool MovesBytesOnly() const { return false; }
  // The memory held, once prepared, by what Prepare derived from the
  // weights (packed, transformed, BatchNorm-folded copies), whether made
  // here or shared through the model's cache: part of the predictor's
  // memory budget.
  virtual size_t PreparedBytes() const { return 0; }

  // Set by CreateOperator from the registry.
  void set_dtype_rule(DTypeRule rule) { dtype_rule_ = rule; }
  DTypeRule dtype_rule() const { return dtype_rule_; }

  // Which inputs keep the value they have at Prepare until the next Prepare:
  // the executor marks the parameters from the params file; an input the
  // graph computes (BERT's query/key/value weights, concatenated from three
  // parameters on every run) is not constant. Prepare may derive state from
  // the values of constant inputs only (packed weights). Never set (the
  // imperative API, which prepares on each call's arrays): all constant.
  void set_constant_inputs(std::vector<bool> constant) { constant_inputs_ = std::move(constant); }
  bool input_is_constant(int i) const {
    return constant_inputs_.empty() ||
           (i >= 0 && i < static_cast<int>(constant_inputs_.size()) && constant_inputs_[i]);
  }

  // The options of the executor running this operator (set before Prepare;
  // defaults until then), for operators whose choice of kernel they switch.
  void set_runtime_options(const RuntimeOptions* options) { runtime_options_ = options; }
  const RuntimeOptions& runtime_options() const;
  // The executor's thread pool (set before Prepare; null: none), for
  // operators that time their kernels while preparing (conv_tuning.h).
  void set_thread_pool(ThreadPool* pool) { thread_pool_ = pool; }
  ThreadPool* thread_pool() const { return thread_pool_; }

  // Set by the executor before Prepare: its model's cache of prepared
  // weights (prepared_cache.h) and, per input, the identity of its constant
  // value (the model's parameter array; null where the input is not
  // constant). Never set (the imperative API): nothing is shared.
  void set_prepared_cache(PreparedCache* cache, std::vector<const void*> input_identities) {
    prepared_cache_ = cache;
    input_identities_ = std::move(input_identities);
  }
  // The identity the executor gave input `i` (null: not constant, or none
  // given).
  const void* input_identity(int i) const {
    return i >= 0 && i < static_cast<int>(input_identities_.size()) ? input_identities_[i]
                                                                    : nullptr;
  }
  // What `make` prepares from the inputs listed in `from`, described by
  // `form` (everything else it depends on: algorithm, geometry, fused
  // attributes), shared with every executor of the model that asks for the
  // same form of the same inputs. Made afresh, and not shared, when one of
  // those inputs is not constant or no cache is set.
  template <typename T, typename Make>
  Status SharedPrepared(const std::vector<int>& from, const std::string& form, Make make,
                        std::shared_ptr<const T>* out) const {
    std::string key;
    for (int i : from) {
      const void* identity = input_identity(i);
      if (!prepared_cache_ || !identity) {
        std::shared_ptr<const T> made;
        MXL_RETURN_IF_ERROR(make(&made));
        *out = std::move(made);
        return Status();
      }
      key += StrCat(reinterpret_cast<uintptr_t>(identity), ",");
    }
    return prepared_cache_->FindOrMake<T>(key + form, make, out);
  }

 private:
  DTypeRule dtype_rule_ = DTypeRule::kFloat;
  std::vector<bool> constant_inputs_;
  const RuntimeOptions* runtime_options_ = nullptr;
  ThreadPool* thread_pool_ = nullptr;
  PreparedCache* prepared_cache_ = nullptr;
  std::vector<const void*> input_identities_;
};

// Who names an operator. Names from outside (a symbol file, an imperative
// call) reach the public operators only; the graph optimiser's own
// operators (MXL_INTERNAL_OPERATOR in op_list.inc: _FusedConvolution,
// _FusedBatchNorm) are made by mxlite alone, so a file naming one is refused
// as MXNet refuses an unknown operator.
enum class OpSource {
  kUser,      // symbol files, imperative calls
  kInternal,  // the graph optimiser, and executors running its graphs
};

// Creates the operator for a node. `op_name` may be an alias; an unknown
// name (for kUser, an internal one too) or a bad attribute is an error
// naming the node.
Status CreateOperator(const std::string& op_name, const std::string& node_name,
                      const AttrMap& attrs, std::unique_ptr<Operator>* out,
                      OpSource source = OpSource::kUser);

// The canonical name of a public operator or alias, or "" when unknown.
std::string CanonicalOpName(const std::string& op_name);

// One registered operator, for the generated operator table.
struct OperatorDoc {
  std::string name;
  std::vector<std::string> aliases;
  std::vector<AttrDoc> attrs;  // as its factory reads them, in that order
  std::string dtypes;
  std::string error;  // an internal error of the factory (a registry defect)
};
// Every registered operator, documented by running its factory on no
// attributes with a documentation sink attached (see AttrParser).
std::vector<OperatorDoc> DescribeOperators();

// Makes the listed inputs and every output share one dtype, known from any
// of them; `floats_only` restricts it to the float types. Names the slots
// that disagree.
Status UnifyDTypes(const Operator& op, const std::vector<int>& inputs, bool floats_only,
                   std::vector<int>* in, std::vector<int>* out);

// "arg0", "arg1", ... ("output0", ...): the names MXNet gives the inputs of
// variadic operators and the outputs of multi-output ones.
std::vector<std::string> NumberedNames(const char* prefix, int count);

// Merges what `*shape` and the listed inputs know into one shape, assigns
// it to those inputs and leaves it in *shape; names an input that differs.
Status UnifyShapes(const Operator& op, const std::vector<int>& inputs, std::vector<Shape>* in,
                   Shape* shape);

// Shape inference helper: the output has the input's shape (both ways).
Status SameShapeInference(const Operator& op, std::vector<Shape>* in, std::vector<Shape>* out);

// Helpers for shape inference code.
// Merges `want` into (*shapes)[index]; on conflict names the input/output.
Status AssignShape(std::vector<Shape>* shapes, int index, const Shape& want, const char* what,
                   const std::vector<std::string>& names);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_OPERATOR_H_
