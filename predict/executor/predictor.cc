#include "predictor.h"

#include "../graph/infer.h"

namespace mxlite {

namespace predictor_cc {

// At most eight names, then a count: a model may have hundreds.
std::string NamesList(const std::vector<std::string>& names) { return QuotedNames(names, 8); }

}  // namespace predictor_cc

Predictor::Predictor(std::shared_ptr<const Model> full, std::shared_ptr<const Model> model,
                     BindRule rule, const RuntimeOptions& options,
                     const std::map<std::string, int>& input_dtypes)
    : full_(std::move(full)), model_(std::move(model)), rule_(rule), options_(options) {
  InputList inputs = ListInputs(*model_);
  input_names_ = inputs.names;
  required_inputs_ = inputs.required;
  for (const auto& entry : input_dtypes) {
    if (IsInput(entry.first)) input_dtypes_.insert(entry);
  }
}

Status Predictor::Create(std::shared_ptr<const Model> full, const PredictorSpec& spec,
                         std::unique_ptr<Predictor>* out) {
  if (spec.rule == BindRule::kAtOnce || !full->file_names.empty()) {
    // A params file must provide the model's parameters, unless the caller
    // names one among the input shapes. Without a file (kWhenShaped), the
    // parameters are inputs like any other.
    std::vector<std::string> given;
    for (const auto& entry : spec.input_shapes) given.push_back(entry.first);
    MXL_RETURN_IF_ERROR(CheckParameters(*full, given));
  }
  std::shared_ptr<const Model> model = full;
  if (!spec.outputs.empty()) MXL_RETURN_IF_ERROR(SelectModelOutputs(*full, spec.outputs, &model));
  std::unique_ptr<Predictor> predictor(
      new Predictor(full, model, spec.rule, spec.options, spec.input_dtypes));
  if (spec.rule == BindRule::kWhenShaped) {
    MXL_RETURN_IF_ERROR(predictor->CheckInputDTypes(spec.input_dtypes));
  }
  MXL_RETURN_IF_ERROR(predictor->SetInputShapes(spec.input_shapes));
  *out = std::move(predictor);
  return Status();
}

bool Predictor::IsInput(const std::string& name) const {
  for (const std::string& input : input_names_) {
    if (input == name) return true;
  }
  return false;
}

Status Predictor::CheckIsInput(const std::string& name) const {
  MXL_CHECK(IsInput(name), "'", name, "' is not an input of this model; its inputs are ",
            predictor_cc::NamesList(input_names_));
  return Status();
}

Status Predictor::CheckShapeName(const std::string& name) const {
  MXL_CHECK(IsInput(name), "cannot set the shape of '", name,
            "': it is not an input of this model; its inputs are ",
            predictor_cc::NamesList(input_names_));
  return Status();
}

Status Predictor::CheckInputDTypes(const std::map<std::string, int>& given) const {
  for (const auto& entry : given) {
    MXL_CHECK(IsInput(entry.first), "input_dtypes: '", entry.first,
              "' is not an input of this model; its inputs are ",
              predictor_cc::NamesList(input_names_));
  }
  return Status();
}

int Predictor::InputDType(const std::string& name) const {
  // The caller's choice, else float32 (MXNet's predict API rule, which the
  // executor applies too).
  auto given = input_dtypes_.find(name);
  return given == input_dtypes_.end() ? static_cast<int>(kFloat32) : given->second;
}

std::vector<std::string> Predictor::output_names() const {
  std::vector<std::string> names;
  for (const NodeEntry& output : model_->graph.outputs) {
    names.push_back(model_->graph.nodes[output.node].OutputName(output.index));
  }
  return names;
}

std::vector<std::string> Predictor::internals() const {
  std::vector<std::string> names;
  for (const auto& internal : Internals(full_->graph)) names.push_back(internal.first);
  return names;
}

Status Predictor::SetInputShapes(const std::map<std::string, Shape>& given) {
  for (const auto& entry : given) {
    if (rule_ == BindRule::kWhenShaped) MXL_RETURN_IF_ERROR(CheckShapeName(entry.first));
    MXL_RETURN_IF_ERROR(CheckInputShape(entry.first, entry.second));
  }
  if (rule_ == BindRule::kAtOnce) return Bind(given);
  std::map<std::string, Shape> shapes = given;
  for (const std::string& name : input_names_) {
    if (shapes.count(name)) continue;
    const Node& node = model_->graph.nodes[model_->graph.FindNode(name)];
    auto hint = node.attrs.find("__shape__");
    if (hint == node.attrs.end()) continue;
    bool ok = false;
    Shape shape = ParseShapeHint(hint->second, &ok);
    if (ok && shape.is_complete() && shape.ndim() > 0) shapes[name] = shape;
  }
  known_shapes_ = shapes;
  return CoversRequired(shapes) ? Bind(shapes) : Status();
}

bool Predictor::CoversRequired(const std::map<std::string, Shape>& shapes) const {
  for (const std::string& name : required_inputs_) {
    if (!shapes.count(name)) return false;
  }
  return true;
}

Status Predictor::RequireBound(const char* what) const {
  if (executor_) return Status();
  std::vector<std::string> missing;
  for (const std::string& name : required_inputs_) {
    if (!known_shapes_.count(name)) missing.push_back(name);
  }
  return Status::Error(StrCat(what, " needs the input shapes, which are not known yet (missing ",
                              predictor_cc::NamesList(missing),
                              "): pass input_shapes, call reshape(), or predict once"));
}

Status Predictor::Bind(const std::map<std::string, Shape>& shapes) {
  std::unique_ptr<Executor> executor;
  if (executor_) {
    MXL_RETURN_IF_ERROR(executor_->Reshape(shapes, &executor));
  } else {
    MXL_RETURN_IF_ERROR(Executor::Create(model_, shapes, input_dtypes_, options_, &executor));
  }
  executor_ = std::move(executor);
  known_shapes_ = shapes;
  return Status();
}

Status Predictor::Reshape(const std::map<std::string, Shape>& input_shapes) {
  for (const auto& entry : input_shapes) {
    MXL_RETURN_IF_ERROR(CheckShapeName(entry.first));
    MXL_RETURN_IF_ERROR(CheckInputShape(entry.first, entry.second));
  }
  std::map<std::string, Shape> shapes = known_shapes_;
  for (const auto& entry : input_shapes) shapes[entry.first] = entry.second;
  if (CoversRequired(shapes)) return Bind(shapes);  // on failure the old binding stays
  known_shapes_ = shapes;  // binds at the first Predict
  return Status();
}

Status Predictor::Reshaped(const std::map<std::string, Shape>& input_shapes,
                           std::unique_ptr<Predictor>* out) const {
  MXL_RETURN_IF_ERROR(RequireBound("reshape"));
  std::unique_ptr<Predictor> other(
      new Predictor(full_, model_, rule_, options_, input_dtypes_));
  // Inputs not named keep their shapes; the executor refuses other names.
  MXL_RETURN_IF_ERROR(executor_->Reshape(input_shapes, &other->executor_));
  other->known_shapes_ = other->executor_->input_shapes();
  *out = std::move(other);
  return Status();
}

Status Predictor::WithOutputs(const std::vector<OutputSelector>& outputs,
                              std::unique_ptr<Predictor>* out) const {
  std::shared_ptr<const Model> model;
  MXL_RETURN_IF_ERROR(SelectModelOutputs(*full_, outputs, &model));
  std::unique_ptr<Predictor> other(new Predictor(full_, model, rule_, options_, input_dtypes_));
  std::map<std::string, Shape> shapes;
  for (const std::string& name : other->input_names_) {
    auto known = known_shapes_.find(name);
    if (known != known_shapes_.end()) shapes[name] = known->second;
  }
  other->known_shapes_ = shapes;
  if (other->CoversRequired(shapes)) MXL_RETURN_IF_ERROR(other->Bind(shapes));
  *out = std::move(other);
  return Status();
}

Status Predictor::Predict(const std::vector<InputValue>& inputs, std::vector<NDArray>* outputs) {
  std::map<std::string, Shape> shapes;
  for (const InputValue& input : inputs) {
    MXL_RETURN_IF_ERROR(CheckIsInput(input.name));
    MXL_CHECK(input.dtype == InputDType(input.name), "input '", input.name, "' is ",
              DTypeName(input.dtype), " but the model expects ",
              DTypeName(InputDType(input.name)));
    shapes[input.name] = input.shape;
  }
  std::vector<std::string> missing;
  for (const std::string& name : required_inputs_) {
    if (!shapes.count(name)) missing.push_back(name);
  }
  MXL_CHECK(missing.empty(), "missing input(s) ", predictor_cc::NamesList(missing),
            "; the model's inputs are ", predictor_cc::NamesList(input_names_));
  if (!executor_) {
    // First use of a predictor made without shapes: bind to these.
    for (const auto& entry : shapes) {
      MXL_CHECK(entry.second.ndim() != 0, "input '", entry.first,
                "' is a 0-d array; give it a shape");
      MXL_RETURN_IF_ERROR(CheckInputShape(entry.first, entry.second));
    }
    MXL_RETURN_IF_ERROR(Bind(shapes));
  }
  std::vector<Executor::ExternalInput> external;
  for (const InputValue& input : inputs) {
    auto bound = known_shapes_.find(input.name);
    // A shape-only input the predictor was bound without: its value is
    // never read, and its shape came from inference.
    if (bound == known_shapes_.end()) continue;
    MXL_CHECK(input.shape == bound->second, "input '", input.name, "' has shape ",
              input.shape.ToString(), " but the predictor is bound to ",
              bound->second.ToString(), "; call reshape(", input.name, "=",
              input.shape.ToString(), ") first");
    external.push_back(Executor::ExternalInput{input.name, input.data, input.dtype,
                                               static_cast<size_t>(input.shape.Size())});
  }
  MXL_RETURN_IF_ERROR(executor_->ForwardWithInputs(external));
  return executor_->TakeOutputs(outputs);
}

Status Predictor::OutputShapes(std::vector<Shape>* out) const {
  MXL_RETURN_IF_ERROR(RequireBound("output_shapes"));
  out->clear();
  for (int i = 0; i < executor_->num_outputs(); ++i) out->push_back(executor_->output(i).shape());
  return Status();
}

Status Predictor::Memory(PredictorMemory* out) const {
  MXL_RETURN_IF_ERROR(RequireBound("memory_stats"));
  out->arena_bytes = executor_->memory_plan().arena_bytes;
  out->unshared_bytes = executor_->memory_plan().naive_bytes;
  out->param_bytes = 0;
  for (const auto& param : model_->params) out->param_bytes += param.second.bytes();
  out->prepared_bytes = executor_->prepared_bytes();
  out->float32_copy_bytes = executor_->float32_copy_bytes();
  out->workspace_bytes = executor_->workspace_bytes();
  return Status();
}

std::vector<NodeSummary> Predictor::Nodes() const {
  const Graph& graph = model_->graph;
  EntryShapes shapes;
  bool have_shapes = false;
  if (CoversRequired(known_shapes_)) {
    std::map<std::string, Shape> param_shapes;
    for (const auto& param : model_->params) param_shapes[param.first] = param.second.shape();
    have_shapes = InferShapes(graph, known_shapes_, param_shapes, &shapes).ok();
  }
  std::vector<NodeSummary> nodes;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    NodeSummary summary;
    summary.name = node.name;
    summary.op = node.is_variable() ? std::string("null") : node.op_name;
    summary.attrs = node.attrs;
    for (const NodeEntry& input : node.inputs) {
      summary.inputs.push_back(graph.nodes[input.node].OutputName(input.index));
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      summary.outputs.push_back(node.OutputName(i));
      if (have_shapes) summary.output_shapes.push_back(shapes[n][i]);
    }
    auto param = model_->params.find(node.name);
    if (param != model_->params.end()) summary.param = &param->second;
    summary.is_input = IsInput(node.name);
    nodes.push_back(std::move(summary));
  }
  return nodes;
}

Status Predictor::UseUnoptimized() {
  MXL_RETURN_IF_ERROR(RequireBound("monitoring"));
  if (!executor_->optimized()) return Status();
  std::unique_ptr<Executor> plain;
  MXL_RETURN_IF_ERROR(executor_->Unoptimized(&plain));
  executor_ = std::move(plain);
  return Status();
}

}  // namespace mxlite
