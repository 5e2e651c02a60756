/*
 * Predictor: a Model bound to input shapes, with the rules of binding.
 *
 * A predictor owns one executor (none until it is bound) and shares its
 * Model, and so the parameters, with every predictor made from it. How it
 * binds is its BindRule:
 *   - kAtOnce, MXNet's predict API (the C API, and through it JNI, iOS and
 *     wasm): binding happens at creation, to exactly the shapes given (which
 *     may also name parameters, to feed them), and the params file must
 *     provide every parameter no shape names.
 *   - kWhenShaped (the Python binding): the predictor records the shapes it
 *     is given and the "__shape__" hints of the other inputs, and binds once
 *     every required input (ListInputs) has one: at creation, at Reshape or
 *     at the first Predict, which binds to the shapes of its arrays. Shapes
 *     may only name inputs; Reshape keeps the shapes of inputs it does not
 *     name.
 * Inputs are float32 unless the caller gives a dtype (MXNet's rule); a dtype
 * for a parameter is ignored under kAtOnce (the params file's wins, as in
 * MXNet) and refused under kWhenShaped.
 *
 * A predictor is not thread-safe: front ends serialise the calls on one (the
 * C API's busy flag, the Python binding's mutex).
 */
#ifndef MXLITE_EXECUTOR_PREDICTOR_H_
#define MXLITE_EXECUTOR_PREDICTOR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor.h"
#include "model.h"

namespace mxlite {

enum class BindRule { kAtOnce, kWhenShaped };

// What a predictor is made with.
struct PredictorSpec {
  BindRule rule = BindRule::kWhenShaped;
  std::vector<OutputSelector> outputs;        // empty: the model's own
  std::map<std::string, Shape> input_shapes;  // the caller's
  std::map<std::string, int> input_dtypes;    // the caller's; other inputs are float32
  RuntimeOptions options;
};

// One input of a pass, read in place from the caller's memory.
struct InputValue {
  std::string name;
  const void* data;  // shape.Size() elements of `dtype`, aligned for that type
  int dtype;
  Shape shape;
};

// One node of the graph, described for summaries.
struct NodeSummary {
  std::string name;
  std::string op;  // "null" for a variable
  AttrMap attrs;
  std::vector<std::string> inputs;   // the entries read, by output name
  std::vector<std::string> outputs;  // every output's name, hidden ones included
  std::vector<Shape> output_shapes;  // empty where the input shapes are not all known
  bool is_input = false;
  const NDArray* param = nullptr;  // the parameter's value, for a parameter
};

// What a bound predictor holds, in bytes.
struct PredictorMemory {
  size_t arena_bytes = 0;     // planned intermediate results
  size_t unshared_bytes = 0;  // the same without sharing
  size_t param_bytes = 0;     // the parameters (shared between predictors)
  // Prepared weights the operators read (packed, transformed, folded
  // copies; shared between predictors of one model, counted in each one's
  // memory budget), float32 copies of other dtypes, and operator scratch.
  size_t prepared_bytes = 0;
  size_t float32_copy_bytes = 0;
  size_t workspace_bytes = 0;
};

class Predictor {
 public:
  // A predictor of `full` (a loaded checkpoint): selects the spec's outputs,
  // checks the parameters and the dtypes, records the input shapes and
  // binds as the rule says.
  static Status Create(std::shared_ptr<const Model> full, const PredictorSpec& spec,
                       std::unique_ptr<Predictor>* out);

  // Variables a caller may give (those the params lack), in graph order,
  // and those a pass reads.
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& required_inputs() const { return required_inputs_; }
  bool IsInput(const std::string& name) const;
  // Errors naming the model's inputs when `name` is not one of them.
  Status CheckIsInput(const std::string& name) const;
  Status CheckShapeName(const std::string& name) const;
  // The element type input `name` is bound with.
  int InputDType(const std::string& name) const;
  std::vector<std::string> output_names() const;
  // Every selectable output name of the checkpoint (Internals()).
  std::vector<std::string> internals() const;

  const std::map<std::string, Shape>& input_shapes() const { return known_shapes_; }
  bool is_bound() const { return executor_ != nullptr; }
  // The executor; null until bound.
  Executor* executor() { return executor_.get(); }
  const Executor* executor() const { return executor_.get(); }

  // kWhenShaped: rebinds for new shapes of the named inputs, the others
  // keeping theirs (or records them, until every required input has one).
  // On failure the old binding stays.
  Status Reshape(const std::map<std::string, Shape>& input_shapes);
  // MXPredReshape: a new predictor for new shapes of the named inputs,
  // sharing this one's parameters, threads and arena of intermediate
  // results (the two must not run at the same time).
  Status Reshaped(const std::map<std::string, Shape>& input_shapes,
                  std::unique_ptr<Predictor>* out) const;
  // A predictor for other outputs of the same checkpoint, sharing weights,
  // with the shapes known here.
  Status WithOutputs(const std::vector<OutputSelector>& outputs,
                     std::unique_ptr<Predictor>* out) const;

  // One forward pass on `inputs` (every required input, any shape-only
  // one), binding to their shapes if no shapes were known; the outputs are
  // handed over without copying (Executor::TakeOutputs).
  Status Predict(const std::vector<InputValue>& inputs, std::vector<NDArray>* outputs);

  Status OutputShapes(std::vector<Shape>* out) const;
  Status Memory(PredictorMemory* out) const;
  // The graph of the selected outputs, with shapes where they are known.
  std::vector<NodeSummary> Nodes() const;
  // Executor::DeviceReport of the bound executor ("" on the CPU or unbound).
  std::string DeviceReport() const {
    return executor_ ? executor_->DeviceReport() : std::string();
  }

  // Monitoring and step-by-step execution show every node of the symbol
  // file, as MXNet does, so they run on an executor without fused
  // operators: switches to one (keeping the inputs) the first time.
  Status UseUnoptimized();

 private:
  Predictor(std::shared_ptr<const Model> full, std::shared_ptr<const Model> model,
            BindRule rule, const RuntimeOptions& options,
            const std::map<std::string, int>& input_dtypes);
  Status CheckInputDTypes(const std::map<std::string, int>& given) const;
  Status SetInputShapes(const std::map<std::string, Shape>& given);
  bool CoversRequired(const std::map<std::string, Shape>& shapes) const;
  Status RequireBound(const char* what) const;
  // Makes the executor for `shapes` (every input).
  Status Bind(const std::map<std::string, Shape>& shapes);

  std::shared_ptr<const Model> full_;   // the checkpoint with its own outputs
  std::shared_ptr<const Model> model_;  // pruned to the selected outputs
  BindRule rule_;
  RuntimeOptions options_;
  std::map<std::string, int> input_dtypes_;   // given by the caller; others float32
  std::vector<std::string> input_names_;      // every variable a caller may give
  std::vector<std::string> required_inputs_;  // those a pass reads
  std::map<std::string, Shape> known_shapes_;
  std::unique_ptr<Executor> executor_;  // null until bound
};

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_PREDICTOR_H_
