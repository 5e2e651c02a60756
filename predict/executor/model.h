/*
 * Model: a loaded checkpoint, and the rules every front end applies to it.
 *
 * A Model is the graph (pruned to its outputs) with the parameters the
 * params file gave it, shared read-only by every predictor and executor made
 * from it. This file holds what the C API, the Python binding and through
 * the C API the mobile wrappers all decide the same way:
 *   - loading (LoadModel) and the checks of a params file (CheckParameters);
 *   - which variables a caller gives, and which of them a pass reads
 *     (ListInputs): the others, such as labels, only lend their shapes;
 *   - which outputs a caller may select (Internals) and how a selection by
 *     name, by position or by MXNet's partial-output key resolves
 *     (ResolveOutput, SelectModelOutputs).
 * Binding a model to input shapes is predictor.h's.
 */
#ifndef MXLITE_EXECUTOR_MODEL_H_
#define MXLITE_EXECUTOR_MODEL_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../graph/fuse.h"
#include "../graph/graph.h"
#include "../ndarray/ndarray.h"
#include "../operators/prepared_cache.h"
#include "memory_plan.h"

namespace mxlite {

// A loaded model: the graph (pruned to its outputs) and its parameters in
// their stored dtypes, shared by every executor made from it.
struct Model {
  Graph graph;
  std::map<std::string, NDArray> params;
  std::vector<std::string> file_names;  // every name in the params file, as written
  // Weights prepared from the parameters, shared by every executor of the
  // model (and of copies of it, which keep the same parameter arrays).
  std::shared_ptr<PreparedCache> prepared = std::make_shared<PreparedCache>();
};

// Builds a Model the way every front end does: parses the symbol JSON
// (upgrading legacy files), makes the internal outputs named `output_keys`
// the outputs (MXPredCreatePartialOut's rule, OutputSelector::PredictKey;
// empty keeps the symbol's heads), prunes the graph to its outputs and loads
// the parameters it uses from the params file bytes. Parameter names may
// carry MXNet's "arg:" and "aux:" prefixes or none (Gluon save_parameters);
// entries the graph does not use are ignored; each keeps the dtype it was
// stored with.
Status LoadModel(const char* symbol_json, size_t symbol_json_size, const void* param_bytes,
                 size_t param_size, const std::vector<std::string>& output_keys,
                 std::shared_ptr<Model>* out);

// The checks every front end makes of an input shape it is given: at least
// one dimension, each positive (MXNet's predict API refuses zero dimensions).
Status CheckInputShape(const std::string& name, const Shape& shape);

// The variables of `model` that hold learned parameters, in graph order:
// those an operator reads at a weight, bias, gamma, beta, moving_mean,
// moving_var or (RNN) parameters slot (the arguments MXNet creates and
// initialises for a layer), as opposed to data inputs and labels.
std::vector<std::string> ParameterNames(const Model& model);

// Checks that the params file gave the model its parameters: each must be in
// the file or among `inputs` (the names a caller gives values for). When the
// file provides none of them, the error says what it holds (a Gluon
// save_parameters() file, or another model's); lists of names are cut to a
// few and a count.
Status CheckParameters(const Model& model, const std::vector<std::string>& inputs);

// 'a', 'b', 'c' and 5 more: at most `limit` names of `names`, quoted.
std::string QuotedNames(const std::vector<std::string>& names, size_t limit = 5);

// The variables a caller supplies: those the params file does not. Most are
// read by an operator (or are graph outputs themselves): those are required.
// The others only lend their shape (a label, broadcast_like's rhs) and may
// be given, or left to shape inference.
struct InputList {
  std::vector<std::string> names;     // graph order
  std::vector<std::string> required;  // the read ones, graph order
};
InputList ListInputs(const Model& model);

// The internal outputs a caller may select: every variable and every visible
// operator output, in graph order, as MXNet's get_internals() lists them.
std::vector<std::pair<std::string, NodeEntry>> Internals(const Graph& graph);

// One output a caller selects.
struct OutputSelector {
  enum Kind {
    kName,        // as Internals() lists it, or MXNet's key "conv0" for "conv0_output"
    kPosition,    // its position in Internals(), as MXNet's sym.get_internals()[i]
    kPredictKey,  // MXPredCreatePartialOut's key: "conv0" selects "conv0_output" only
  };
  Kind kind = kName;
  std::string name;   // kName, kPredictKey
  int64_t index = 0;  // kPosition

  static OutputSelector Name(std::string name) { return {kName, std::move(name), 0}; }
  static OutputSelector Position(int64_t index) { return {kPosition, std::string(), index}; }
  static OutputSelector PredictKey(std::string key) { return {kPredictKey, std::move(key), 0}; }
};

// The entry a selector names among `internals` (Internals(graph)). A name
// that several outputs share (GluonCV's video models reuse one relu name for
// several nodes) is refused, as MXNet's sym.get_internals()[name] refuses it:
// the message says how to select one instead.
Status ResolveOutput(const Graph& graph,
                     const std::vector<std::pair<std::string, NodeEntry>>& internals,
                     const OutputSelector& selector, NodeEntry* out);

// Makes the selected outputs the graph's outputs (without pruning).
Status SelectOutputs(const std::vector<OutputSelector>& selectors, Graph* graph);

// A model computing the selected outputs, pruned to what they need.
// Parameters are shared with `full`.
Status SelectModelOutputs(const Model& full, const std::vector<OutputSelector>& selectors,
                          std::shared_ptr<const Model>* out);

// The names mx.model.load_checkpoint's Symbol lists, from the graph as
// written (no pruning, no fusion): MXNet's list_arguments() and
// list_auxiliary_states() (variables some operator mutates, such as
// BatchNorm's moving statistics, are auxiliary states), list_outputs() and
// get_internals().list_outputs().
struct SymbolNames {
  std::vector<std::string> arguments;
  std::vector<std::string> aux_states;
  std::vector<std::string> outputs;
  std::vector<std::string> internals;
};
Status ListSymbolNames(const std::string& symbol_json, SymbolNames* out);

// Loads symbol JSON, prunes it to its outputs as a predictor does, and
// reports. With `fuse`, the graph is first rewritten by OptimizeGraph for
// `target` (a CPU or a GPU executor's graph) and Concat inputs are laid in
// place, as an executor does by default; without, it is the graph MXNet
// would plan, planned without parts. `source` names the text in error
// messages.
Status ComputeMemoryReportFromJson(const std::string& symbol_json, const std::string& source,
                                   const std::map<std::string, Shape>& input_shapes, bool fuse,
                                   FusionTarget target, MemoryReport* report);

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_MODEL_H_
