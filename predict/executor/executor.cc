#include "executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include "../graph/fuse.h"

namespace mxlite {
namespace executor_cc {

// memcpy, split over the pool's threads for large arrays: one core copies
// far below the memory's bandwidth (a batch of 64 images is 38.5 MB).
void CopyBytes(ThreadPool* pool, void* to, const void* from, size_t bytes) {
  constexpr size_t kPiece = size_t{1} << 20;
  if (bytes < 4 * kPiece || pool == nullptr || pool->size() <= 1) {
    std::memcpy(to, from, bytes);
    return;
  }
  const int64_t pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  ParallelFor(pool, pieces, [&](int64_t piece) {
    const size_t begin = static_cast<size_t>(piece) * kPiece;
    std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin,
                std::min(kPiece, bytes - begin));
  });
}

// `whole` is `image` with axis 0 multiplied by `images`.
bool HoldsImages(const Shape& whole, const Shape& image, int64_t images) {
  if (!whole.is_complete() || !image.is_complete() || whole.ndim() != image.ndim() ||
      whole.ndim() == 0 || whole[0] != image[0] * images) {
    return false;
  }
  for (int d = 1; d < whole.ndim(); ++d) {
    if (whole[d] != image[d]) return false;
  }
  return true;
}

// Whether `graph` computes the images of a batch apart (executor.h,
// "Splitting a batch"), given every entry's shapes for the whole batch and
// for one image (one_image). Entries that depend on an input carry the
// batch along axis 0, every operator reading one computes images apart,
// entries that depend on no input keep their shapes, and every graph output
// carries the batch.
bool ComputesImagesApart(const Graph& graph, const std::set<std::string>& inputs,
                         const EntryShapes& whole, const EntryShapes& one_image,
                         int64_t images) {
  std::set<std::pair<int, int>> read, batched;
  for (const Node& node : graph.nodes) {
    for (const NodeEntry& input : node.inputs) read.insert({input.node, input.index});
  }
  for (const NodeEntry& output : graph.outputs) read.insert({output.node, output.index});
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const int id = static_cast<int>(n);
    if (node.is_variable()) {
      if (inputs.count(node.name)) batched.insert({id, 0});
      continue;
    }
    bool reads_batch = false;
    std::vector<Shape> image_in;
    for (const NodeEntry& input : node.inputs) {
      reads_batch |= batched.count({input.node, input.index}) > 0;
      image_in.push_back(one_image[input.node][input.index]);
    }
    if (reads_batch && !node.op->ComputesImagesApart(image_in)) return false;
    for (int i = 0; i < node.num_outputs(); ++i) {
      if (!read.count({id, i})) continue;  // a hidden output nothing reads
      if (reads_batch) {
        if (!HoldsImages(whole[n][i], one_image[n][i], images)) return false;
        batched.insert({id, i});
      } else if (!(whole[n][i] == one_image[n][i])) {
        return false;
      }
    }
  }
  for (const NodeEntry& output : graph.outputs) {
    if (graph.nodes[output.node].is_variable() || !batched.count({output.node, output.index})) {
      return false;
    }
  }
  return true;
}

}  // namespace executor_cc

Status Executor::Create(std::shared_ptr<const Model> model,
                        const std::map<std::string, Shape>& input_shapes,
                        const std::map<std::string, int>& input_dtypes,
                        const RuntimeOptions& options, std::unique_ptr<Executor>* out) {
  return Make(std::move(model), input_shapes, input_dtypes, options, nullptr, nullptr, out);
}

Status Executor::Make(std::shared_ptr<const Model> model,
                      const std::map<std::string, Shape>& input_shapes,
                      const std::map<std::string, int>& input_dtypes,
                      const RuntimeOptions& options, std::shared_ptr<ThreadPool> pool,
                      std::shared_ptr<Storage> reusable_arena, std::unique_ptr<Executor>* out) {
  std::unique_ptr<Executor> executor(new Executor());
  executor->options_ = options;
  executor->reusable_arena_ = std::move(reusable_arena);
  if (options.profile != 0) {
    executor->profile_.reset(new std::map<std::string, OpProfile>());
  }
  MXL_RETURN_IF_ERROR(
      OptimizeGraph(model->graph, executor->options_.graph_optimization,
                    options.device_id >= 0 ? FusionTarget::kCuda : FusionTarget::kCpu,
                    &executor->graph_));
  if (pool) {
    executor->pool_ = std::move(pool);
  } else if (options.share_threads) {
    executor->pool_ = SharedThreadPool(options.threads, options.spin_ms);
  } else {
    executor->pool_ = std::make_shared<ThreadPool>(
        options.threads > 0 ? options.threads : ThreadPool::DefaultThreads(), options.spin_ms);
  }
  executor->model_ = std::move(model);
  executor->input_shapes_ = input_shapes;
  executor->input_dtypes_ = input_dtypes;
  if (options.graph_optimization && options.fold_constants && options.device_id < 0) {
    MXL_RETURN_IF_ERROR(executor->FoldConstants());
  }
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
  // Same options and threads as this executor.
  return Make(model_, shapes, input_dtypes_, options_, pool_, arena_, out);
}

Status Executor::Unoptimized(std::unique_ptr<Executor>* out) const {
  RuntimeOptions options = options_;
  options.graph_optimization = false;
  MXL_RETURN_IF_ERROR(Make(model_, input_shapes_, input_dtypes_, options, pool_, nullptr, out));
  // Carry the inputs over, so the switch is invisible to the caller.
  for (const std::string& name : input_names_) {
    const NDArray& from = entries_[graph_.FindNode(name)][0];
    const NDArray& to = (*out)->entries_[(*out)->graph_.FindNode(name)][0];
    std::memcpy(to.data(), from.data(), from.bytes());
  }
  return Status();
}

/*
 * Constant folding. Exported Gluon models compute some operators' inputs
 * from parameters alone on every pass: GluonNLP's attention reshapes and
 * joins its query, key and value weights (bert_12_768_12: 4% of a pass in
 * Reshape, 3.4% in Concat, and the product then packs the joined weights
 * every time); Gluon's recurrent layers join theirs with
 * _rnn_param_concat. With graph optimisation on, the nodes that only
 * rearrange parameters (kFoldableOperators: one output, no arithmetic, no
 * growth) and read nothing else are computed once: a separate executor
 * runs that part of the graph, the values are kept in the model's
 * PreparedCache (so handles and reshapes of one model share them), and
 * each such node that something else reads becomes a variable of the same
 * name whose value is the folded one. The nodes only they read are pruned.
 * Graph outputs are never folded, and the model's own graph is untouched
 * (monitoring and Unoptimized see every node). The cost is memory: the
 * folded values live beside the parameters they came from (and a product
 * reading them keeps its packed weights); fold_constants=0 saves it.
 */
namespace executor_cc {

// Names in place, not pointers: a table of pointers is a relocation each.
constexpr char kFoldableOperators[][18] = {
    "Reshape", "expand_dims", "squeeze", "Flatten",    "transpose",         "SwapAxis",
    "slice",   "slice_axis",  "Concat",  "stack",      "_rnn_param_concat", "Cast"};

bool IsFoldable(const Node& node) {
  if (node.is_variable() || node.inputs.empty() || node.num_outputs() != 1) return false;
  for (const char* name : kFoldableOperators) {
    if (node.op_name == name) return true;
  }
  return false;
}

struct FoldedConstants {
  std::vector<NDArray> values;  // one per folded node, in node order
};

}  // namespace executor_cc

Status Executor::FoldConstants() {
  using executor_cc::FoldedConstants;
  Graph& graph = graph_;
  const size_t count = graph.nodes.size();
  std::vector<char> constant(count, 0), output(count, 0), folded(count, 0);
  for (const NodeEntry& entry : graph.outputs) output[static_cast<size_t>(entry.node)] = 1;
  for (size_t n = 0; n < count; ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable()) {
      constant[n] = model_->params.count(node.name) != 0 && input_shapes_.count(node.name) == 0;
      continue;
    }
    if (output[n] || !executor_cc::IsFoldable(node)) continue;
    bool all = true;
    for (const NodeEntry& in : node.inputs) all = all && constant[static_cast<size_t>(in.node)];
    constant[n] = all;
  }
  // The constant operator nodes that a computed node reads.
  std::vector<int> frontier;
  for (size_t n = 0; n < count; ++n) {
    if (constant[n]) continue;
    for (const NodeEntry& in : graph.nodes[n].inputs) {
      const size_t from = static_cast<size_t>(in.node);
      if (constant[from] && !graph.nodes[from].is_variable() && !folded[from]) {
        folded[from] = 1;
        frontier.push_back(in.node);
      }
    }
  }
  if (frontier.empty()) return Status();
  std::sort(frontier.begin(), frontier.end());
  std::string key = "folded constants:";
  for (int n : frontier) key += StrCat(graph.nodes[static_cast<size_t>(n)].name, ",");
  std::shared_ptr<const FoldedConstants> values;
  MXL_RETURN_IF_ERROR(model_->prepared->FindOrMake<FoldedConstants>(
      key,
      [&](std::shared_ptr<const FoldedConstants>* out) {
        auto part = std::make_shared<Model>();
        part->graph = graph;
        part->graph.outputs.clear();
        for (int n : frontier) part->graph.outputs.push_back(NodeEntry{n, 0});
        PruneToOutputs(&part->graph);
        part->params = model_->params;
        RuntimeOptions options = options_;
        options.graph_optimization = false;
        options.profile = 0;
        std::unique_ptr<Executor> executor;
        MXL_RETURN_IF_ERROR(Make(part, {}, {}, options, pool_, nullptr, &executor));
        MXL_RETURN_IF_ERROR(executor->Forward());
        auto made = std::make_shared<FoldedConstants>();
        MXL_RETURN_IF_ERROR(executor->TakeOutputs(&made->values));
        *out = std::move(made);
        return Status();
      },
      &values));
  auto model = std::make_shared<Model>(*model_);
  for (size_t i = 0; i < frontier.size(); ++i) {
    Node& node = graph.nodes[static_cast<size_t>(frontier[i])];
    model->params[node.name] = values->values[i];
    node.op.reset();
    node.op_name = "null";
    node.attrs = AttrMap();
    node.inputs.clear();
    node.subgraph.reset();
  }
  PruneToOutputs(&graph);
  model_ = std::move(model);
  folded_constants_ = std::move(values);
  return Status();
}

Status Executor::Bind(const std::map<std::string, int>& input_dtypes) {
  const Graph& graph = graph_;
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
  std::map<std::string, int> known_dtypes = input_dtypes;
  for (const auto& param : model_->params) known_dtypes[param.first] = param.second.dtype();
  // Inputs typed neither by the caller nor by the params file are float32,
  // as in MXNet's predict API (a "__dtype__" hint does not override that).
  for (const auto& input : input_shapes_) known_dtypes.emplace(input.first, kFloat32);
  EntryShapes shapes;
  EntryDTypes dtypes;
  if (optimized()) {
    // Check the graph as written first, so that every error names the
    // user's nodes rather than fused ones.
    MXL_RETURN_IF_ERROR(InferShapes(model_->graph, input_shapes_, param_shapes, &shapes));
    MXL_RETURN_IF_ERROR(InferDTypes(model_->graph, known_dtypes, &dtypes));
    MXL_RETURN_IF_ERROR(BindVariables(model_->graph, shapes, dtypes, false));
  }
  MXL_RETURN_IF_ERROR(InferShapes(graph, input_shapes_, param_shapes, &shapes));
  MXL_RETURN_IF_ERROR(InferDTypes(graph, known_dtypes, &dtypes));
  if (options_.split_batch != RuntimeOptions::SplitBatch::kOff && optimized() &&
      options_.device_id < 0) {
    MXL_RETURN_IF_ERROR(SplitBatch(shapes, dtypes, param_shapes));
    if (!image_workers_.empty()) return Status();
  }

  // Operator outputs live in one planned arena.
  std::vector<std::vector<size_t>> entry_bytes;
  MXL_RETURN_IF_ERROR(EntryBytes(graph, shapes, dtypes, &entry_bytes));
  // Optimised graphs also get their Concat inputs written in place.
  std::vector<EntryPart> parts;
  if (optimized()) MXL_RETURN_IF_ERROR(FindEntryParts(graph, shapes, dtypes, &parts));
  MXL_RETURN_IF_ERROR(PlanMemory(graph, entry_bytes, parts, PlanOptions(), &plan_));
  // Nothing is allocated before the budget is checked: an absurd input
  // shape is an error here, not an out-of-memory kill later.
  activation_bytes_ = 0;
  for (const auto& input : input_shapes_) {
    const int node = graph.FindNode(input.first);
    activation_bytes_ = AddBytes(activation_bytes_, entry_bytes[node][0]);
  }
  activation_bytes_ = AddBytes(activation_bytes_, plan_.arena_bytes);
  for (const NodeEntry& output : graph.outputs) {
    if (graph.nodes[output.node].is_variable()) continue;
    activation_bytes_ =
        AddBytes(activation_bytes_, plan_.block_bytes[plan_.entry_block[output.node][output.index]]);
  }
  MXL_RETURN_IF_ERROR(CheckMemoryBudget(activation_bytes_, "its inputs, intermediate results "
                                                           "and outputs"));
  MXL_RETURN_IF_ERROR(BindVariables(graph, shapes, dtypes, true));
  if (reusable_arena_ && reusable_arena_->bytes() >= plan_.arena_bytes) {
    arena_ = reusable_arena_;  // MXPredReshape to a size that fits: no new memory
  } else {
    MXL_RETURN_IF_ERROR(Storage::Allocate(plan_.arena_bytes, &arena_));
  }
  reusable_arena_.reset();
  // Blocks holding a graph output get storage of their own, so that
  // TakeOutputs can hand them to the caller without copying.
  block_storage_.assign(plan_.block_bytes.size(), nullptr);
  for (const NodeEntry& output : graph.outputs) {
    if (graph.nodes[output.node].is_variable()) continue;
    const int block = plan_.entry_block[output.node][output.index];
    if (!block_storage_[block]) {
      MXL_RETURN_IF_ERROR(Storage::Allocate(plan_.block_bytes[block], &block_storage_[block]));
    }
  }
  ops_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable()) continue;
    for (size_t i = 0; i < shapes[n].size(); ++i) {
      const int block = plan_.entry_block[n][i];
      const size_t offset = plan_.entry_offset[n][i];
      if (block_storage_[block]) {
        entries_[n][i] = NDArray(shapes[n][i], dtypes[n][i], block_storage_[block], offset);
      } else {
        entries_[n][i] =
            NDArray(shapes[n][i], dtypes[n][i], arena_, plan_.block_offset[block] + offset);
      }
    }
    // The graph may hold the optimiser's own operators (graph/fuse.cc).
    MXL_RETURN_IF_ERROR(
        CreateNodeOperator(node, OpSource::kInternal, &ops_[n]));
    ops_[n]->set_runtime_options(&options_);
    ops_[n]->set_thread_pool(pool_.get());
    std::vector<int> input_dtypes;
    for (const NodeEntry& input : node.inputs) input_dtypes.push_back(dtypes[input.node][input.index]);
    ops_[n]->SetDTypes(input_dtypes, dtypes[n]);
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
  float32_copies_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (ops_[n]) MXL_RETURN_IF_ERROR(MakeFloat32Copies(static_cast<int>(n)));
  }
  if (options_.device_id >= 0) {
    MXL_RETURN_IF_ERROR(CreateCudaRunner(this, options_.device_id, &device_));
  }
  return PrepareOperators();
}

Status Executor::SplitBatch(const EntryShapes& shapes, const EntryDTypes& dtypes,
                            const std::map<std::string, Shape>& param_shapes) {
  using executor_cc::ComputesImagesApart;
  // Every input holds the same number of images, two or more, along axis 0.
  int64_t images = 0;
  std::map<std::string, Shape> image_shapes;
  std::set<std::string> inputs;
  for (const auto& input : input_shapes_) {
    const Shape& shape = input.second;
    // (An input that is also a parameter has the batch's shape in the
    // params file: it stays whole.)
    if (shape.ndim() == 0 || shape[0] < 2 || (images != 0 && shape[0] != images) ||
        model_->params.count(input.first)) {
      return Status();
    }
    images = shape[0];
    std::vector<int64_t> dims = shape.dims();
    dims[0] = 1;
    image_shapes[input.first] = Shape(dims);
    inputs.insert(input.first);
  }
  if (images == 0) return Status();
  EntryShapes one_image;
  if (!InferShapes(graph_, image_shapes, param_shapes, &one_image).ok() ||
      !ComputesImagesApart(graph_, inputs, shapes, one_image, images)) {
    return Status();
  }
  // Splitting trades memory traffic. Layer by layer, one image's
  // intermediate results (all of them, `activations` bytes) leave the caches
  // between layers; image by image they stay, but the weights are read once
  // per image instead of once per batch. Measured on the zoo models at batch
  // 8 (docs/performance.md), splitting pays where the weights are the
  // smaller (squeezenet, the MobileNets, densenet121) and loses where they
  // are the larger (resnet18_v1 5%, resnet50_v2 13%, vgg11 20%); auto
  // splits the first kind only.
  if (options_.split_batch == RuntimeOptions::SplitBatch::kAuto) {
    std::vector<std::vector<size_t>> entry_bytes;
    MXL_RETURN_IF_ERROR(EntryBytes(graph_, one_image, dtypes, &entry_bytes));
    size_t weights = 0, activations = 0;
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const Node& node = graph_.nodes[n];
      if (!node.is_variable()) {
        for (size_t bytes : entry_bytes[n]) activations = AddBytes(activations, bytes);
        continue;
      }
      auto param = model_->params.find(node.name);
      if (param != model_->params.end()) weights = AddBytes(weights, param->second.bytes());
    }
    if (weights >= activations) return Status();
  }
  // Workers: one per thread, each with one thread, when every thread gets
  // its share of images (the batch divides evenly, or each thread gets two
  // or more); else one worker with all the threads.
  const int threads = pool_ ? pool_->size() : 1;
  const int workers = threads > 1 && (images % threads == 0 || images >= 2 * threads)
                          ? threads : 1;
  std::vector<std::unique_ptr<Executor>> made(workers);
  for (int w = 0; w < workers; ++w) {
    RuntimeOptions options = options_;
    options.split_batch = RuntimeOptions::SplitBatch::kOff;
    if (w > 0) options.profile = 0;  // one profile, of worker 0's images
    std::shared_ptr<ThreadPool> pool = pool_;
    if (workers > 1) {
      options.threads = 1;
      pool = std::make_shared<ThreadPool>(1, options.spin_ms);
    }
    // A worker that cannot be made (its memory budget, say) leaves the
    // batch whole, where binding reports any error in the batch's terms.
    if (!Make(model_, image_shapes, input_dtypes_, options, pool, nullptr, &made[w]).ok()) {
      return Status();
    }
  }
  // The batch's inputs and outputs, and the budget over all workers (the
  // prepared weights, shared, once).
  const Graph& graph = graph_;
  size_t bytes = made[0]->prepared_bytes_;
  size_t copies = 0, workspaces = 0, arenas = 0;
  for (const auto& worker : made) {
    bytes = AddBytes(bytes, worker->activation_bytes_);
    copies = AddBytes(copies, worker->copy_bytes_);
    workspaces = AddBytes(workspaces, worker->workspace_bytes_);
    arenas = AddBytes(arenas, worker->plan_.arena_bytes);
  }
  bytes = AddBytes(AddBytes(bytes, copies), workspaces);
  for (const auto& input : input_shapes_) {
    const int node = graph.FindNode(input.first);
    bytes = AddBytes(bytes, static_cast<size_t>(input.second.Size()) * DTypeSize(dtypes[node][0]));
  }
  for (const NodeEntry& output : graph.outputs) {
    bytes = AddBytes(bytes, static_cast<size_t>(shapes[output.node][output.index].Size()) *
                                DTypeSize(dtypes[output.node][output.index]));
  }
  if (bytes > MemoryBudget(options_)) return Status();
  entries_.assign(graph.nodes.size(), {});
  for (const auto& input : input_shapes_) {
    const int node = graph.FindNode(input.first);
    entries_[node].resize(1);
    MXL_RETURN_IF_ERROR(NDArray::Create(input.second, dtypes[node][0], &entries_[node][0]));
  }
  for (const NodeEntry& output : graph.outputs) {
    outputs_.emplace_back();
    MXL_RETURN_IF_ERROR(NDArray::Create(shapes[output.node][output.index],
                                        dtypes[output.node][output.index], &outputs_.back()));
  }
  plan_ = made[0]->plan_;
  plan_.arena_bytes = arenas;
  plan_.naive_bytes = made[0]->plan_.naive_bytes * static_cast<size_t>(images);
  activation_bytes_ = bytes;
  copy_bytes_ = copies;
  workspace_bytes_ = workspaces;
  prepared_bytes_ = made[0]->prepared_bytes_;
  image_workers_ = std::move(made);
  batch_images_ = images;
  prepared_ = true;
  return Status();
}

Status Executor::ForwardImages(const std::vector<const char*>& sources) {
  const int workers = static_cast<int>(image_workers_.size());
  std::vector<Status> results(workers);
  auto run = [&](int64_t w) {
    Executor& worker = *image_workers_[w];
    std::vector<ExternalInput> inputs;
    for (size_t k = 0; k < input_names_.size(); ++k) {
      const NDArray& image = worker.entries_[worker.graph_.FindNode(input_names_[k])][0];
      inputs.push_back({input_names_[k], nullptr, image.dtype(), static_cast<size_t>(image.Size())});
    }
    const int64_t first = batch_images_ * w / workers, last = batch_images_ * (w + 1) / workers;
    for (int64_t i = first; i < last; ++i) {
      for (size_t k = 0; k < inputs.size(); ++k) {
        inputs[k].data = sources[k] + i * inputs[k].count * DTypeSize(inputs[k].dtype);
      }
      Status status = worker.ForwardWithInputs(inputs);
      if (!status.ok()) {
        results[w] = status;
        return;
      }
      for (size_t k = 0; k < outputs_.size(); ++k) {
        const NDArray& image = worker.outputs_[k];
        std::memcpy(static_cast<char*>(outputs_[k].data()) + i * image.bytes(), image.data(),
                    image.bytes());
      }
    }
  };
  if (workers == 1) {
    run(0);
  } else {
    ParallelFor(pool_.get(), workers, run);
  }
  for (const Status& status : results) MXL_RETURN_IF_ERROR(status);
  return Status();
}

size_t Executor::AddBytes(size_t a, size_t b) {
  return a > std::numeric_limits<size_t>::max() - b ? std::numeric_limits<size_t>::max() : a + b;
}

Status Executor::CheckMemoryBudget(size_t bytes, const char* what) const {
  const uint64_t budget = MemoryBudget(options_);
  MXL_CHECK(bytes <= budget, "binding these input shapes needs ", FormatBytes(bytes), " for ",
            what, ", over the memory budget of ", FormatBytes(budget),
            " (set the memory_budget option or MXLITE_MEMORY_BUDGET to allow more)");
  return Status();
}

const NDArray* Executor::ConstantParameter(int n, int i) const {
  const Node& from = graph_.nodes[graph_.nodes[n].inputs[i].node];
  if (!from.is_variable() || input_shapes_.count(from.name)) return nullptr;
  auto param = model_->params.find(from.name);
  return param == model_->params.end() ? nullptr : &param->second;
}

Status Executor::MakeFloat32Copies(int n) {
  // Copies made again (a float16 parameter was overwritten) replace the
  // node's old ones only once they are all made.
  const size_t old_bytes = float32_copies_[n] ? float32_copies_[n]->bytes : 0;
  if (ops_[n]->MovesBytesOnly()) return Status();  // runs in the arrays' own dtype
  bool all_float32 = true;
  for (const NDArray& array : node_inputs_[n]) all_float32 &= array.dtype() == kFloat32;
  for (const NDArray& array : entries_[n]) all_float32 &= array.dtype() == kFloat32;
  if (all_float32) return Status();
  // Each copy is counted in the budget before it is made.
  std::unique_ptr<Float32Copies> copies(new Float32Copies());
  auto reserve = [&](const NDArray& array) {
    const size_t bytes = static_cast<size_t>(array.Size()) * sizeof(float);
    copies->bytes = AddBytes(copies->bytes, bytes);
    return CheckMemoryBudget(AddBytes(BudgetedBytes() - old_bytes, copies->bytes),
                             "its activations and their float32 copies for operators "
                             "that compute in float32");
  };
  for (size_t i = 0; i < node_inputs_[n].size(); ++i) {
    const NDArray& array = node_inputs_[n][i];
    copies->inputs.push_back(array);
    copies->converted_once.push_back(false);
    if (array.dtype() == kFloat32) continue;
    MXL_RETURN_IF_ERROR(reserve(array));
    const NDArray* param = ConstantParameter(n, static_cast<int>(i));
    if (param == nullptr) {
      MXL_RETURN_IF_ERROR(NDArray::Create(array.shape(), kFloat32, &copies->inputs.back()));
      continue;
    }
    // A parameter is converted once, and the copy shared by every
    // executor of the model.
    std::shared_ptr<const NDArray> converted;
    MXL_RETURN_IF_ERROR(model_->prepared->FindOrMake<NDArray>(
        StrCat(reinterpret_cast<uintptr_t>(param->data()), ",float32 copy"),
        [&](std::shared_ptr<const NDArray>* made) {
          NDArray copy;
          MXL_RETURN_IF_ERROR(param->ToFloat32(&copy));
          *made = std::make_shared<const NDArray>(copy);
          return Status();
        },
        &converted));
    copies->inputs.back() = *converted;
    copies->converted_once.back() = true;
    copies->shared.push_back(std::move(converted));
  }
  for (const NDArray& array : entries_[n]) {
    copies->outputs.push_back(array);
    if (array.dtype() != kFloat32) {
      MXL_RETURN_IF_ERROR(reserve(array));
      MXL_RETURN_IF_ERROR(NDArray::Create(array.shape(), kFloat32, &copies->outputs.back()));
    }
  }
  copy_bytes_ = AddBytes(copy_bytes_ - old_bytes, copies->bytes);
  float32_copies_[n] = std::move(copies);
  return Status();
}

void Executor::CopyInputsToFloat32(int n) {
  const std::vector<NDArray>& typed = node_inputs_[n];
  for (size_t i = 0; i < typed.size(); ++i) {
    if (typed[i].dtype() == kFloat32 || float32_copies_[n]->converted_once[i]) continue;
    ConvertToFloat32(typed[i].dtype(), typed[i].data(), static_cast<size_t>(typed[i].Size()),
                     float32_copies_[n]->inputs[i].fdata());
  }
}

void Executor::CopyOutputsFromFloat32(int n) {
  const std::vector<NDArray>& typed = entries_[n];
  for (size_t i = 0; i < typed.size(); ++i) {
    if (typed[i].dtype() == kFloat32) continue;
    ConvertFromFloat32(typed[i].dtype(), float32_copies_[n]->outputs[i].fdata(),
                       static_cast<size_t>(typed[i].Size()), typed[i].data());
  }
}

Status Executor::BindVariables(const Graph& graph, const EntryShapes& shapes,
                               const EntryDTypes& dtypes, bool allocate) {
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

  if (allocate) entries_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (allocate) entries_[n].resize(node.num_outputs());
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
    if (!allocate) {
      MXL_CHECK(param != model_->params.end() || input_shapes_.count(node.name) || !read[n],
                "parameter '", node.name, "' (", reader[n],
                ") is neither in the params file nor among the inputs");
      continue;
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
  const Graph& graph = graph_;
  size_t workspace_bytes = 0;
  // Prepared weights are counted as each operator makes (or shares) them,
  // so a model past its budget fails at the first layer beyond it.
  prepared_bytes_ = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!ops_[n]) continue;
    if (device_ && device_->RunsNode(static_cast<int>(n))) continue;  // a GPU kernel runs it
    size_t bytes = 0;
    // The parameters keep their values until the next Prepare (SetInput on
    // one forces it); anything else may change between runs.
    // Their arrays, which the model owns, identify them to the model's
    // cache of prepared weights.
    std::vector<bool> constant;
    std::vector<const void*> identities;
    for (size_t i = 0; i < graph.nodes[n].inputs.size(); ++i) {
      const NDArray* param = ConstantParameter(static_cast<int>(n), static_cast<int>(i));
      constant.push_back(param != nullptr);
      identities.push_back(param ? param->data() : nullptr);
    }
    ops_[n]->set_constant_inputs(std::move(constant));
    ops_[n]->set_prepared_cache(model_->prepared.get(), std::move(identities));
    const Float32Copies* copies = float32_copies_[n].get();
    if (copies) CopyInputsToFloat32(static_cast<int>(n));  // weights a Prepare may read
    Status status = copies ? ops_[n]->Prepare(copies->inputs, copies->outputs, &bytes)
                           : ops_[n]->Prepare(node_inputs_[n], entries_[n], &bytes);
    if (!status.ok()) {
      return Status::Error(StrCat("node ", graph.Describe(static_cast<int>(n)), ": ",
                                  status.message()));
    }
    workspace_bytes = std::max(workspace_bytes, bytes);
    prepared_bytes_ = AddBytes(prepared_bytes_, ops_[n]->PreparedBytes());
    MXL_RETURN_IF_ERROR(CheckMemoryBudget(
        BudgetedBytes(), "its activations and prepared weights (the packed, transformed and "
                         "BatchNorm-folded copies of the parameters that the fast kernels "
                         "read; compact_weights keeps none)"));
  }
  MXL_RETURN_IF_ERROR(CheckMemoryBudget(AddBytes(BudgetedBytes(), workspace_bytes),
                                        "its activations, prepared weights and operator "
                                        "scratch space"));
  if (workspace_bytes > workspace_bytes_ || !workspace_) {
    MXL_RETURN_IF_ERROR(Storage::Allocate(workspace_bytes, &workspace_));
    workspace_bytes_ = workspace_bytes;
  }
  prepared_ = true;
  return Status();
}

Status Executor::SetInput(const std::string& name, const void* data, size_t count) {
  if (!image_workers_.empty() && !input_shapes_.count(name)) {
    for (const auto& worker : image_workers_) {
      MXL_RETURN_IF_ERROR(worker->SetInput(name, data, count));
    }
    return Status();
  }
  const Graph& graph = graph_;
  int node = graph.FindNode(name);
  MXL_CHECK(node >= 0 && graph.nodes[node].is_variable(), "cannot find input key '", name,
            "' among the graph's arguments");
  NDArray& array = entries_[node][0];
  MXL_CHECK(static_cast<size_t>(array.Size()) == count, "input '", name, "' has shape ",
            array.shape().ToString(), " (", array.Size(), " elements) but ", count,
            " elements were given");
  if (count != 0) executor_cc::CopyBytes(pool_.get(), array.data(), data, array.bytes());
  // Writing a parameter (MXNet allows it) invalidates anything an operator
  // derived from it at Prepare time, here and in the model's cache.
  if (!input_shapes_.count(name)) {
    prepared_ = false;
    model_->prepared->Clear();
    if (array.dtype() != kFloat32) {  // its float32 copies were converted once
      for (size_t n = 0; n < float32_copies_.size(); ++n) {
        if (float32_copies_[n]) MXL_RETURN_IF_ERROR(MakeFloat32Copies(static_cast<int>(n)));
      }
    }
  }
  return Status();
}

Status Executor::RunNode(int n) {
  const Graph& graph = graph_;
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
  context.pool = pool_.get();
  const bool timed = profile_ != nullptr;
  const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  const Float32Copies* copies = float32_copies_[n].get();
  if (copies) CopyInputsToFloat32(n);
  Status status = copies ? ops_[n]->Forward(context, copies->inputs, copies->outputs)
                         : ops_[n]->Forward(context, node_inputs_[n], entries_[n]);
  if (copies && status.ok()) CopyOutputsFromFloat32(n);
  if (timed) {
    if (profile_ran_.size() <= static_cast<size_t>(n)) profile_ran_.resize(ops_.size());
    const bool first_run = !profile_ran_[n];
    profile_ran_[n] = true;
    AddToProfile(n, ops_[n]->KernelName(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                 first_run);
  }
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

void Executor::AddToProfile(int n, const std::string& kernel, double seconds,
                            bool first_run) {
  const Node& node = graph_.nodes[n];
  std::string key = kernel.empty() ? node.op_name : node.op_name + " " + kernel;
  if (options_.profile == 2) {
    // Zero-padded node number first, so the map prints in execution order.
    char number[16];
    std::snprintf(number, sizeof(number), "%05d ", n);
    key = StrCat(number, node.name, " ", key, " -> ", entries_[n][0].shape().ToString());
  }
  OpProfile& entry = (*profile_)[key];
  if (first_run) {
    entry.first_seconds += seconds;
    entry.first_calls += 1;
    return;
  }
  entry.seconds += seconds;
  entry.calls += 1;
  if (profile_later_runs_.size() <= static_cast<size_t>(n)) {
    profile_later_runs_.resize(static_cast<size_t>(n) + 1);
  }
  profile_later_runs_[n] += 1;
}

Executor::~Executor() {
  if (!profile_ || profile_->empty()) return;
  // Profile 1 (2): where the time went, per operator type (node), on
  // stderr: the mean of the passes after the first, and the first apart;
  // from a single pass, that pass.
  int64_t passes = 0;
  for (int64_t runs : profile_later_runs_) passes = std::max(passes, runs);
  const bool later = passes > 0;
  double total = 0, first_total = 0;
  int64_t first_calls = 0;
  for (const auto& entry : *profile_) {
    total += entry.second.seconds;
    first_total += entry.second.first_seconds;
    first_calls += entry.second.first_calls;
  }
  const double per_pass = later ? total / static_cast<double>(passes) : first_total;
  const int threads = pool_ ? pool_->size() : 1;
  if (!later) {
    std::fprintf(stderr, "mxlite profile (%d threads): %.3f ms in operators in one pass\n",
                 threads, per_pass * 1e3);
  } else if (first_calls == 0) {
    // (The CUDA runner times no first pass.)
    std::fprintf(stderr,
                 "mxlite profile (%d threads): %.3f ms in operators a pass, the mean of %lld\n",
                 threads, per_pass * 1e3, static_cast<long long>(passes));
  } else {
    std::fprintf(stderr,
                 "mxlite profile (%d threads): %.3f ms in operators a pass, the mean of the %lld "
                 "after the first (the first: %.3f ms)\n",
                 threads, per_pass * 1e3, static_cast<long long>(passes), first_total * 1e3);
  }
  for (const auto& entry : *profile_) {
    const OpProfile& op = entry.second;
    const double ms = (later ? op.seconds / static_cast<double>(passes) : op.first_seconds) * 1e3;
    const double share = per_pass > 0 ? 100 * ms / (per_pass * 1e3) : 0.0;
    const long long calls = static_cast<long long>(op.calls + op.first_calls);
    if (later && first_calls > 0) {
      std::fprintf(stderr, "  %-48s %9.3f ms %5.1f%%  first %9.3f ms %7lld calls\n",
                   entry.first.c_str(), ms, share, op.first_seconds * 1e3, calls);
    } else {
      std::fprintf(stderr, "  %-48s %9.3f ms %5.1f%% %7lld calls\n", entry.first.c_str(), ms,
                   share, calls);
    }
  }
}

Status Executor::Forward() {
  if (device_) return device_->Forward();
  if (!image_workers_.empty()) return ForwardImages(InputSources());
  for (size_t n = 0; n < ops_.size(); ++n) MXL_RETURN_IF_ERROR(RunNode(static_cast<int>(n)));
  return Status();
}

Status Executor::PartialForward(int step, int* step_left) {
  const int count = static_cast<int>(ops_.size());
  MXL_CHECK(step >= 0, "step must not be negative (got ", step, ")");
  if (step < count) MXL_RETURN_IF_ERROR(device_ ? device_->RunStep(step) : RunNode(step));
  *step_left = step < count ? count - step - 1 : 0;
  return Status();
}

std::string Executor::output_name(int index) const {
  const NodeEntry& entry = graph_.outputs[index];
  return graph_.nodes[entry.node].OutputName(entry.index);
}

Status Executor::CheckExternalInput(const ExternalInput& input) const {
  MXL_CHECK(input_shapes_.count(input.name), "'", input.name,
            "' is not an input of this predictor");
  const NDArray& array = entries_[graph_.FindNode(input.name)][0];
  MXL_CHECK(input.dtype == array.dtype(), "input '", input.name, "' is ",
            DTypeName(input.dtype), " but the predictor expects ", DTypeName(array.dtype()));
  MXL_CHECK(input.count == static_cast<size_t>(array.Size()), "input '", input.name,
            "' has shape ", array.shape().ToString(), " (", array.Size(), " elements) but ",
            input.count, " elements were given");
  return Status();
}

std::vector<const char*> Executor::InputSources() const {
  std::vector<const char*> sources;
  for (const std::string& name : input_names_) {
    sources.push_back(static_cast<const char*>(entries_[graph_.FindNode(name)][0].data()));
  }
  return sources;
}

Status Executor::ForwardWithInputs(const std::vector<ExternalInput>& inputs) {
  const Graph& graph = graph_;
  // Each input's storage is pointed at the caller's buffer for this pass, so
  // every view of the input (each operator's gathered inputs) reads it, and
  // is pointed back afterwards, on success or failure.
  std::vector<std::pair<Storage*, void*>> lent;  // storage, its own memory
  auto lend = [&](const ExternalInput& input) -> Status {
    MXL_RETURN_IF_ERROR(CheckExternalInput(input));
    const int node = graph.FindNode(input.name);
    const NDArray& array = entries_[node][0];
    bool is_output = input.count == 0;
    for (const NodeEntry& output : graph.outputs) is_output |= output.node == node;
    // An output must still hold the value after the pass: copy that one.
    if (is_output) return SetInput(input.name, input.data, input.count);
    Storage* storage = array.storage().get();
    lent.emplace_back(storage, storage->ExchangeData(const_cast<void*>(input.data)));
    return Status();
  };
  if (!image_workers_.empty()) {
    // The workers read the caller's images in place.
    std::vector<const char*> sources = InputSources();
    for (const ExternalInput& input : inputs) {
      MXL_RETURN_IF_ERROR(CheckExternalInput(input));
      for (size_t k = 0; k < input_names_.size(); ++k) {
        if (input_names_[k] == input.name) sources[k] = static_cast<const char*>(input.data);
      }
    }
    return ForwardImages(sources);
  }
  Status status;
  for (const ExternalInput& input : inputs) {
    status = lend(input);
    if (!status.ok()) break;
  }
  if (status.ok()) status = Forward();
  for (auto it = lent.rbegin(); it != lent.rend(); ++it) it->first->ExchangeData(it->second);
  return status;
}

Status Executor::TakeOutputs(std::vector<NDArray>* out) {
  const Graph& graph = graph_;
  if (!image_workers_.empty()) {
    // The batch's outputs are the executor's own arrays: handed over, and
    // replaced by fresh ones for the next pass.
    std::vector<NDArray> fresh(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      MXL_RETURN_IF_ERROR(NDArray::Create(outputs_[i].shape(), outputs_[i].dtype(), &fresh[i]));
    }
    out->swap(outputs_);
    outputs_.swap(fresh);
    return Status();
  }
  out->assign(outputs_.size(), NDArray());
  std::map<int, std::shared_ptr<Storage>> handed;  // block -> memory now the caller's
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const NodeEntry& entry = graph.outputs[i];
    const int block =
        graph.nodes[entry.node].is_variable() ? -1 : plan_.entry_block[entry.node][entry.index];
    if (block < 0 || !block_storage_[block]) {
      MXL_RETURN_IF_ERROR(outputs_[i].Clone(&(*out)[i]));
      continue;
    }
    auto taken = handed.find(block);
    if (taken == handed.end()) {
      std::shared_ptr<Storage> memory;
      MXL_RETURN_IF_ERROR(block_storage_[block]->HandOver(&memory));
      taken = handed.emplace(block, std::move(memory)).first;
    }
    (*out)[i] = NDArray(outputs_[i].shape(), outputs_[i].dtype(), taken->second);
  }
  return Status();
}

}  // namespace mxlite
