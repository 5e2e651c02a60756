#include "executor.h"

#include <cstring>

namespace mxlite {

Status Executor::Create(std::shared_ptr<const Model> model,
                        const std::map<std::string, Shape>& input_shapes,
                        const std::map<std::string, int>& input_dtypes,
                        std::unique_ptr<Executor>* out) {
  std::unique_ptr<Executor> executor(new Executor());
  executor->model_ = std::move(model);
  executor->input_shapes_ = input_shapes;
  executor->input_dtypes_ = input_dtypes;
  MXL_RETURN_IF_ERROR(executor->Bind(input_dtypes));
  *out = std::move(executor);
  return Status();
}

Status Executor::Reshape(const std::map<std::string, Shape>& input_shapes,
                         std::unique_ptr<Executor>* out) const {
  // Inputs not named keep their current shapes.
  std::map<std::string, Shape> shapes = input_shapes_;
  for (const auto& entry : input_shapes) {
    MXL_CHECK(shapes.count(entry.first), "cannot reshape '", entry.first,
              "': it is not an input of this predictor");
    shapes[entry.first] = entry.second;
  }
  return Create(model_, shapes, input_dtypes_, out);
}

Status Executor::Bind(const std::map<std::string, int>& input_dtypes) {
  const Graph& graph = model_->graph;
  for (const auto& entry : input_shapes_) {
    int node = graph.FindNode(entry.first);
    MXL_CHECK(node >= 0 && graph.nodes[node].is_variable(), "input '", entry.first,
              "' is not an input of the graph");
    MXL_CHECK(entry.second.is_complete(), "input '", entry.first, "' has incomplete shape ",
              entry.second.ToString());
    input_names_.push_back(entry.first);
  }
  // Shapes: inputs are given, parameters only back up what inference leaves.
  std::map<std::string, Shape> param_shapes;
  for (const auto& param : model_->params) param_shapes[param.first] = param.second.shape();
  EntryShapes shapes;
  MXL_RETURN_IF_ERROR(InferShapes(graph, input_shapes_, param_shapes, &shapes));
  std::map<std::string, int> known_dtypes = input_dtypes;
  for (const auto& param : model_->params) known_dtypes[param.first] = param.second.dtype();
  // Inputs typed neither by the caller nor by the params file are float32,
  // as in MXNet's predict API (a "__dtype__" hint does not override that).
  for (const auto& input : input_shapes_) known_dtypes.emplace(input.first, kFloat32);
  // Inputs typed neither by the caller nor by the params file are float32,
  // as in MXNet's predict API (a "__dtype__" hint does not override that).
  for (const auto& input : input_shapes_) known_dtypes.emplace(input.first, kFloat32);
  EntryDTypes dtypes;
  MXL_RETURN_IF_ERROR(InferDTypes(graph, known_dtypes, &dtypes));

  MXL_RETURN_IF_ERROR(BindVariables(shapes, dtypes));

  // Operator outputs live in one planned arena.
  std::vector<std::vector<size_t>> entry_bytes(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (size_t i = 0; i < shapes[n].size(); ++i) {
      MXL_CHECK(shapes[n][i].CheckedSize() >= 0, "output '", graph.nodes[n].OutputName(i),
                "' of node ", graph.Describe(static_cast<int>(n)), " would have shape ",
                shapes[n][i].ToString(), ", which is too large");
      entry_bytes[n].push_back(static_cast<size_t>(shapes[n][i].Size()) *
                               DTypeSize(dtypes[n][i]));
    }
  }
  MXL_RETURN_IF_ERROR(PlanMemory(graph, entry_bytes, &plan_));
  MXL_RETURN_IF_ERROR(Storage::Allocate(plan_.arena_bytes, &arena_));
  ops_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable()) continue;
    for (size_t i = 0; i < shapes[n].size(); ++i) {
      int block = plan_.entry_block[n][i];
      entries_[n][i] = NDArray(shapes[n][i], dtypes[n][i], arena_, plan_.block_offset[block]);
    }
    MXL_RETURN_IF_ERROR(CreateOperator(node.op_name, node.name, node.attrs, &ops_[n]));
  }
  node_inputs_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const NodeEntry& input : graph.nodes[n].inputs) {
      node_inputs_[n].push_back(entries_[input.node][input.index]);
    }
  }
  for (const NodeEntry& output : graph.outputs) {
    outputs_.push_back(entries_[output.node][output.index]);
  }
  return PrepareOperators();
}

Status Executor::BindVariables(const EntryShapes& shapes, const EntryDTypes& dtypes) {
  const Graph& graph = model_->graph;
  // Which variables some operator actually reads.
  std::vector<bool> read(graph.nodes.size(), false);
  std::vector<std::string> reader(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable()) continue;
    std::vector<int> unread = node.op->UnreadInputs();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      bool skipped = false;
      for (int slot : unread) skipped |= slot == static_cast<int>(i);
      if (skipped || read[node.inputs[i].node]) continue;
      read[node.inputs[i].node] = true;
      reader[node.inputs[i].node] =
          StrCat("input '", node.op->InputNames()[i], "' of node ", graph.Describe(static_cast<int>(n)));
    }
  }
  for (const NodeEntry& output : graph.outputs) read[output.node] = true;

  entries_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    entries_[n].resize(node.num_outputs());
    if (!node.is_variable()) continue;
    const Shape& shape = shapes[n][0];
    const int dtype = dtypes[n][0];
    auto param = model_->params.find(node.name);
    if (param != model_->params.end()) {
      MXL_CHECK(param->second.shape() == shape, "parameter '", node.name, "' has shape ",
                param->second.shape().ToString(), " in the params file but the graph needs ",
                shape.ToString());
      MXL_CHECK(param->second.dtype() == dtype, "parameter '", node.name, "' has dtype ",
                DTypeName(param->second.dtype()), " but the graph needs ", DTypeName(dtype));
    }
    if (input_shapes_.count(node.name)) {
      // Inputs are owned; one that is also a parameter starts with its value.
      MXL_RETURN_IF_ERROR(NDArray::Create(shape, dtype, &entries_[n][0]));
      if (param != model_->params.end()) {
        std::memcpy(entries_[n][0].data(), param->second.data(), entries_[n][0].bytes());
      }
    } else if (param != model_->params.end()) {
      entries_[n][0] = param->second;
    } else {
      MXL_CHECK(!read[n], "parameter '", node.name, "' (", reader[n],
                ") is neither in the params file nor among the inputs");
      MXL_RETURN_IF_ERROR(NDArray::Create(shape, dtype, &entries_[n][0]));
    }
  }
  return Status();
}

Status Executor::PrepareOperators() {
  const Graph& graph = model_->graph;
  size_t workspace_bytes = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!ops_[n]) continue;
    size_t bytes = 0;
    Status status = ops_[n]->Prepare(node_inputs_[n], entries_[n], &bytes);
    if (!status.ok()) {
      return Status::Error(StrCat("node ", graph.Describe(static_cast<int>(n)), ": ",
                                  status.message()));
    }
    workspace_bytes = std::max(workspace_bytes, bytes);
  }
  if (workspace_bytes > workspace_bytes_ || !workspace_) {
    MXL_RETURN_IF_ERROR(Storage::Allocate(workspace_bytes, &workspace_));
    workspace_bytes_ = workspace_bytes;
  }
  prepared_ = true;
  return Status();
}

Status Executor::SetInput(const std::string& name, const void* data, size_t count) {
  const Graph& graph = model_->graph;
  int node = graph.FindNode(name);
  MXL_CHECK(node >= 0 && graph.nodes[node].is_variable(), "cannot find input key '", name,
            "' among the graph's arguments");
  NDArray& array = entries_[node][0];
  MXL_CHECK(static_cast<size_t>(array.Size()) == count, "input '", name, "' has shape ",
            array.shape().ToString(), " (", array.Size(), " elements) but ", count,
            " elements were given");
  if (count != 0) std::memcpy(array.data(), data, array.bytes());
  // Writing a parameter (MXNet allows it) invalidates anything an operator
  // derived from it at Prepare time.
  if (!input_shapes_.count(name)) prepared_ = false;
  return Status();
}

Status Executor::RunNode(int n) {
  const Graph& graph = model_->graph;
  if (!ops_[n]) return Status();
  if (!prepared_) MXL_RETURN_IF_ERROR(PrepareOperators());
  const Node& node = graph.nodes[n];
  if (monitor_ && monitor_all_) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      std::string name = node.name + "_" + node.op->InputNames()[i];
      monitor_(name.c_str(), &node_inputs_[n][i], monitor_user_);
    }
  }
  OpContext context;
  context.workspace = workspace_ ? workspace_->data() : nullptr;
  context.workspace_bytes = workspace_bytes_;
  Status status = ops_[n]->Forward(context, node_inputs_[n], entries_[n]);
  if (!status.ok()) {
    return Status::Error(StrCat("node ", graph.Describe(n), ": ", status.message()));
  }
  if (monitor_) {
    // Hidden outputs too (BatchNorm's mean and var), as MXNet reports them.
    for (int i = 0; i < node.num_outputs(); ++i) {
      std::string name = node.OutputName(i);
      monitor_(name.c_str(), &entries_[n][i], monitor_user_);
    }
  }
  return Status();
}

Status Executor::Forward() {
  for (size_t n = 0; n < ops_.size(); ++n) MXL_RETURN_IF_ERROR(RunNode(static_cast<int>(n)));
  return Status();
}

Status Executor::PartialForward(int step, int* step_left) {
  const int count = static_cast<int>(ops_.size());
  MXL_CHECK(step >= 0, "step must not be negative (got ", step, ")");
  if (step < count) MXL_RETURN_IF_ERROR(RunNode(step));
  *step_left = step < count ? count - step - 1 : 0;
  return Status();
}

std::string Executor::output_name(int index) const {
  const NodeEntry& entry = model_->graph.outputs[index];
  return model_->graph.nodes[entry.node].OutputName(entry.index);
}

}  // namespace mxlite
