/*
 * mxlite._core: the Python binding of the runtime, built with nanobind.
 *
 * The extension links the same compiled amalgamation as libmxlite.so and
 * talks to the C++ core directly, which lets it avoid the copies the C API
 * implies:
 *   - inputs that are C-contiguous arrays of the input's dtype are read in
 *     place for the pass (Executor::ForwardWithInputs); the Python layer
 *     converts anything else once, beforehand;
 *   - outputs are handed over without copying (Executor::TakeOutputs): each
 *     numpy array owns the core's NDArray through a capsule, so it stays
 *     valid after later passes and after the predictor is gone;
 *   - NDArray files load into arrays that numpy adopts as they are.
 * The GIL is released while a predictor binds or runs; a mutex per
 * predictor serialises threads that share one. Every failed Status becomes
 * mxlite.MXLiteError (a RuntimeError) carrying the core's message.
 */
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "c_api/environment.h"
#include "executor/executor.h"
#include "executor/memory_plan.h"
#include "graph/infer.h"
#include "imperative/imperative.h"
#include "operators/operator.h"
#include "ndarray/ndarray_io.h"

namespace nb = nanobind;

namespace mxlite {
namespace python_core {

// mxlite.errors.MXLiteError, looked up once when the module loads.
PyObject* g_error_type = nullptr;

[[noreturn]] void RaiseError(const std::string& message) {
  PyErr_SetString(g_error_type, message.c_str());
  throw nb::python_error();
}

// Turns a failed Status into mxlite.MXLiteError. Needs the GIL.
void Check(const Status& status) {
  if (!status.ok()) RaiseError(status.message());
}

// --- dtypes: MXNet's type flags against DLPack's descriptions -------------

nb::dlpack::dtype DLPackDType(int flag) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (flag) {
    case kFloat64: return make(dtype_code::Float, 64);
    case kFloat16: return make(dtype_code::Float, 16);
    case kUint8: return make(dtype_code::UInt, 8);
    case kInt32: return make(dtype_code::Int, 32);
    case kInt8: return make(dtype_code::Int, 8);
    case kInt64: return make(dtype_code::Int, 64);
    case kBool: return make(dtype_code::Bool, 8);
    case kInt16: return make(dtype_code::Int, 16);
    case kUint16: return make(dtype_code::UInt, 16);
    case kUint32: return make(dtype_code::UInt, 32);
    case kUint64: return make(dtype_code::UInt, 64);
    case kBfloat16: return make(dtype_code::Bfloat, 16);
    default: return make(dtype_code::Float, 32);
  }
}

// The MXNet flag of an array's element type, or kUnknownDType.
int FlagOf(nb::dlpack::dtype dtype) {
  for (int flag = 0; flag < kNumDTypes; ++flag) {
    if (DLPackDType(flag) == dtype) return flag;
  }
  return kUnknownDType;
}

// --- arrays crossing the boundary -----------------------------------------

using InputArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// A numpy array adopting `array`'s memory: the capsule owns a reference to
// the NDArray (and so to its storage) for as long as numpy needs it.
nb::object ToNumpy(const NDArray& array) {
  NDArray* owned = new NDArray(array);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<NDArray*>(p); });
  std::vector<size_t> shape(array.shape().dims().begin(), array.shape().dims().end());
  nb::ndarray<nb::numpy> result(array.data(), shape.size(), shape.data(), owner, nullptr,
                                DLPackDType(array.dtype()));
  return result.cast();
}

std::string DescribeDType(nb::dlpack::dtype dtype) {
  const int flag = FlagOf(dtype);
  if (flag != kUnknownDType) return DTypeName(flag);
  return StrCat("an unsupported element type (DLPack code ", int(dtype.code), ", ",
                int(dtype.bits), " bits)");
}

// A Python sequence of non-negative integers as a complete Shape.
Shape ShapeFromPython(const std::string& name, nb::handle value) {
  std::vector<int64_t> dims;
  if (!PySequence_Check(value.ptr()) || nb::isinstance<nb::str>(value)) {
    RaiseError(StrCat("the shape of '", name, "' must be a sequence of integers, not ",
                      nb::type_name(value.type()).c_str()));
  }
  for (nb::handle item : value) {
    int64_t dim = 0;
    if (!nb::try_cast<int64_t>(item, dim, false) || dim < 0) {
      RaiseError(StrCat("the shape of '", name, "' must hold non-negative integers, got ",
                        nb::str(nb::repr(value)).c_str()));
    }
    dims.push_back(dim);
  }
  if (dims.empty()) RaiseError(StrCat("the shape of '", name, "' has no dimensions"));
  Shape shape(std::move(dims));
  Check(CheckInputShape(name, shape));  // zero dimensions too, as the C API
  return shape;
}

nb::tuple ShapeToPython(const Shape& shape) {
  nb::list dims;
  for (int64_t d : shape.dims()) dims.append(d);
  return nb::tuple(dims);
}

// At most eight names, then a count: a model may have hundreds.
std::string NamesList(const std::vector<std::string>& names) { return QuotedNames(names, 8); }

// --- the model and its inputs ---------------------------------------------

// The variables a caller supplies: those the params file does not. Most are
// read by an operator (or are graph outputs themselves): those are required.
// The others only lend their shape (a label, broadcast_like's rhs) and may
// be given, or left to shape inference.
struct InputList {
  std::vector<std::string> names;     // graph order
  std::vector<std::string> required;  // the read ones, graph order
};

InputList ListInputs(const Model& model) {
  const Graph& graph = model.graph;
  std::vector<bool> read(graph.nodes.size(), false);
  for (const Node& node : graph.nodes) {
    if (node.is_variable()) continue;
    std::vector<int> unread = node.op->UnreadInputs();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      bool skipped = false;
      for (int slot : unread) skipped |= slot == static_cast<int>(i);
      if (!skipped) read[node.inputs[i].node] = true;
    }
  }
  for (const NodeEntry& output : graph.outputs) read[output.node] = true;
  InputList inputs;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (!node.is_variable() || model.params.count(node.name)) continue;
    inputs.names.push_back(node.name);
    if (read[n]) inputs.required.push_back(node.name);
  }
  return inputs;
}

// The internal outputs a user may select: every variable and every visible
// operator output, in graph order, as MXNet's get_internals() lists them.
std::vector<std::pair<std::string, NodeEntry>> Internals(const Graph& graph) {
  std::vector<std::pair<std::string, NodeEntry>> internals;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const int visible = node.is_variable() ? 1 : node.op->NumVisibleOutputs();
    for (int i = 0; i < visible; ++i) {
      internals.emplace_back(node.OutputName(i), NodeEntry{static_cast<int>(n), i});
    }
  }
  return internals;
}

// One output a caller selects: by name (exact, as Internals() lists it, or
// MXNet's partial-output key "conv0" for "conv0_output"), or by its position
// in Internals(), as MXNet's sym.get_internals()[i].
struct OutputSelector {
  std::string name;
  bool by_position = false;
  int64_t index = 0;
};

// The selectors in a Python sequence of str and int (bool is refused).
std::vector<OutputSelector> ReadOutputSelectors(nb::handle outputs) {
  std::vector<OutputSelector> selectors;
  const char* usage = "outputs must be a non-empty list of output names (str) or positions in "
                      "get_internals() (int)";
  if (!PySequence_Check(outputs.ptr()) || nb::isinstance<nb::str>(outputs)) RaiseError(usage);
  for (nb::handle item : outputs) {
    OutputSelector selector;
    if (nb::isinstance<nb::str>(item)) {
      selector.name = nb::cast<std::string>(item);
    } else if (PyBool_Check(item.ptr()) || !nb::try_cast<int64_t>(item, selector.index, false)) {
      RaiseError(StrCat(usage, "; got ", nb::str(nb::repr(item)).c_str()));
    } else {
      selector.by_position = true;
    }
    selectors.push_back(selector);
  }
  if (selectors.empty()) RaiseError(usage);
  return selectors;
}

// The entry a selector names. A name that several outputs share (GluonCV's
// video models reuse one relu name for several nodes) is refused, as MXNet's
// sym.get_internals()[name] refuses it ("There are multiple outputs with
// name ..."): the message gives the positions to select by instead.
Status ResolveOutput(const Graph& graph,
                     const std::vector<std::pair<std::string, NodeEntry>>& internals,
                     const OutputSelector& selector, NodeEntry* out) {
  const int64_t count = static_cast<int64_t>(internals.size());
  if (selector.by_position) {
    MXL_CHECK(selector.index >= 0 && selector.index < count, "output position ", selector.index,
              " is outside get_internals(), which lists ", count, " outputs (0 to ", count - 1,
              ")");
    *out = internals[static_cast<size_t>(selector.index)].second;
    return Status();
  }
  // Exact names first; MXNet's partial-output key form only when none is.
  for (const std::string& wanted : {selector.name, selector.name + "_output"}) {
    std::vector<int64_t> positions;
    std::vector<NodeEntry> entries;
    for (int64_t i = 0; i < count; ++i) {
      if (internals[static_cast<size_t>(i)].first != wanted) continue;
      positions.push_back(i);
      entries.push_back(internals[static_cast<size_t>(i)].second);
    }
    if (positions.empty()) continue;
    if (positions.size() > 1) {
      std::string listed;
      for (int64_t position : positions) {
        listed += StrCat(listed.empty() ? "" : (position == positions.back() ? " or " : ", "),
                         position);
      }
      return Status::Error(StrCat(
          "output '", selector.name, "' is ambiguous: ", positions.size(),
          " outputs are named '", wanted, "' (", DescribeEntries(graph, entries),
          "); select one by its position in get_internals() instead, ", listed,
          " (e.g. with_outputs(", positions.back(), "), as MXNet's sym.get_internals()[",
          positions.back(), "]), or give the nodes names of their own in the symbol JSON"));
    }
    *out = entries[0];
    return Status();
  }
  return Status::Error(StrCat("the graph has no output named '", selector.name,
                              "' (get_internals() lists the names)"));
}

// A model computing the selected outputs, pruned to what they need.
// Parameters are shared with `full`.
Status SelectModelOutputs(const Model& full, const std::vector<OutputSelector>& selectors,
                          std::shared_ptr<const Model>* out) {
  auto model = std::make_shared<Model>();
  model->graph = full.graph;
  model->params = full.params;
  const auto internals = Internals(full.graph);
  std::vector<NodeEntry> outputs;
  for (const OutputSelector& selector : selectors) {
    NodeEntry entry{0, 0};
    MXL_RETURN_IF_ERROR(ResolveOutput(full.graph, internals, selector, &entry));
    outputs.push_back(entry);
  }
  model->graph.outputs = outputs;
  PruneToOutputs(&model->graph);
  *out = std::move(model);
  return Status();
}

class Predictor {
 public:
  Predictor(std::shared_ptr<const Model> full, std::shared_ptr<const Model> model,
            const RuntimeOptions& options, const std::map<std::string, int>& input_dtypes)
      : full_(std::move(full)), model_(std::move(model)), options_(options) {
    InputList inputs = ListInputs(*model_);
    input_names_ = inputs.names;
    required_inputs_ = inputs.required;
    for (const auto& entry : input_dtypes) {
      if (IsInput(entry.first)) input_dtypes_.insert(entry);
    }
  }

  // Checks that the dtypes the caller gave name inputs.
  void CheckInputDTypes(const std::map<std::string, int>& given) const {
    for (const auto& entry : given) {
      if (!IsInput(entry.first)) {
        RaiseError(StrCat("input_dtypes: '", entry.first,
                          "' is not an input of this model; its inputs are ",
                          NamesList(input_names_)));
      }
    }
  }

  // The element type input `name` is bound with: the caller's choice, else
  // float32 (MXNet's predict API rule, which the executor applies too).
  int InputDType(const std::string& name) const {
    auto given = input_dtypes_.find(name);
    return given == input_dtypes_.end() ? static_cast<int>(kFloat32) : given->second;
  }

  nb::dict input_dtypes() const {
    nb::dict dtypes;
    for (const std::string& name : input_names_) dtypes[name.c_str()] = DTypeName(InputDType(name));
    return dtypes;
  }

  // Records the shapes given, and the "__shape__" hints of the other
  // inputs where they are complete; binds once every input has a shape.
  void Init(nb::dict input_shapes) {
    std::map<std::string, Shape> given = ReadShapes(input_shapes);
    for (const std::string& name : input_names_) {
      if (given.count(name)) continue;
      const Node& node = model_->graph.nodes[model_->graph.FindNode(name)];
      auto hint = node.attrs.find("__shape__");
      if (hint == node.attrs.end()) continue;
      bool ok = false;
      Shape shape = ParseShapeHint(hint->second, &ok);
      if (ok && shape.is_complete() && shape.ndim() > 0) given[name] = shape;
    }
    known_shapes_ = given;
    if (CoversRequired(given)) Bind(given);
  }

  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& required_inputs() const { return required_inputs_; }

  std::vector<std::string> output_names() const {
    std::vector<std::string> names;
    for (const NodeEntry& output : model_->graph.outputs) {
      names.push_back(model_->graph.nodes[output.node].OutputName(output.index));
    }
    return names;
  }

  nb::dict input_shapes() const {
    nb::dict shapes;
    for (const auto& entry : known_shapes_) {
      shapes[entry.first.c_str()] = ShapeToPython(entry.second);
    }
    return shapes;
  }

  bool is_bound() const { return bound_; }

  nb::list output_shapes() const {
    RequireBound("output_shapes");
    std::lock_guard<std::mutex> lock(*mutex_);
    nb::list shapes;
    for (int i = 0; i < executor_->num_outputs(); ++i) {
      shapes.append(ShapeToPython(executor_->output(i).shape()));
    }
    return shapes;
  }

  std::vector<std::string> internals() const {
    std::vector<std::string> names;
    for (const auto& internal : Internals(full_->graph)) names.push_back(internal.first);
    return names;
  }

  // Rebinds for new shapes of the named inputs; the others keep theirs.
  void Reshape(nb::dict input_shapes) {
    std::map<std::string, Shape> given = ReadShapes(input_shapes);
    std::map<std::string, Shape> shapes = known_shapes_;
    for (const auto& entry : given) shapes[entry.first] = entry.second;
    if (CoversRequired(shapes)) {
      Bind(shapes);  // on failure the old binding stays
    } else {
      known_shapes_ = shapes;  // binds at the first predict
    }
  }

  // One forward pass. `inputs` maps each required input (and any shape-only
  // one) to a C-contiguous CPU array of the input's dtype (the Python layer
  // converts).
  // Returns the outputs as numpy arrays that own their memory.
  nb::list Predict(nb::dict inputs) {
    std::vector<InputArray> arrays;  // keep the buffers alive through the pass
    std::vector<std::string> names;
    std::map<std::string, Shape> shapes;
    for (auto item : inputs) {
      std::string name;
      if (!nb::try_cast<std::string>(item.first, name, false)) {
        RaiseError("input names must be strings");
      }
      if (!IsInput(name)) {
        RaiseError(StrCat("'", name, "' is not an input of this model; its inputs are ",
                          NamesList(input_names_)));
      }
      InputArray array;
      if (!nb::try_cast<InputArray>(item.second, array, false)) {
        RaiseError(StrCat("input '", name, "' must be a C-contiguous array in CPU memory, not ",
                          nb::type_name(item.second.type()).c_str()));
      }
      if (FlagOf(array.dtype()) != InputDType(name)) {
        RaiseError(StrCat("input '", name, "' is ", DescribeDType(array.dtype()),
                          " but the model expects ", DTypeName(InputDType(name))));
      }
      std::vector<int64_t> dims(array.ndim());
      for (size_t d = 0; d < array.ndim(); ++d) dims[d] = static_cast<int64_t>(array.shape(d));
      shapes[name] = Shape(std::move(dims));
      names.push_back(name);
      arrays.push_back(array);
    }
    std::vector<std::string> missing;
    for (const std::string& name : required_inputs_) {
      if (!shapes.count(name)) missing.push_back(name);
    }
    if (!missing.empty()) {
      RaiseError(StrCat("missing input(s) ", NamesList(missing), "; the model's inputs are ",
                        NamesList(input_names_)));
    }
    if (!bound_) {
      // First use of a predictor made without shapes: bind to these.
      for (const auto& entry : shapes) {
        if (entry.second.ndim() == 0) {
          RaiseError(StrCat("input '", entry.first, "' is a 0-d array; give it a shape"));
        }
        Check(CheckInputShape(entry.first, entry.second));
      }
      Bind(shapes);
    }
    std::vector<Executor::ExternalInput> external;
    for (size_t i = 0; i < names.size(); ++i) {
      auto bound = known_shapes_.find(names[i]);
      // A shape-only input the predictor was bound without: its value is
      // never read, and its shape came from inference.
      if (bound == known_shapes_.end()) continue;
      if (shapes[names[i]] != bound->second) {
        RaiseError(StrCat("input '", names[i], "' has shape ", shapes[names[i]].ToString(),
                          " but the predictor is bound to ", bound->second.ToString(),
                          "; call reshape(", names[i], "=", shapes[names[i]].ToString(),
                          ") first"));
      }
      external.push_back(Executor::ExternalInput{names[i], arrays[i].data(),
                                                 InputDType(names[i]), arrays[i].size()});
    }
    std::vector<NDArray> outputs;
    Status status;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*mutex_);
      status = executor_->ForwardWithInputs(external);
      if (status.ok()) status = executor_->TakeOutputs(&outputs);
    }
    Check(status);
    nb::list result;
    for (const NDArray& output : outputs) result.append(ToNumpy(output));
    return result;
  }

  // A predictor for other outputs of the same checkpoint, sharing weights.
  Predictor* WithOutputs(nb::handle outputs) const {
    std::shared_ptr<const Model> model;
    Check(SelectModelOutputs(*full_, ReadOutputSelectors(outputs), &model));
    std::unique_ptr<Predictor> other(new Predictor(full_, model, options_, input_dtypes_));
    std::map<std::string, Shape> shapes;
    for (const std::string& name : other->input_names_) {
      auto known = known_shapes_.find(name);
      if (known != known_shapes_.end()) shapes[name] = known->second;
    }
    other->known_shapes_ = shapes;
    if (other->AllShapesKnown()) other->Bind(shapes);
    return other.release();
  }

  // The graph as a list of dicts, one per node, for summaries: name, op,
  // attrs, inputs (entry names), outputs (names and shapes, None where
  // unknown) and, for parameters, their shape, dtype and bytes.
  nb::list Nodes() const {
    const Graph& graph = model_->graph;
    EntryShapes shapes;
    bool have_shapes = false;
    if (AllShapesKnown()) {
      std::map<std::string, Shape> param_shapes;
      for (const auto& param : model_->params) param_shapes[param.first] = param.second.shape();
      have_shapes = InferShapes(graph, known_shapes_, param_shapes, &shapes).ok();
    }
    nb::list nodes;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = graph.nodes[n];
      nb::dict info;
      info["name"] = node.name;
      info["op"] = node.is_variable() ? std::string("null") : node.op_name;
      nb::dict attrs;
      for (const auto& attr : node.attrs) attrs[attr.first.c_str()] = attr.second;
      info["attrs"] = attrs;
      nb::list inputs;
      for (const NodeEntry& input : node.inputs) {
        inputs.append(graph.nodes[input.node].OutputName(input.index));
      }
      info["inputs"] = inputs;
      nb::list outputs, output_shapes;
      for (int i = 0; i < node.num_outputs(); ++i) {
        outputs.append(node.OutputName(i));
        if (have_shapes) {
          output_shapes.append(ShapeToPython(shapes[n][i]));
        } else {
          output_shapes.append(nb::none());
        }
      }
      info["outputs"] = outputs;
      info["output_shapes"] = output_shapes;
      auto param = model_->params.find(node.name);
      info["is_param"] = param != model_->params.end();
      info["is_input"] = IsInput(node.name);
      if (param != model_->params.end()) {
        info["param_shape"] = ShapeToPython(param->second.shape());
        info["param_dtype"] = std::string(DTypeName(param->second.dtype()));
        info["param_bytes"] = param->second.bytes();
      }
      nodes.append(info);
    }
    return nodes;
  }

  // Bytes the bound executor plans for intermediate results.
  nb::dict MemoryStats() const {
    RequireBound("memory_stats");
    std::lock_guard<std::mutex> lock(*mutex_);
    nb::dict stats;
    stats["arena_bytes"] = executor_->memory_plan().arena_bytes;
    stats["unshared_bytes"] = executor_->memory_plan().naive_bytes;
    size_t param_bytes = 0;
    for (const auto& param : model_->params) param_bytes += param.second.bytes();
    stats["param_bytes"] = param_bytes;
    return stats;
  }

 private:
  bool IsInput(const std::string& name) const {
    for (const std::string& input : input_names_) {
      if (input == name) return true;
    }
    return false;
  }

  bool CoversRequired(const std::map<std::string, Shape>& shapes) const {
    for (const std::string& name : required_inputs_) {
      if (!shapes.count(name)) return false;
    }
    return true;
  }
  bool AllShapesKnown() const { return CoversRequired(known_shapes_); }

  void RequireBound(const char* what) const {
    if (!bound_) {
      RaiseError(StrCat(what, " needs the input shapes, which are not known yet (missing ",
                        NamesList(MissingShapes()),
                        "): pass input_shapes, call reshape(), or predict once"));
    }
  }

  std::vector<std::string> MissingShapes() const {
    std::vector<std::string> missing;
    for (const std::string& name : required_inputs_) {
      if (!known_shapes_.count(name)) missing.push_back(name);
    }
    return missing;
  }

  std::map<std::string, Shape> ReadShapes(nb::dict input_shapes) const {
    std::map<std::string, Shape> shapes;
    for (auto item : input_shapes) {
      std::string name;
      if (!nb::try_cast<std::string>(item.first, name, false)) {
        RaiseError("input names must be strings");
      }
      if (!IsInput(name)) {
        RaiseError(StrCat("cannot set the shape of '", name,
                          "': it is not an input of this model; its inputs are ",
                          NamesList(input_names_)));
      }
      shapes[name] = ShapeFromPython(name, item.second);
    }
    return shapes;
  }

  // Makes the executor for `shapes` (every input), with the GIL released:
  // binding infers shapes, plans memory and prepares every operator.
  void Bind(const std::map<std::string, Shape>& shapes) {
    std::unique_ptr<Executor> executor;
    Status status;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*mutex_);
      if (executor_) {
        status = executor_->Reshape(shapes, &executor);
      } else {
        status = Executor::Create(model_, shapes, input_dtypes_, options_, &executor);
      }
      if (status.ok()) executor_ = std::move(executor);
    }
    Check(status);
    known_shapes_ = shapes;
    bound_ = true;
  }

  std::shared_ptr<const Model> full_;   // the checkpoint with its own outputs
  std::shared_ptr<const Model> model_;  // pruned to the selected outputs
  RuntimeOptions options_;              // the environment's, then the caller's
  std::map<std::string, int> input_dtypes_;  // given by the caller; others float32
  std::vector<std::string> input_names_;      // every variable a caller may give
  std::vector<std::string> required_inputs_;  // those a pass reads
  std::map<std::string, Shape> known_shapes_;
  // The executor is swapped and run with the GIL released, under mutex_;
  // bound_ and known_shapes_ change only with the GIL held, so code that
  // holds the GIL reads them without the mutex.
  std::unique_ptr<Executor> executor_;  // null until every input has a shape
  bool bound_ = false;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
};

// The bytes of a bytes-like object (or the UTF-8 of a str, where allowed),
// read in place: the view holds the object until it is destroyed.
class BytesView {
 public:
  BytesView(nb::handle value, const char* what, bool allow_str) {
    if (allow_str && nb::isinstance<nb::str>(value)) {
      Py_ssize_t size = 0;
      data_ = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
      if (data_ == nullptr) throw nb::python_error();
      size_ = static_cast<size_t>(size);
      text_ = nb::borrow(value);
      return;
    }
    if (PyObject_GetBuffer(value.ptr(), &view_, PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      RaiseError(StrCat(what, " must be ", allow_str ? "str, " : "",
                        "bytes or a bytes-like object, not ",
                        nb::type_name(value.type()).c_str()));
    }
    has_view_ = true;
    data_ = static_cast<const char*>(view_.buf);
    size_ = static_cast<size_t>(view_.len);
  }
  ~BytesView() {
    if (has_view_) PyBuffer_Release(&view_);
  }
  BytesView(const BytesView&) = delete;
  BytesView& operator=(const BytesView&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Py_buffer view_{};
  bool has_view_ = false;
  nb::object text_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// The runtime options of a new predictor: the environment's (read here, at
// the boundary), then the caller's {name: text} over them.
RuntimeOptions ReadOptions(nb::dict given) {
  Check(ApplyProcessEnvironment());
  RuntimeOptions options;
  Check(OptionsFromEnvironment(&options));
  for (auto item : given) {
    std::string name, value;
    if (!nb::try_cast<std::string>(item.first, name, false) ||
        !nb::try_cast<std::string>(item.second, value, false)) {
      RaiseError("options must map option names to text values");
    }
    Check(SetRuntimeOption(&options, name, value));
  }
  return options;
}

Predictor* CreatePredictor(nb::handle symbol_json, nb::handle params, nb::dict input_shapes,
                           nb::object outputs, nb::dict option_texts, nb::dict input_dtypes) {
  BytesView json(symbol_json, "symbol_json", true);
  std::unique_ptr<BytesView> param_bytes;
  if (!params.is_none()) param_bytes.reset(new BytesView(params, "params", false));
  const RuntimeOptions options = ReadOptions(option_texts);
  std::shared_ptr<Model> full;
  Status status;
  {
    nb::gil_scoped_release release;
    status = LoadModel(json.data(), json.size(), param_bytes ? param_bytes->data() : nullptr,
                       param_bytes ? param_bytes->size() : 0, {}, &full);
  }
  Check(status);
  if (!full->file_names.empty()) {
    // A params file must provide the model's parameters, unless the caller
    // names one among the input shapes (the C API's rule, applied at load).
    std::vector<std::string> given;
    for (auto item : input_shapes) {
      std::string name;
      if (nb::try_cast<std::string>(item.first, name, false)) given.push_back(name);
    }
    Check(CheckParameters(*full, given));
  }
  std::shared_ptr<const Model> model = full;
  if (!outputs.is_none()) Check(SelectModelOutputs(*full, ReadOutputSelectors(outputs), &model));
  std::map<std::string, int> dtypes;
  for (auto item : input_dtypes) {
    std::string name;
    int flag = kUnknownDType;
    if (!nb::try_cast<std::string>(item.first, name, false) ||
        !nb::try_cast<int>(item.second, flag, false) || !IsValidDType(flag)) {
      RaiseError("input_dtypes must map input names to MXNet dtype flags");
    }
    dtypes[name] = flag;
  }
  std::unique_ptr<Predictor> predictor(new Predictor(full, model, options, dtypes));
  predictor->CheckInputDTypes(dtypes);
  predictor->Init(input_shapes);
  return predictor.release();
}

// MXNet's NDArray file format: (arrays, names); names is empty for a list.
nb::tuple LoadNDArrays(nb::handle data, const std::string& source) {
  BytesView bytes(data, "data", false);
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  Status status;
  {
    nb::gil_scoped_release release;
    status = LoadNDArrayList(bytes.data(), bytes.size(), source, &arrays, &names);
  }
  Check(status);
  nb::list result;
  for (NDArray& array : arrays) {
    if (array.is_none()) {
      result.append(nb::none());
      continue;
    }
    if (array.dtype() == kBfloat16) {
      // numpy has no bfloat16: widen it, exactly.
      NDArray widened;
      Check(array.ToFloat32(&widened));
      array = widened;
    }
    result.append(ToNumpy(array));
  }
  return nb::make_tuple(result, nb::cast(names));
}

// Writes arrays (any supported dtype, C-contiguous) in MXNet 1.x's V2
// layout; `names` is empty for a list file.
nb::bytes SaveNDArrays(nb::list arrays, const std::vector<std::string>& names) {
  if (!names.empty() && names.size() != arrays.size()) {
    RaiseError(StrCat("cannot save ", arrays.size(), " arrays with ", names.size(), " names"));
  }
  std::vector<InputArray> inputs;
  std::vector<NDArray> views;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const std::string label =
        names.empty() ? StrCat("array #", i) : StrCat("array '", names[i], "'");
    InputArray array;
    if (!nb::try_cast<InputArray>(arrays[i], array, false)) {
      RaiseError(StrCat(label, " must be a C-contiguous array in CPU memory"));
    }
    const int flag = FlagOf(array.dtype());
    if (flag == kUnknownDType) {
      RaiseError(StrCat(label, " has ", DescribeDType(array.dtype()),
                        ", which MXNet's format cannot hold"));
    }
    std::vector<int64_t> dims(array.ndim());
    for (size_t d = 0; d < array.ndim(); ++d) dims[d] = static_cast<int64_t>(array.shape(d));
    // A view of the caller's buffer: a storage of its own that points there.
    std::shared_ptr<Storage> storage;
    Check(Storage::Allocate(0, &storage));
    storage->ExchangeData(const_cast<void*>(array.data()));
    views.emplace_back(Shape(std::move(dims)), flag, storage);
    inputs.push_back(array);
  }
  std::string out;
  Status status;
  {
    nb::gil_scoped_release release;
    status = SaveNDArrayList(views, names, &out);
  }
  Check(status);
  return nb::bytes(out.data(), out.size());
}

// Symbol JSON given as str or bytes, as text.
std::string SymbolText(nb::handle symbol_json) {
  std::string text;
  if (!nb::try_cast<std::string>(symbol_json, text, false)) {
    nb::bytes raw;
    if (!nb::try_cast<nb::bytes>(symbol_json, raw, false)) {
      RaiseError("symbol_json must be str or bytes");
    }
    text.assign(raw.c_str(), raw.size());
  }
  return text;
}

// The memory plan of a symbol file for given input shapes (no params
// needed): the five totals of `mxlite plan`, in bytes.
nb::dict MemoryReportOf(nb::handle symbol_json, nb::dict input_shapes, bool fuse) {
  const std::string text = SymbolText(symbol_json);
  std::map<std::string, Shape> shapes;
  for (auto item : input_shapes) {
    std::string name;
    if (!nb::try_cast<std::string>(item.first, name, false)) {
      RaiseError("input names must be strings");
    }
    shapes[name] = ShapeFromPython(name, item.second);
  }
  MemoryReport report;
  Status status;
  {
    nb::gil_scoped_release release;
    status = ComputeMemoryReportFromJson(text, "symbol JSON", shapes, fuse, &report);
  }
  Check(status);
  nb::dict out;
  out["naive_bytes"] = report.naive_bytes;
  out["inplace_bytes"] = report.inplace_bytes;
  out["coshare_bytes"] = report.coshare_bytes;
  out["planned_bytes"] = report.planned_bytes;
  out["lower_bound_bytes"] = report.lower_bound_bytes;
  out["entries"] = report.num_entries;
  out["blocks"] = report.num_blocks;
  return out;
}

// The names mx.model.load_checkpoint's light Symbol lists (mxlite/symbol.py),
// from the graph as written (no pruning, no fusion): MXNet's list_arguments()
// and list_auxiliary_states() (variables some operator mutates, such as
// BatchNorm's moving statistics, are auxiliary states), list_outputs() and
// get_internals().list_outputs().
nb::dict SymbolInfo(nb::handle symbol_json) {
  const std::string text = SymbolText(symbol_json);
  Graph graph;
  Check(LoadSymbolJson(text.data(), text.size(), &graph));
  std::vector<int> arguments, aux_states;
  graph.ListVariables(&arguments, &aux_states);
  std::vector<std::string> argument_names, aux_names, output_names, internal_names;
  for (int node : arguments) argument_names.push_back(graph.nodes[node].name);
  for (int node : aux_states) aux_names.push_back(graph.nodes[node].name);
  for (const NodeEntry& output : graph.outputs) {
    output_names.push_back(graph.nodes[output.node].OutputName(output.index));
  }
  for (const auto& internal : Internals(graph)) internal_names.push_back(internal.first);
  nb::dict out;
  out["arguments"] = argument_names;
  out["aux_states"] = aux_names;
  out["outputs"] = output_names;
  out["internals"] = internal_names;
  return out;
}


// --- the imperative NDArray (mxlite.nd.NDArray's core) ---------------------
// An engine-backed array; every method that computes pushes onto the engine
// and returns at once, every method that reads waits (with the GIL released).
struct ArrayHandle {
  ArrayRef ref;
};

// A Python sequence of non-negative integers (possibly empty: a 0-d array).
Shape DimsFromPython(nb::handle shape) {
  std::vector<int64_t> dims;
  for (nb::handle item : shape) {
    int64_t dim = 0;
    if (!nb::try_cast<int64_t>(item, dim, false) || dim < 0) {
      RaiseError(StrCat("a shape must hold non-negative integers, got ",
                        nb::str(nb::repr(shape)).c_str()));
    }
    dims.push_back(dim);
  }
  return Shape(std::move(dims));
}

ArrayHandle* NewArrayHandle(nb::handle shape, int dtype) {
  if (!IsValidDType(dtype)) RaiseError(StrCat("unknown dtype flag ", dtype));
  auto* handle = new ArrayHandle();
  Status status = NewEngineArray(DimsFromPython(shape), dtype, &handle->ref);
  if (!status.ok()) {
    delete handle;
    RaiseError(status.message());
  }
  return handle;
}

ArrayHandle* NewView(const ArrayHandle& base, int64_t offset, nb::handle shape) {
  auto* view = new ArrayHandle();
  Status status = ViewOf(base.ref, offset, DimsFromPython(shape), &view->ref);
  if (!status.ok()) {
    delete view;
    RaiseError(status.message());
  }
  return view;
}

// Writes a C-contiguous numpy array (same element count) into `handle`.
void WriteArray(const ArrayHandle& handle, nb::handle value) {
  InputArray array;
  if (!nb::try_cast<InputArray>(value, array, false)) {
    RaiseError("the value must be a C-contiguous array in CPU memory");
  }
  const int flag = FlagOf(array.dtype());
  if (flag == kUnknownDType) {
    RaiseError(StrCat("cannot write ", DescribeDType(array.dtype()), " into an NDArray"));
  }
  if (static_cast<int64_t>(array.size()) != handle.ref->data.Size()) {
    RaiseError(StrCat("cannot write ", array.size(), " elements into an array of shape ",
                      handle.ref->data.shape().ToString()));
  }
  Check(WriteFromHost(handle.ref, array.data(), flag));
}

nb::object ReadArray(const ArrayHandle& handle) {
  NDArray copy;
  Status status;
  {
    nb::gil_scoped_release release;
    status = ReadToHost(handle.ref, &copy);
  }
  Check(status);
  if (copy.dtype() == kBfloat16) {
    NDArray widened;
    Check(copy.ToFloat32(&widened));
    copy = widened;
  }
  return ToNumpy(copy);
}

void WaitArray(const ArrayHandle& handle) {
  Status status;
  {
    nb::gil_scoped_release release;
    status = WaitToRead(handle.ref);
  }
  Check(status);
}

std::vector<ArrayRef> RefsOf(nb::handle arrays, const char* what) {
  std::vector<ArrayRef> refs;
  for (nb::handle item : arrays) {
    ArrayHandle* handle = nullptr;
    if (!nb::try_cast<ArrayHandle*>(item, handle, false) || handle == nullptr) {
      RaiseError(StrCat(what, " must be NDArrays, got ", nb::type_name(item.type()).c_str()));
    }
    refs.push_back(handle->ref);
  }
  return refs;
}

nb::list InvokeOperator(const std::string& op_name, nb::dict attrs, nb::list inputs) {
  AttrMap attr_map;
  for (auto item : attrs) {
    std::string key, value;
    if (!nb::try_cast<std::string>(item.first, key, false) ||
        !nb::try_cast<std::string>(item.second, value, false)) {
      RaiseError(StrCat("operator ", op_name, ": attributes must map strings to strings"));
    }
    attr_map[key] = value;
  }
  std::vector<ArrayRef> outputs;
  Check(Invoke(op_name, attr_map, RefsOf(inputs, "operator inputs"), &outputs));
  nb::list result;
  for (ArrayRef& output : outputs) result.append(nb::cast(new ArrayHandle{output},
                                                          nb::rv_policy::take_ownership));
  return result;
}

void WaitForEverything() {
  Status status;
  {
    nb::gil_scoped_release release;
    status = WaitAll();
  }
  Check(status);
}

}  // namespace python_core
}  // namespace mxlite

NB_MODULE(_core, m) {
  using mxlite::python_core::Predictor;
  m.doc() = "mxlite's compiled core: predictors and NDArray files (use the mxlite package).";
  nb::object error = nb::module_::import_("mxlite.errors").attr("MXLiteError");
  mxlite::python_core::g_error_type = error.release().ptr();  // kept for the process
  // The module is the API boundary: MXLITE_ISA, MXLITE_ENGINE and the other
  // process settings apply now, before any kernel or array exists; a bad
  // value fails the import with a message naming the variable.
  mxlite::python_core::Check(mxlite::ApplyProcessEnvironment());

  nb::class_<Predictor>(m, "Predictor",
                        "A loaded checkpoint bound to input shapes (see mxlite.Predictor).")
      .def("__init__",
           [](Predictor* self, nb::handle symbol_json, nb::handle params, nb::dict input_shapes,
              nb::object outputs, nb::dict options, nb::dict input_dtypes) {
             std::unique_ptr<Predictor> made(mxlite::python_core::CreatePredictor(
                 symbol_json, params, input_shapes, outputs, options, input_dtypes));
             new (self) Predictor(std::move(*made));  // moves the executor, no rebinding
           },
           nb::arg("symbol_json"), nb::arg("params").none(), nb::arg("input_shapes"),
           nb::arg("outputs").none(), nb::arg("options"), nb::arg("input_dtypes"),
           nb::sig("def __init__(self, symbol_json: str | bytes, params: bytes | None, "
                   "input_shapes: dict[str, tuple[int, ...]], outputs: list[str | int] | None, "
                   "options: dict[str, str], input_dtypes: dict[str, int]) -> None"),
           "Parses symbol JSON (str or bytes) and params file bytes; selects `outputs` "
           "(None keeps the symbol's); options maps runtime option names to values "
           "(over the MXLITE_* environment); input_dtypes maps inputs to MXNet dtype flags "
           "(default float32); binds when every input shape is known.")
      .def_prop_ro("input_names", &Predictor::input_names,
                   "Variables a caller may give (those the params lack), in graph order.")
      .def_prop_ro("required_inputs", &Predictor::required_inputs,
                   "The inputs a pass reads (the rest only lend their shapes).")
      .def_prop_ro("input_dtypes", &Predictor::input_dtypes,
                   nb::for_getter(nb::sig("def input_dtypes(self) -> dict[str, str]")),
                   "Each input's element type, as a numpy dtype name.")
      .def_prop_ro("output_names", &Predictor::output_names, "Names of the outputs, in order.")
      .def_prop_ro("input_shapes", &Predictor::input_shapes,
                   nb::for_getter(nb::sig("def input_shapes(self) -> dict[str, tuple[int, ...]]")),
                   "Known input shapes: {name: tuple}.")
      .def_prop_ro("output_shapes", &Predictor::output_shapes,
                   nb::for_getter(nb::sig("def output_shapes(self) -> list[tuple[int, ...]]")),
                   "Output shapes for the bound input shapes.")
      .def_prop_ro("is_bound", &Predictor::is_bound, "Whether every input shape is known.")
      .def("internals", &Predictor::internals,
           "Every selectable output name: variables and visible operator outputs.")
      .def("reshape", &Predictor::Reshape, nb::arg("input_shapes"),
           nb::sig("def reshape(self, input_shapes: dict[str, tuple[int, ...]]) -> None"),
           "Rebinds for new shapes of the named inputs (weights are shared).")
      .def("predict", &Predictor::Predict, nb::arg("inputs"),
           nb::sig("def predict(self, inputs: dict[str, numpy.ndarray]) -> list[numpy.ndarray]"),
           "Runs one pass on {name: C-contiguous float32 array}; returns the outputs.")
      .def("with_outputs", &Predictor::WithOutputs, nb::arg("names"),
           nb::rv_policy::take_ownership,
           nb::sig("def with_outputs(self, names: collections.abc.Sequence[str | int]) "
                   "-> Predictor"),
           "A predictor for other outputs of the same checkpoint, sharing its weights; "
           "each output by name or by its position in internals().")
      .def("nodes", &Predictor::Nodes, nb::sig("def nodes(self) -> list[dict[str, object]]"),
           "The graph, one dict per node.")
      .def("memory_stats", &Predictor::MemoryStats,
           nb::sig("def memory_stats(self) -> dict[str, int]"),
           "Planned intermediate memory and parameter bytes of the bound predictor.");

  m.def("memory_report", &mxlite::python_core::MemoryReportOf, nb::arg("symbol_json"),
        nb::arg("input_shapes"), nb::arg("fuse") = false,
        nb::sig("def memory_report(symbol_json: str | bytes, input_shapes: dict[str, "
                "tuple[int, ...]], fuse: bool = False) -> dict[str, int]"),
        "Intermediate memory of the symbol's forward pass for the given input shapes: "
        "naive, in place only, co-share only, planned (both) and the lower bound, in bytes. "
        "fuse=True plans the optimised graph a predictor runs.");
  m.def("symbol_info", &mxlite::python_core::SymbolInfo, nb::arg("symbol_json"),
        nb::sig("def symbol_info(symbol_json: str | bytes) -> dict[str, list[str]]"),
        "The symbol's arguments, aux_states, outputs and internals (output names), as "
        "MXNet's list_arguments(), list_auxiliary_states(), list_outputs() and "
        "get_internals().list_outputs() give them.");
  m.def("load_ndarrays", &mxlite::python_core::LoadNDArrays, nb::arg("data"), nb::arg("source"),
        nb::sig("def load_ndarrays(data: bytes, source: str) -> "
                "tuple[list[numpy.ndarray | None], list[str]]"),
        "Parses MXNet NDArray file bytes into (arrays, names); `source` names it in errors.");
  m.def("save_ndarrays", &mxlite::python_core::SaveNDArrays, nb::arg("arrays"), nb::arg("names"),
        nb::sig("def save_ndarrays(arrays: list[numpy.ndarray], names: Sequence[str]) -> bytes"),
        "Serialises arrays (and names, or none for a list) in MXNet 1.x's V2 format.");

  using mxlite::python_core::ArrayHandle;
  nb::class_<ArrayHandle>(m, "ArrayHandle",
                          "An engine-backed array (the core of mxlite.nd.NDArray).")
      .def_static("empty", &mxlite::python_core::NewArrayHandle, nb::arg("shape"),
                  nb::arg("dtype"), nb::rv_policy::take_ownership,
                  nb::sig("def empty(shape: Sequence[int], dtype: int) -> ArrayHandle"),
                  "A zero-filled array of `shape` and MXNet dtype flag `dtype`.")
      .def_prop_ro("shape",
                   [](const ArrayHandle& h) {
                     return mxlite::python_core::ShapeToPython(h.ref->data.shape());
                   },
                   nb::for_getter(nb::sig("def shape(self) -> tuple[int, ...]")),
                   "The shape.")
      .def_prop_ro("dtype", [](const ArrayHandle& h) { return h.ref->data.dtype(); },
                   "The MXNet dtype flag.")
      .def("asnumpy", &mxlite::python_core::ReadArray,
           nb::sig("def asnumpy(self) -> numpy.ndarray"),
           "Waits for pending writes, then returns a copy of the values.")
      .def("wait_to_read", &mxlite::python_core::WaitArray,
           "Waits for pending writes; raises the failure of any of them.")
      .def("write", &mxlite::python_core::WriteArray, nb::arg("value"),
           nb::sig("def write(self, value: numpy.ndarray) -> None"),
           "Pushes a copy of a C-contiguous numpy array (same element count) into it.")
      .def("fill",
           [](const ArrayHandle& h, double value) {
             mxlite::python_core::Check(mxlite::Fill(h.ref, value));
           },
           nb::arg("value"), "Pushes setting every element to `value`.")
      .def("copy_to",
           [](const ArrayHandle& h, const ArrayHandle& to) {
             mxlite::python_core::Check(mxlite::CopyFromTo(h.ref, to.ref));
           },
           nb::arg("to"), "Pushes copying the values into `to` (same element count).")
      .def("view", &mxlite::python_core::NewView,
           nb::arg("offset"), nb::arg("shape"), nb::rv_policy::take_ownership,
           nb::sig("def view(self, offset: int, shape: Sequence[int]) -> ArrayHandle"),
           "The elements from `offset` on as `shape`, sharing storage and dependencies.")
      .def("same_storage",
           [](const ArrayHandle& h, const ArrayHandle& other) {
             return h.ref->data.storage() == other.ref->data.storage();
           },
           nb::arg("other"), "Whether both arrays view the same storage.");
  m.def(
      "runtime_options",
      [] {
        nb::list options;
        for (int i = 0; i < mxlite::kRuntimeOptionCount; ++i) {
          const mxlite::RuntimeOptionInfo& info = mxlite::kRuntimeOptionList[i];
          options.append(nb::make_tuple(info.name, info.environment, info.values, info.meaning));
        }
        return options;
      },
      nb::sig("def runtime_options() -> list[tuple[str, str, str, str]]"),
      "The runtime options: (name, environment variable, values, meaning) each.");
  m.def("nd_invoke", &mxlite::python_core::InvokeOperator, nb::arg("op_name"), nb::arg("attrs"),
        nb::arg("inputs"),
        nb::sig("def nd_invoke(op_name: str, attrs: dict[str, str], inputs: list[ArrayHandle]) "
                "-> list[ArrayHandle]"),
        "Pushes a registered operator on the inputs; returns its visible outputs at once.");
  m.def("nd_dot",
        [](const ArrayHandle& a, const ArrayHandle& b, bool trans_a, bool trans_b) {
          auto* out = new ArrayHandle();
          mxlite::Status status = mxlite::Dot(a.ref, b.ref, trans_a, trans_b, &out->ref);
          if (!status.ok()) {
            delete out;
            mxlite::python_core::RaiseError(status.message());
          }
          return out;
        },
        nb::arg("a"), nb::arg("b"), nb::arg("transpose_a") = false,
        nb::arg("transpose_b") = false, nb::rv_policy::take_ownership,
        "Pushes the matrix product of two 2-d float32 arrays.");
  m.def("nd_random",
        [](const ArrayHandle& to, const std::string& kind, double low, double high,
           uint64_t seed, uint64_t stream) {
          mxlite::python_core::Check(mxlite::RandomFill(to.ref, kind, low, high, seed, stream));
        },
        nb::arg("to"), nb::arg("kind"), nb::arg("low"), nb::arg("high"), nb::arg("seed"),
        nb::arg("stream"),
        "Pushes filling `to` from the counter-based generator (uniform or normal).");
  m.def("nd_op_name",
        [](const std::string& name) { return mxlite::CanonicalOpName(name); }, nb::arg("name"),
        "The canonical name of a registered operator or alias, or \"\" when unknown.");
  m.def("nd_op_attrs",
        [](const std::string& name) {
          const std::string canonical = mxlite::CanonicalOpName(name);
          std::vector<std::string> attrs;
          for (const mxlite::OperatorDoc& doc : mxlite::DescribeOperators()) {
            if (doc.name != canonical) continue;
            for (const mxlite::AttrDoc& attr : doc.attrs) attrs.push_back(attr.name);
          }
          return attrs;
        },
        nb::arg("name"),
        "The attribute names of a registered operator, in the order its factory reads them.");
  m.def("nd_waitall", &mxlite::python_core::WaitForEverything,
        "Waits for every pushed operation; raises the first unreported failure.");
  m.def("nd_push_sleep",
        [](nb::list arrays, int millis, const std::string& failure) {
          mxlite::python_core::Check(mxlite::PushSleep(
              mxlite::python_core::RefsOf(arrays, "arrays"), millis, failure));
        },
        nb::arg("arrays"), nb::arg("millis"), nb::arg("failure") = "",
        "Testing aid: pushes a write of `arrays` that sleeps, then fails if `failure` is set.");
}
