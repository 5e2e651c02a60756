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
 * The model's rules (inputs, required inputs, "__shape__" hints, when to
 * bind, output selection) are the core's Predictor (executor/predictor.h),
 * as for the C API; this file converts arguments and results. The GIL is
 * released while a predictor binds or runs; a mutex per predictor
 * serialises threads that share one. Every failed Status becomes
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
#include "convert.h"
#include "executor/device.h"
#include "executor/predictor.h"
#include "executor/memory_plan.h"
#include "imperative/imperative.h"
#include "operators/operator.h"
#include "ndarray/ndarray_io.h"

namespace mxlite {
namespace python_core {

// --- the model and its predictors -------------------------------------------
// The rules (which inputs exist and which are required, "__shape__" hints,
// when to bind, output selection) are the core's (executor/predictor.h);
// this layer converts arguments, releases the GIL and raises errors.

// The selectors in a Python sequence of str and int (bool is refused).
std::vector<OutputSelector> ReadOutputSelectors(nb::handle outputs) {
  std::vector<OutputSelector> selectors;
  const char* usage = "outputs must be a non-empty list of output names (str) or positions in "
                      "get_internals() (int)";
  if (!PySequence_Check(outputs.ptr()) || nb::isinstance<nb::str>(outputs)) RaiseError(usage);
  for (nb::handle item : outputs) {
    int64_t index = 0;
    if (nb::isinstance<nb::str>(item)) {
      selectors.push_back(OutputSelector::Name(nb::cast<std::string>(item)));
    } else if (PyBool_Check(item.ptr()) || !nb::try_cast<int64_t>(item, index, false)) {
      RaiseError(StrCat(usage, "; got ", nb::str(nb::repr(item)).c_str()));
    } else {
      selectors.push_back(OutputSelector::Position(index));
    }
  }
  if (selectors.empty()) RaiseError(usage);
  return selectors;
}

// A core Predictor shared between Python threads: a mutex serialises them.
// Every call that may change the predictor (bind, reshape, predict) or that
// reads what such a call changes runs with the GIL released, under the
// mutex; what never changes after creation (the inputs, their dtypes, the
// outputs) is read without it.
class PyPredictor {
 public:
  explicit PyPredictor(std::unique_ptr<Predictor> core) : core_(std::move(core)) {}

  const std::vector<std::string>& input_names() const { return core_->input_names(); }
  const std::vector<std::string>& required_inputs() const { return core_->required_inputs(); }
  std::vector<std::string> output_names() const { return core_->output_names(); }
  std::vector<std::string> internals() const { return core_->internals(); }

  nb::dict input_dtypes() const {
    nb::dict dtypes;
    for (const std::string& name : core_->input_names()) {
      dtypes[name.c_str()] = DTypeName(core_->InputDType(name));
    }
    return dtypes;
  }

  nb::dict input_shapes() const {
    std::map<std::string, Shape> shapes;
    Locked([&](const Predictor& core) {
      shapes = core.input_shapes();
      return Status();
    });
    nb::dict result;
    for (const auto& entry : shapes) result[entry.first.c_str()] = ShapeToPython(entry.second);
    return result;
  }

  bool is_bound() const {
    bool bound = false;
    Locked([&](const Predictor& core) {
      bound = core.is_bound();
      return Status();
    });
    return bound;
  }

  nb::list output_shapes() const {
    std::vector<Shape> shapes;
    Locked([&](const Predictor& core) { return core.OutputShapes(&shapes); });
    nb::list result;
    for (const Shape& shape : shapes) result.append(ShapeToPython(shape));
    return result;
  }

  void Reshape(nb::dict input_shapes) {
    std::map<std::string, Shape> shapes = ReadShapes(*core_, input_shapes);
    Locked([&](Predictor& core) { return core.Reshape(shapes); });
  }

  // One forward pass. `inputs` maps each required input (and any shape-only
  // one) to a C-contiguous CPU array of the input's dtype (the Python layer
  // converts), read in place. Returns the outputs as numpy arrays that own
  // their memory.
  nb::list Predict(nb::dict inputs) {
    std::vector<InputArray> arrays;  // keep the buffers alive through the pass
    std::vector<InputValue> values;
    for (auto item : inputs) {
      std::string name;
      if (!nb::try_cast<std::string>(item.first, name, false)) {
        RaiseError("input names must be strings");
      }
      Check(core_->CheckIsInput(name));
      InputArray array;
      if (!nb::try_cast<InputArray>(item.second, array, false)) {
        RaiseError(StrCat("input '", name, "' must be a C-contiguous array in CPU memory, not ",
                          nb::type_name(item.second.type()).c_str()));
      }
      const int expected = core_->InputDType(name);
      if (FlagOf(array.dtype()) != expected) {
        RaiseError(StrCat("input '", name, "' is ", DescribeDType(array.dtype()),
                          " but the model expects ", DTypeName(expected)));
      }
      std::vector<int64_t> dims(array.ndim());
      for (size_t d = 0; d < array.ndim(); ++d) dims[d] = static_cast<int64_t>(array.shape(d));
      values.push_back(InputValue{name, array.data(), expected, Shape(std::move(dims))});
      arrays.push_back(array);
    }
    std::vector<NDArray> outputs;
    Locked([&](Predictor& core) { return core.Predict(values, &outputs); });
    nb::list result;
    for (const NDArray& output : outputs) result.append(ToNumpy(output));
    return result;
  }

  // A predictor for other outputs of the same checkpoint, sharing weights.
  PyPredictor* WithOutputs(nb::handle outputs) const {
    const std::vector<OutputSelector> selectors = ReadOutputSelectors(outputs);
    std::unique_ptr<Predictor> other;
    Locked([&](const Predictor& core) { return core.WithOutputs(selectors, &other); });
    return new PyPredictor(std::move(other));
  }

  // The graph as a list of dicts, one per node, for summaries: name, op,
  // attrs, inputs (entry names), outputs (names and shapes, None where
  // unknown) and, for parameters, their shape, dtype and bytes.
  nb::list Nodes() const {
    std::vector<NodeSummary> summaries;
    Locked([&](const Predictor& core) {
      summaries = core.Nodes();
      return Status();
    });
    nb::list nodes;
    for (const NodeSummary& summary : summaries) {
      nb::dict info;
      info["name"] = summary.name;
      info["op"] = summary.op;
      nb::dict attrs;
      for (const auto& attr : summary.attrs) attrs[attr.first.c_str()] = attr.second;
      info["attrs"] = attrs;
      info["inputs"] = nb::cast(summary.inputs);
      nb::list outputs, output_shapes;
      for (size_t i = 0; i < summary.outputs.size(); ++i) {
        outputs.append(summary.outputs[i]);
        if (summary.output_shapes.empty()) {
          output_shapes.append(nb::none());
        } else {
          output_shapes.append(ShapeToPython(summary.output_shapes[i]));
        }
      }
      info["outputs"] = outputs;
      info["output_shapes"] = output_shapes;
      info["is_param"] = summary.param != nullptr;
      info["is_input"] = summary.is_input;
      if (summary.param != nullptr) {
        info["param_shape"] = ShapeToPython(summary.param->shape());
        info["param_dtype"] = std::string(DTypeName(summary.param->dtype()));
        info["param_bytes"] = summary.param->bytes();
      }
      nodes.append(info);
    }
    return nodes;
  }

  std::string DeviceReport() const {
    std::string report;
    Locked([&](const Predictor& core) {
      report = core.DeviceReport();
      return Status();
    });
    return report;
  }

  // Bytes the bound executor holds: planned intermediate results, the
  // parameters, prepared weights, float32 copies and operator scratch.
  nb::dict MemoryStats() const {
    PredictorMemory memory;
    Locked([&](const Predictor& core) { return core.Memory(&memory); });
    nb::dict stats;
    stats["arena_bytes"] = memory.arena_bytes;
    stats["unshared_bytes"] = memory.unshared_bytes;
    stats["param_bytes"] = memory.param_bytes;
    stats["prepared_bytes"] = memory.prepared_bytes;
    stats["float32_copy_bytes"] = memory.float32_copy_bytes;
    stats["workspace_bytes"] = memory.workspace_bytes;
    return stats;
  }

  // {name: shape} from a dict, each name checked against the inputs.
  static std::map<std::string, Shape> ReadShapes(const Predictor& core, nb::dict input_shapes) {
    std::map<std::string, Shape> shapes;
    for (auto item : input_shapes) {
      std::string name;
      if (!nb::try_cast<std::string>(item.first, name, false)) {
        RaiseError("input names must be strings");
      }
      Check(core.CheckShapeName(name));
      shapes[name] = ShapeFromPython(name, item.second);
    }
    return shapes;
  }

 private:
  // Runs `fn(core)`, which returns a Status, with the GIL released and the
  // mutex held; raises its error.
  template <typename Fn>
  void Locked(Fn&& fn) const {
    Status status;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*mutex_);
      status = fn(*core_);
    }
    Check(status);
  }

  std::unique_ptr<Predictor> core_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
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

PyPredictor* CreatePredictor(nb::handle symbol_json, nb::handle params, nb::dict input_shapes,
                             nb::object outputs, nb::dict option_texts, nb::dict input_dtypes) {
  BytesView json(symbol_json, "symbol_json", true);
  std::unique_ptr<BytesView> param_bytes;
  if (!params.is_none()) param_bytes.reset(new BytesView(params, "params", false));
  PredictorSpec spec;
  spec.rule = BindRule::kWhenShaped;
  spec.options = ReadOptions(option_texts);
  std::shared_ptr<Model> full;
  Status status;
  {
    nb::gil_scoped_release release;
    status = LoadModel(json.data(), json.size(), param_bytes ? param_bytes->data() : nullptr,
                       param_bytes ? param_bytes->size() : 0, {}, &full);
  }
  Check(status);
  if (!outputs.is_none()) spec.outputs = ReadOutputSelectors(outputs);
  for (auto item : input_dtypes) {
    std::string name;
    int flag = kUnknownDType;
    if (!nb::try_cast<std::string>(item.first, name, false) ||
        !nb::try_cast<int>(item.second, flag, false) || !IsValidDType(flag)) {
      RaiseError("input_dtypes must map input names to MXNet dtype flags");
    }
    spec.input_dtypes[name] = flag;
  }
  for (auto item : input_shapes) {
    std::string name;
    if (!nb::try_cast<std::string>(item.first, name, false)) {
      RaiseError("input names must be strings");
    }
    spec.input_shapes[name] = ShapeFromPython(name, item.second);
  }
  std::unique_ptr<Predictor> predictor;
  {
    nb::gil_scoped_release release;  // binding infers shapes and prepares every operator
    status = Predictor::Create(full, spec, &predictor);
  }
  Check(status);
  return new PyPredictor(std::move(predictor));
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
    status = ComputeMemoryReportFromJson(text, "symbol JSON", shapes, fuse, FusionTarget::kCpu,
                                         &report);
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

// The names mx.model.load_checkpoint's light Symbol lists (mxlite/symbol.py):
// see ListSymbolNames.
nb::dict SymbolInfo(nb::handle symbol_json) {
  SymbolNames names;
  Check(ListSymbolNames(SymbolText(symbol_json), &names));
  nb::dict out;
  out["arguments"] = names.arguments;
  out["aux_states"] = names.aux_states;
  out["outputs"] = names.outputs;
  out["internals"] = names.internals;
  return out;
}

// --- the imperative NDArray (mxlite.nd.NDArray's core) ---------------------
// An engine-backed array; every method that computes pushes onto the engine
// and returns at once, every method that reads waits (with the GIL released).
struct ArrayHandle {
  ArrayRef ref;
};


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
  using mxlite::python_core::PyPredictor;
  m.doc() = "mxlite's compiled core: predictors and NDArray files (use the mxlite package).";
  nb::object error = nb::module_::import_("mxlite.errors").attr("MXLiteError");
  mxlite::python_core::g_error_type = error.release().ptr();  // kept for the process
  // The module is the API boundary: MXLITE_ISA, MXLITE_ENGINE and the other
  // process settings apply now, before any kernel or array exists; a bad
  // value fails the import with a message naming the variable.
  mxlite::python_core::Check(mxlite::ApplyProcessEnvironment());

  nb::class_<PyPredictor>(m, "Predictor",
                        "A loaded checkpoint bound to input shapes (see mxlite.Predictor).")
      .def("__init__",
           [](PyPredictor* self, nb::handle symbol_json, nb::handle params, nb::dict input_shapes,
              nb::object outputs, nb::dict options, nb::dict input_dtypes) {
             std::unique_ptr<PyPredictor> made(mxlite::python_core::CreatePredictor(
                 symbol_json, params, input_shapes, outputs, options, input_dtypes));
             new (self) PyPredictor(std::move(*made));  // moves the executor, no rebinding
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
      .def_prop_ro("input_names", &PyPredictor::input_names,
                   "Variables a caller may give (those the params lack), in graph order.")
      .def_prop_ro("required_inputs", &PyPredictor::required_inputs,
                   "The inputs a pass reads (the rest only lend their shapes).")
      .def_prop_ro("input_dtypes", &PyPredictor::input_dtypes,
                   nb::for_getter(nb::sig("def input_dtypes(self) -> dict[str, str]")),
                   "Each input's element type, as a numpy dtype name.")
      .def_prop_ro("output_names", &PyPredictor::output_names, "Names of the outputs, in order.")
      .def_prop_ro("input_shapes", &PyPredictor::input_shapes,
                   nb::for_getter(nb::sig("def input_shapes(self) -> dict[str, tuple[int, ...]]")),
                   "Known input shapes: {name: tuple}.")
      .def_prop_ro("output_shapes", &PyPredictor::output_shapes,
                   nb::for_getter(nb::sig("def output_shapes(self) -> list[tuple[int, ...]]")),
                   "Output shapes for the bound input shapes.")
      .def_prop_ro("is_bound", &PyPredictor::is_bound, "Whether every input shape is known.")
      .def("internals", &PyPredictor::internals,
           "Every selectable output name: variables and visible operator outputs.")
      .def("reshape", &PyPredictor::Reshape, nb::arg("input_shapes"),
           nb::sig("def reshape(self, input_shapes: dict[str, tuple[int, ...]]) -> None"),
           "Rebinds for new shapes of the named inputs (weights are shared).")
      .def("predict", &PyPredictor::Predict, nb::arg("inputs"),
           nb::sig("def predict(self, inputs: dict[str, numpy.ndarray]) -> list[numpy.ndarray]"),
           "Runs one pass on {name: C-contiguous float32 array}; returns the outputs.")
      .def("with_outputs", &PyPredictor::WithOutputs, nb::arg("names"),
           nb::rv_policy::take_ownership,
           nb::sig("def with_outputs(self, names: collections.abc.Sequence[str | int]) "
                   "-> Predictor"),
           "A predictor for other outputs of the same checkpoint, sharing its weights; "
           "each output by name or by its position in internals().")
      .def("nodes", &PyPredictor::Nodes, nb::sig("def nodes(self) -> list[dict[str, object]]"),
           "The graph, one dict per node.")
      .def("memory_stats", &PyPredictor::MemoryStats,
           nb::sig("def memory_stats(self) -> dict[str, int]"),
           "Planned intermediate memory and parameter bytes of the bound predictor.")
      .def("device_report", &PyPredictor::DeviceReport,
           "Where a GPU predictor's nodes run, and whether its pass replays as a CUDA graph; "
           "'' on the CPU.");

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
  m.def("gpu_count", &mxlite::CudaDeviceCount,
        "CUDA devices this build can use: -1 without a CUDA backend (a C++ compiler's build), "
        "0 when CUDA finds none.");
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
