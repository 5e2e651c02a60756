/*
 * The CUDA device runner (see executor/device.h for the model).
 *
 * Memory: the executor's memory plan, mirrored. One device arena of the
 * plan's size holds every intermediate result at the plan's offsets; blocks
 * holding graph outputs get device buffers of their own (as on the host);
 * inputs get a device buffer each; parameters are uploaded once per model
 * and device and shared by every predictor of it through the model's cache
 * of prepared weights. Inputs are copied from their host arrays before each
 * pass and graph outputs back to theirs after it (outside the captured
 * graph: a caller's input may be lent memory that changes every pass).
 *
 * Execution: one stream and one cuBLAS handle per runner. When every node
 * has a GPU kernel, the second pass is captured in a CUDA graph and each
 * later pass replays it (one launch for the whole network). Otherwise the nodes run in
 * order on the stream; a node without a GPU kernel waits for the stream,
 * has its inputs copied to its host arrays, runs on the CPU operator, and
 * has its outputs copied back. Monitoring and PartialForward also run node
 * by node.
 */
#include "../executor/device.h"
#include "../executor/executor.h"
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cuda_ops.h"

namespace mxlite {

#ifdef MXLITE_NO_CUDA

Status CheckCudaDevice(int device_id) {
  return Status::Error(StrCat("GPU ", device_id,
                              " is not available: this build of mxlite has no CUDA backend "
                              "(compile it with nvcc: make cuda, see docs/cuda.md)"));
}

Status CreateCudaRunner(Executor*, int device_id, std::unique_ptr<DeviceRunner>*) {
  return CheckCudaDevice(device_id);
}

int CudaDeviceCount() { return -1; }

#else  // CUDA

Status CheckCudaDevice(int device_id) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return Status::Error(StrCat("GPU ", device_id, " is not available: CUDA reports \"",
                                cudaGetErrorString(error), "\""));
  }
  MXL_CHECK(device_id >= 0 && device_id < count, "GPU ", device_id,
            " is not available: CUDA sees ", count, count == 1 ? " device" : " devices");
  return Status();
}

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return 0;
  }
  return count;
}

namespace cuda_runner_cc {

// Device memory, freed with its owner.
class DeviceBuffer {
 public:
  static Status Allocate(size_t bytes, std::shared_ptr<DeviceBuffer>* out) {
    std::shared_ptr<DeviceBuffer> buffer(new DeviceBuffer());
    buffer->bytes_ = bytes;
    if (bytes != 0) {
      const cudaError_t error = cudaMalloc(&buffer->data_, bytes);
      if (error != cudaSuccess) {
        cudaGetLastError();
        return Status::Error(StrCat("cannot allocate ", FormatBytes(bytes),
                                    " of GPU memory: ", cudaGetErrorString(error)));
      }
    }
    *out = std::move(buffer);
    return Status();
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);  // errors at process exit (driver gone) are moot
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class CudaRunner : public DeviceRunner {
 public:
  CudaRunner(Executor* executor, int device) : ex_(executor), device_(device) {}
  ~CudaRunner() override;

  Status Init();
  bool RunsNode(int n) const override {
    return n >= 0 && n < static_cast<int>(kernels_.size()) && kernels_[n] != nullptr;
  }
  Status Forward() override;
  Status RunStep(int n) override;
  std::string Describe() const override;

 private:
  // Everything a pass needs before it runs: host Prepare of the fallback
  // nodes and the parameters on the device, again after a parameter changed.
  Status EnsurePrepared();
  Status UploadConstants();
  // Enqueues every node of a pass (no input or output copies).
  Status EnqueuePass();
  Status EnqueueInputs();
  Status EnqueueOutputs();
  Status RunNode(int n);
  // What node n's kernel works on.
  CudaLaunch LaunchFor(int n) const;
  // Lets each kernel with several forms time them and keep the fastest.
  Status TuneKernels();
  Status RunOnHost(int n);
  Status CopyOutputsToHost(int n);
  Status Synchronize(const char* what);
  Status CapturePass();
  // A pass node by node between events, each node's time added to the
  // executor's profile.
  Status ProfiledPass();

  Executor* ex_;
  int device_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  const CudnnLibrary* dnn_ = nullptr;  // null: cuDNN off or absent (dnn_note_ says which)
  cudnnHandle_t dnn_handle_ = nullptr;
  std::string dnn_note_;
  // Input arrays on the host that this runner page-locked (cudaHostRegister),
  // so that their copies to the device run at the bus's speed.
  std::vector<void*> pinned_inputs_;
  // Profiling (options profile 1 or 2): an event before each node and one
  // after the last, recorded on the stream in profiled passes.
  std::vector<cudaEvent_t> events_;
  std::shared_ptr<DeviceBuffer> blas_workspace_, arena_, workspace_;
  std::vector<std::shared_ptr<DeviceBuffer>> block_buffers_;  // per planned block (outputs)
  // Per variable node: its device buffer (shared for parameters).
  std::vector<std::shared_ptr<const DeviceBuffer>> variables_;
  std::vector<std::vector<void*>> entries_;  // per node, per output: device pointer
  std::vector<std::unique_ptr<CudaKernel>> kernels_;  // per node; null: variable or host
  std::vector<std::string> host_reasons_;              // per node run on the host
  std::vector<int> inputs_;                            // the input variables' nodes
  std::vector<NodeEntry> copied_outputs_;  // graph outputs made by operators
  size_t device_bytes_ = 0;
  bool all_on_device_ = true;
  bool uploaded_ = false;
  cudaGraphExec_t graph_ = nullptr;
  bool graph_failed_ = false;
  std::string graph_note_;
  int64_t passes_ = 0;
};

CudaRunner::~CudaRunner() {
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (graph_) cudaGraphExecDestroy(graph_);
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
  for (void* pinned : pinned_inputs_) cudaHostUnregister(pinned);
  if (dnn_handle_) dnn_->Destroy(dnn_handle_);
  if (blas_) cublasDestroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status CudaRunner::Init() {
  MXL_RETURN_IF_ERROR(CheckCudaDevice(device_));
  MXL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  cudaDeviceProp properties;
  MXL_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&properties, device_));
  device_name_ = properties.name;
  const Graph& graph = ex_->graph_;
  const MemoryPlan& plan = ex_->plan_;
  const size_t nodes = graph.nodes.size();

  MXL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // cuDNN, when the options allow it and it loads: its handle, on this
  // runner's stream, lets convolutions choose their algorithms below.
  MXL_RETURN_IF_ERROR(LoadCudnn(ex_->options_.cudnn, &dnn_, &dnn_note_));
  if (dnn_) {
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, Create(&dnn_handle_));
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, SetStream(dnn_handle_, stream_));
  }

  // Which nodes the GPU runs, and the scratch they need.
  kernels_.resize(nodes);
  host_reasons_.resize(nodes);
  size_t workspace_bytes = 0;
  for (size_t n = 0; n < nodes; ++n) {
    const Node& node = graph.nodes[n];
    if (node.is_variable()) continue;
    CudaNode info;
    // Fused forms (graph/fuse.h) are internal operators, named as they are.
    info.op = CanonicalOpName(node.op_name);
    if (info.op.empty()) info.op = node.op_name;
    info.name = node.name;
    info.attrs = &node.attrs;
    info.dnn = dnn_;
    info.dnn_handle = dnn_handle_;
    info.tune = ex_->options_.conv_tuning;
    for (const NDArray& array : ex_->node_inputs_[n]) {
      info.in_shapes.push_back(array.shape());
      info.in_dtypes.push_back(array.dtype());
    }
    for (const NDArray& array : ex_->entries_[n]) {
      info.out_shapes.push_back(array.shape());
      info.out_dtypes.push_back(array.dtype());
    }
    Status status = MakeCudaKernel(info, &kernels_[n], &host_reasons_[n]);
    if (!status.ok()) {
      return Status::Error(StrCat("node ", graph.Describe(static_cast<int>(n)), ": ",
                                  status.message()));
    }
    if (!kernels_[n]) {
      all_on_device_ = false;
    } else {
      workspace_bytes = std::max(workspace_bytes, kernels_[n]->WorkspaceBytes());
    }
  }

  // What the device must hold, checked against its free memory first.
  size_t needed = plan.arena_bytes + workspace_bytes;
  for (size_t n = 0; n < nodes; ++n) {
    if (graph.nodes[n].is_variable()) needed += ex_->entries_[n][0].bytes();
  }
  for (size_t block = 0; block < plan.block_bytes.size(); ++block) {
    if (ex_->block_storage_[block]) needed += plan.block_bytes[block];
  }
  size_t free_bytes = 0, total_bytes = 0;
  MXL_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  MXL_CHECK(needed <= free_bytes, "binding these input shapes on GPU ", device_, " needs ",
            FormatBytes(needed), " of GPU memory, but ", FormatBytes(free_bytes), " of ",
            FormatBytes(total_bytes), " are free");

  MXL_CUBLAS_RETURN_IF_ERROR(cublasCreate(&blas_));
  MXL_CUBLAS_RETURN_IF_ERROR(cublasSetStream(blas_, stream_));
  // Plain FP32 (no TF32 tensor-op rounding), as the CPU path and MXNet.
  MXL_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH));
  // A workspace of its own, so that cuBLAS allocates nothing while a pass
  // is being captured.
  constexpr size_t kBlasWorkspace = size_t{4} << 20;
  MXL_RETURN_IF_ERROR(DeviceBuffer::Allocate(kBlasWorkspace, &blas_workspace_));
  MXL_CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace(blas_, blas_workspace_->data(), kBlasWorkspace));

  MXL_RETURN_IF_ERROR(DeviceBuffer::Allocate(plan.arena_bytes, &arena_));
  MXL_RETURN_IF_ERROR(DeviceBuffer::Allocate(workspace_bytes, &workspace_));
  device_bytes_ = kBlasWorkspace + plan.arena_bytes + workspace_bytes;
  block_buffers_.resize(plan.block_bytes.size());
  for (size_t block = 0; block < plan.block_bytes.size(); ++block) {
    if (!ex_->block_storage_[block]) continue;
    MXL_RETURN_IF_ERROR(DeviceBuffer::Allocate(plan.block_bytes[block], &block_buffers_[block]));
    device_bytes_ += plan.block_bytes[block];
  }
  entries_.resize(nodes);
  variables_.resize(nodes);
  char* arena = static_cast<char*>(arena_->data());
  for (size_t n = 0; n < nodes; ++n) {
    const Node& node = graph.nodes[n];
    entries_[n].assign(node.num_outputs(), nullptr);
    if (node.is_variable()) {
      if (ex_->input_shapes_.count(node.name)) inputs_.push_back(static_cast<int>(n));
      continue;
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      const int block = plan.entry_block[n][i];
      if (block < 0) continue;
      const size_t offset = plan.entry_offset[n][i];
      entries_[n][i] = block_buffers_[block]
                           ? static_cast<char*>(block_buffers_[block]->data()) + offset
                           : arena + plan.block_offset[block] + offset;
    }
  }
  MXL_RETURN_IF_ERROR(UploadConstants());
  if (ex_->options_.conv_tuning) MXL_RETURN_IF_ERROR(TuneKernels());
  // Large inputs are page-locked where they live, so that their copy to the
  // device is one DMA at the bus's speed instead of a copy staged through
  // the driver's buffers. Where that fails (memory locked already, a
  // limit), the copy stays a plain one.
  constexpr size_t kPinFrom = size_t{1} << 20;
  for (int n : inputs_) {
    const NDArray& host = ex_->entries_[n][0];
    if (host.bytes() < kPinFrom) continue;
    if (cudaHostRegister(host.data(), host.bytes(), cudaHostRegisterDefault) == cudaSuccess) {
      pinned_inputs_.push_back(host.data());
    } else {
      cudaGetLastError();
    }
  }
  if (ex_->profile_) {
    events_.resize(nodes + 1);
    for (cudaEvent_t& event : events_) {
      MXL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
    }
  }

  for (const NodeEntry& output : graph.outputs) {
    if (!graph.nodes[output.node].is_variable()) copied_outputs_.push_back(output);
  }
  // Profiling also says where each node runs.
  if (ex_->options_.profile != 0) std::fprintf(stderr, "mxlite %s\n", Describe().c_str());
  return Status();
}

Status CudaRunner::UploadConstants() {
  const Graph& graph = ex_->graph_;
  const int device = device_;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (!node.is_variable()) continue;
    const NDArray& host = ex_->entries_[n][0];
    auto upload = [&host](std::shared_ptr<const DeviceBuffer>* made) -> Status {
      std::shared_ptr<DeviceBuffer> buffer;
      MXL_RETURN_IF_ERROR(DeviceBuffer::Allocate(host.bytes(), &buffer));
      if (host.bytes() != 0) {
        MXL_CUDA_RETURN_IF_ERROR(
            cudaMemcpy(buffer->data(), host.data(), host.bytes(), cudaMemcpyHostToDevice));
      }
      *made = std::move(buffer);
      return Status();
    };
    if (ex_->input_shapes_.count(node.name)) {
      if (!variables_[n]) {  // the caller's input: its own buffer, filled each pass
        std::shared_ptr<DeviceBuffer> buffer;
        MXL_RETURN_IF_ERROR(DeviceBuffer::Allocate(host.bytes(), &buffer));
        device_bytes_ += host.bytes();
        variables_[n] = std::move(buffer);
      }
    } else if (ex_->model_->params.count(node.name)) {
      // A parameter: uploaded once per model and device, shared.
      MXL_RETURN_IF_ERROR(ex_->model_->prepared->FindOrMake<DeviceBuffer>(
          StrCat(reinterpret_cast<uintptr_t>(host.data()), ",cuda device ", device), upload,
          &variables_[n]));
    } else {
      MXL_RETURN_IF_ERROR(upload(&variables_[n]));  // an unread argument (a label)
    }
    entries_[n][0] = variables_[n]->data();
  }
  uploaded_ = true;
  return Status();
}

Status CudaRunner::EnsurePrepared() {
  MXL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  if (ex_->prepared_ && uploaded_) return Status();
  // A parameter was overwritten (SetInput on one): the host Prepare and the
  // device copies start again, and so does the captured graph.
  MXL_RETURN_IF_ERROR(ex_->PrepareOperators());
  variables_.assign(variables_.size(), nullptr);
  MXL_RETURN_IF_ERROR(UploadConstants());
  if (graph_) cudaGraphExecDestroy(graph_);
  graph_ = nullptr;
  passes_ = 0;
  return Status();
}

Status CudaRunner::EnqueueInputs() {
  for (int n : inputs_) {
    const NDArray& host = ex_->entries_[n][0];
    if (host.bytes() == 0) continue;
    MXL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(entries_[n][0], host.data(), host.bytes(),
                                             cudaMemcpyHostToDevice, stream_));
  }
  return Status();
}

Status CudaRunner::EnqueueOutputs() {
  for (const NodeEntry& output : copied_outputs_) {
    const NDArray& host = ex_->entries_[output.node][output.index];
    if (host.bytes() == 0) continue;
    MXL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), entries_[output.node][output.index],
                                             host.bytes(), cudaMemcpyDeviceToHost, stream_));
  }
  return Status();
}

Status CudaRunner::Synchronize(const char* what) {
  const cudaError_t error = cudaStreamSynchronize(stream_);
  if (error != cudaSuccess) {
    return Status::Error(StrCat("GPU ", device_, ": ", what, " failed: ",
                                cudaGetErrorString(error)));
  }
  return Status();
}

Status CudaRunner::RunOnHost(int n) {
  // The node's inputs as the device holds them (variables are current on
  // the host already), the CPU operator, its outputs back.
  const Graph& graph = ex_->graph_;
  const Node& node = graph.nodes[n];
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const NodeEntry& input = node.inputs[i];
    if (graph.nodes[input.node].is_variable()) continue;
    const NDArray& host = ex_->node_inputs_[n][i];
    if (host.bytes() == 0) continue;
    MXL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), entries_[input.node][input.index],
                                             host.bytes(), cudaMemcpyDeviceToHost, stream_));
  }
  MXL_RETURN_IF_ERROR(Synchronize("copying a host node's inputs"));
  MXL_RETURN_IF_ERROR(ex_->RunNode(n));
  for (size_t i = 0; i < ex_->entries_[n].size(); ++i) {
    const NDArray& host = ex_->entries_[n][i];
    if (host.bytes() == 0 || !entries_[n][i]) continue;
    MXL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(entries_[n][i], host.data(), host.bytes(),
                                             cudaMemcpyHostToDevice, stream_));
  }
  return Synchronize("copying a host node's outputs");
}

CudaLaunch CudaRunner::LaunchFor(int n) const {
  CudaLaunch launch;
  launch.stream = stream_;
  launch.blas = blas_;
  launch.dnn = dnn_handle_;
  launch.workspace = workspace_->data();
  for (const NodeEntry& input : ex_->graph_.nodes[n].inputs) {
    launch.in.push_back(entries_[input.node][input.index]);
  }
  launch.out = entries_[n];
  return launch;
}

Status CudaRunner::TuneKernels() {
  // On the predictor's own buffers, before any pass: what they hold does
  // not matter yet.
  for (size_t n = 0; n < kernels_.size(); ++n) {
    if (!kernels_[n]) continue;
    Status status = kernels_[n]->Tune(LaunchFor(static_cast<int>(n)));
    if (!status.ok()) {
      return Status::Error(StrCat("node ", ex_->graph_.Describe(static_cast<int>(n)),
                                  " on GPU ", device_, ": timing its kernels: ", status.message()));
    }
  }
  return Synchronize("timing the kernels");
}

Status CudaRunner::RunNode(int n) {
  const Graph& graph = ex_->graph_;
  const Node& node = graph.nodes[n];
  if (node.is_variable()) return Status();
  if (!kernels_[n]) return RunOnHost(n);
  Status status = kernels_[n]->Launch(LaunchFor(n));
  if (!status.ok()) {
    return Status::Error(StrCat("node ", graph.Describe(n), " on GPU ", device_, ": ",
                                status.message()));
  }
  if (ex_->monitor_) {
    MXL_RETURN_IF_ERROR(CopyOutputsToHost(n));
    for (int i = 0; i < node.num_outputs(); ++i) {
      const std::string name = node.OutputName(i);
      ex_->monitor_(name.c_str(), &ex_->entries_[n][i], ex_->monitor_user_);
    }
  }
  return Status();
}

Status CudaRunner::CopyOutputsToHost(int n) {
  for (size_t i = 0; i < ex_->entries_[n].size(); ++i) {
    const NDArray& host = ex_->entries_[n][i];
    if (host.bytes() == 0 || !entries_[n][i]) continue;
    MXL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), entries_[n][i], host.bytes(),
                                             cudaMemcpyDeviceToHost, stream_));
  }
  return Synchronize("copying outputs to the host");
}

Status CudaRunner::EnqueuePass() {
  for (size_t n = 0; n < kernels_.size(); ++n) MXL_RETURN_IF_ERROR(RunNode(static_cast<int>(n)));
  return Status();
}

Status CudaRunner::CapturePass() {
  cudaGraph_t captured = nullptr;
  MXL_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  Status status = EnqueuePass();
  const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
  cudaError_t instantiated = cudaErrorUnknown;
  if (status.ok() && ended == cudaSuccess) {
    instantiated = cudaGraphInstantiate(&graph_, captured, 0);
  }
  if (captured) cudaGraphDestroy(captured);
  if (!status.ok() || ended != cudaSuccess || instantiated != cudaSuccess) {
    // Run node by node from now on; the note says why.
    cudaGetLastError();
    graph_ = nullptr;
    graph_failed_ = true;
    graph_note_ = !status.ok()             ? status.message()
                  : ended != cudaSuccess   ? cudaGetErrorString(ended)
                                           : cudaGetErrorString(instantiated);
  }
  return Status();
}

Status CudaRunner::Forward() {
  MXL_RETURN_IF_ERROR(EnsurePrepared());
  MXL_RETURN_IF_ERROR(EnqueueInputs());
  // The first pass runs directly (cuBLAS and lazily loaded kernels set
  // themselves up); the second is captured, and later ones replay it.
  const bool replay = all_on_device_ && !graph_failed_ && !ex_->monitor_ && passes_ > 0;
  ++passes_;
  if (replay && !graph_ && !ex_->profile_) MXL_RETURN_IF_ERROR(CapturePass());
  if (ex_->profile_ && passes_ > 1) {
    // Profiled passes (not the first, which sets cuBLAS and cuDNN up) run
    // node by node between events instead of replaying a graph.
    MXL_RETURN_IF_ERROR(ProfiledPass());
  } else if (replay && graph_) {
    MXL_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_, stream_));
  } else {
    MXL_RETURN_IF_ERROR(EnqueuePass());
  }
  MXL_RETURN_IF_ERROR(EnqueueOutputs());
  return Synchronize("the forward pass");
}

Status CudaRunner::ProfiledPass() {
  const Graph& graph = ex_->graph_;
  std::vector<int> timed;  // nodes run, in order; events_[k] precedes timed[k]
  for (size_t n = 0; n < kernels_.size(); ++n) {
    if (graph.nodes[n].is_variable()) continue;
    MXL_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[timed.size()], stream_));
    timed.push_back(static_cast<int>(n));
    MXL_RETURN_IF_ERROR(RunNode(static_cast<int>(n)));
  }
  MXL_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[timed.size()], stream_));
  MXL_RETURN_IF_ERROR(Synchronize("a profiled pass"));
  for (size_t k = 0; k < timed.size(); ++k) {
    float ms = 0;
    MXL_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[k], events_[k + 1]));
    const int n = timed[k];
    const char* form = kernels_[n] ? kernels_[n]->Name() : "";
    const std::string kernel =
        StrCat("GPU", kernels_[n] ? "" : " host fallback", *form ? " " : "", form);
    ex_->AddToProfile(n, kernel, ms * 1e-3, /*first_run=*/false);
  }
  return Status();
}

Status CudaRunner::RunStep(int n) {
  MXL_RETURN_IF_ERROR(EnsurePrepared());
  if (n == 0) MXL_RETURN_IF_ERROR(EnqueueInputs());
  MXL_RETURN_IF_ERROR(RunNode(n));
  return CopyOutputsToHost(n);
}

std::string CudaRunner::Describe() const {
  const Graph& graph = ex_->graph_;
  int operators = 0, on_device = 0;
  std::string host;
  for (size_t n = 0; n < kernels_.size(); ++n) {
    if (graph.nodes[n].is_variable()) continue;
    ++operators;
    if (kernels_[n]) {
      ++on_device;
    } else {
      host += StrCat(host.empty() ? "" : "; ", graph.nodes[n].name, " (", graph.nodes[n].op_name,
                     ": ", host_reasons_[n], ")");
    }
  }
  std::string text = StrCat("GPU ", device_, " (", device_name_, "): ", on_device, " of ",
                            operators, " operators on the GPU, ", FormatBytes(device_bytes_),
                            " of device memory besides the parameters");
  text += dnn_ ? StrCat("; cuDNN ", CudnnVersionText(dnn_->version), " (", dnn_->path, ")")
              : StrCat("; no cuDNN (", dnn_note_, ")");
  if (!pinned_inputs_.empty()) text += "; inputs page-locked";
  if (!host.empty()) text += StrCat("; on the host: ", host);
  if (graph_) text += "; passes replay as one CUDA graph";
  if (graph_failed_) text += StrCat("; no CUDA graph (", graph_note_, ")");
  return text;
}

}  // namespace cuda_runner_cc

Status CreateCudaRunner(Executor* executor, int device_id, std::unique_ptr<DeviceRunner>* out) {
  std::unique_ptr<cuda_runner_cc::CudaRunner> runner(
      new cuda_runner_cc::CudaRunner(executor, device_id));
  MXL_RETURN_IF_ERROR(runner->Init());
  *out = std::move(runner);
  return Status();
}

#endif  // MXLITE_NO_CUDA

}  // namespace mxlite
