/*
 * The CUDA kernels of cuda_op_list.inc and their factories.
 *
 * Convolution, the one operator where the time goes, runs through cuDNN
 * when the runner loaded it (cudnn_library.h; every 1-D and 2-D form, the
 * algorithm chosen by cuDNN's heuristics in plain FP32; under conv_tuning
 * the fastest of cuDNN's three best and the form below, timed at bind: see
 * RacedKernel). A fused chain (graph/fuse.h: _FusedConvolution) adds its
 * bias, BatchNorm, residual and clamp in one epilogue pass. Without cuDNN,
 * or where it declines a layer, a convolution takes one of three forms,
 * chosen from the geometry:
 *   - depthwise (one input channel per group): a direct kernel, one thread
 *     per output element, the window read from global memory (cached);
 *   - 1x1, stride 1, no padding: the input already is the GEMM operand, so
 *     one strided-batched cuBLAS SGEMM per group covers the whole batch;
 *   - anything else: im2col of as many images as 256 MiB of columns hold
 *     into the workspace, then per group one strided-batched SGEMM over
 *     those images.
 * cuBLAS is column-major: a row-major product Y = W * X is computed as
 * Y^T = X^T * W^T, which reads every row-major operand in place.
 * Elementwise kernels use grid-stride loops; reductions (softmax) one block
 * per row.
 */
#include "cuda_ops.h"

#ifndef MXLITE_NO_CUDA

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "../ndarray/ndarray.h"
#include "../operators/pool_algorithms.h"

namespace mxlite {
namespace cuda_ops_cc {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` elements.
unsigned GridFor(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

Status LaunchStatus(const char* what) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    return Status::Error(StrCat("CUDA kernel ", what, " failed to launch: ",
                                cudaGetErrorString(error)));
  }
  return Status();
}

#define MXL_GRID_STRIDE(i, count)                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

bool AllFloat32(const CudaNode& node) {
  for (int dtype : node.in_dtypes) {
    if (dtype != kFloat32) return false;
  }
  for (int dtype : node.out_dtypes) {
    if (dtype != kFloat32) return false;
  }
  return true;
}

// --- elementwise -------------------------------------------------------------

enum class UnaryKind { kRelu, kSigmoid, kTanh, kSoftrelu, kSoftsign, kClip };

// The same formulas as the CPU operators (activation.cc, clip.cc).
__global__ void UnaryKernel(UnaryKind kind, const float* x, float* y, int64_t count, float lower,
                            float upper) {
  MXL_GRID_STRIDE(i, count) {
    const float v = x[i];
    float r;
    switch (kind) {
      case UnaryKind::kRelu: r = v > 0.f ? v : 0.f; break;
      case UnaryKind::kSigmoid: r = 1.f / (1.f + expf(-v)); break;
      case UnaryKind::kTanh: r = tanhf(v); break;
      case UnaryKind::kSoftrelu: r = v > 20.f ? v : log1pf(expf(v)); break;
      case UnaryKind::kSoftsign: r = v / (1.f + fabsf(v)); break;
      default: r = v < lower ? lower : (v > upper ? upper : v); break;
    }
    y[i] = r;
  }
}

class UnaryOp : public CudaKernel {
 public:
  UnaryOp(UnaryKind kind, int64_t count, float lower, float upper)
      : kind_(kind), count_(count), lower_(lower), upper_(upper) {}
  Status Launch(const CudaLaunch& l) const override {
    UnaryKernel<<<GridFor(count_), kThreads, 0, l.stream>>>(
        kind_, static_cast<const float*>(l.in[0]), static_cast<float*>(l.out[0]), count_, lower_,
        upper_);
    return LaunchStatus("unary");
  }

 private:
  UnaryKind kind_;
  int64_t count_;
  float lower_, upper_;
};

Status MakeActivation(const CudaNode& node, std::unique_ptr<CudaKernel>* out, std::string*) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  const int type = attrs.Enum("act_type", {"relu", "sigmoid", "tanh", "softrelu", "softsign"}, -1);
  MXL_RETURN_IF_ERROR(attrs.Finish());
  out->reset(new UnaryOp(static_cast<UnaryKind>(type), node.in_shapes[0].Size(), 0.f, 0.f));
  return Status();
}

Status MakeClip(const CudaNode& node, std::unique_ptr<CudaKernel>* out, std::string*) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  const float lower = static_cast<float>(attrs.Float("a_min"));
  const float upper = static_cast<float>(attrs.Float("a_max"));
  out->reset(new UnaryOp(UnaryKind::kClip, node.in_shapes[0].Size(), lower, upper));
  return Status();
}

enum class BinaryKind { kAdd, kSub, kMul, kDiv };

__global__ void BinaryKernel(BinaryKind kind, const float* a, const float* b, float* y,
                             int64_t count) {
  MXL_GRID_STRIDE(i, count) {
    const float u = a[i], v = b[i];
    y[i] = kind == BinaryKind::kAdd   ? u + v
           : kind == BinaryKind::kSub ? u - v
           : kind == BinaryKind::kMul ? u * v
                                      : u / v;
  }
}

class BinaryOp : public CudaKernel {
 public:
  BinaryOp(BinaryKind kind, int64_t count) : kind_(kind), count_(count) {}
  Status Launch(const CudaLaunch& l) const override {
    BinaryKernel<<<GridFor(count_), kThreads, 0, l.stream>>>(
        kind_, static_cast<const float*>(l.in[0]), static_cast<const float*>(l.in[1]),
        static_cast<float*>(l.out[0]), count_);
    return LaunchStatus("binary");
  }

 private:
  BinaryKind kind_;
  int64_t count_;
};

Status MakeBinary(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                  std::string* unsupported) {
  if (!(node.in_shapes[0] == node.in_shapes[1]) || !(node.in_shapes[0] == node.out_shapes[0])) {
    *unsupported = "operands of different shapes (broadcasting)";
    return Status();
  }
  const std::string& op = node.op;
  const BinaryKind kind = op == "elemwise_sub"                              ? BinaryKind::kSub
                          : op == "elemwise_mul" || op == "broadcast_mul" ? BinaryKind::kMul
                          : op == "elemwise_div"                            ? BinaryKind::kDiv
                                                                            : BinaryKind::kAdd;
  out->reset(new BinaryOp(kind, node.out_shapes[0].Size()));
  return Status();
}

constexpr int kMaxAddN = 8;
struct AddNOperands {
  const float* x[kMaxAddN];
  int count;
};

__global__ void AddNKernel(AddNOperands operands, float* y, int64_t count) {
  MXL_GRID_STRIDE(i, count) {
    // In MXNet's order: ((x0 + x1) + x2) + ...
    float sum = operands.x[0][i];
    for (int k = 1; k < operands.count; ++k) sum += operands.x[k][i];
    y[i] = sum;
  }
}

class AddNOp : public CudaKernel {
 public:
  explicit AddNOp(int64_t count) : count_(count) {}
  Status Launch(const CudaLaunch& l) const override {
    AddNOperands operands;
    operands.count = static_cast<int>(l.in.size());
    for (size_t k = 0; k < l.in.size(); ++k) operands.x[k] = static_cast<const float*>(l.in[k]);
    AddNKernel<<<GridFor(count_), kThreads, 0, l.stream>>>(operands,
                                                           static_cast<float*>(l.out[0]), count_);
    return LaunchStatus("add_n");
  }

 private:
  int64_t count_;
};

Status MakeAddN(const CudaNode& node, std::unique_ptr<CudaKernel>* out, std::string* unsupported) {
  if (node.in_shapes.empty() || node.in_shapes.size() > static_cast<size_t>(kMaxAddN)) {
    *unsupported = StrCat(node.in_shapes.size(), " operands (the GPU kernel takes 1 to ", kMaxAddN,
                          ")");
    return Status();
  }
  out->reset(new AddNOp(node.out_shapes[0].Size()));
  return Status();
}

// --- copies --------------------------------------------------------------------

// Views and identities: the output holds input 0's bytes.
class CopyOp : public CudaKernel {
 public:
  explicit CopyOp(size_t bytes) : bytes_(bytes) {}
  Status Launch(const CudaLaunch& l) const override {
    if (l.out[0] != l.in[0] && bytes_ != 0) {  // the planner usually shares the buffer
      MXL_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(l.out[0], l.in[0], bytes_, cudaMemcpyDeviceToDevice, l.stream));
    }
    return Status();
  }

 private:
  size_t bytes_;
};

Status MakeCopy(const CudaNode& node, std::unique_ptr<CudaKernel>* out, std::string* unsupported) {
  const bool any_dtype = node.op != "Flatten" && node.op != "Dropout";
  if (!any_dtype && !AllFloat32(node)) {
    *unsupported = "not float32";
    return Status();
  }
  if (node.in_dtypes[0] != node.out_dtypes[0] ||
      node.in_shapes[0].Size() != node.out_shapes[0].Size()) {
    *unsupported = "the output is not the input's bytes";
    return Status();
  }
  out->reset(new CopyOp(static_cast<size_t>(node.out_shapes[0].Size()) *
                        DTypeSize(node.out_dtypes[0])));
  return Status();
}

// Concat: per input, a 2-D copy of `outer` rows into its columns, but for
// inputs already in place.
class ConcatOp : public CudaKernel {
 public:
  ConcatOp(int64_t outer, std::vector<int64_t> inner_bytes, int64_t out_row_bytes)
      : outer_(outer), inner_bytes_(std::move(inner_bytes)), out_row_bytes_(out_row_bytes) {}
  Status Launch(const CudaLaunch& l) const override {
    int64_t column = 0;
    for (size_t i = 0; i < inner_bytes_.size(); ++i) {
      // An input the memory plan laid inside the output (executor/
      // memory_plan.h, "Laid end to end") is in place already.
      const bool in_place = static_cast<char*>(l.out[0]) + column == l.in[i];
      if (inner_bytes_[i] != 0 && outer_ != 0 && !in_place) {
        MXL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(
            static_cast<char*>(l.out[0]) + column, static_cast<size_t>(out_row_bytes_), l.in[i],
            static_cast<size_t>(inner_bytes_[i]), static_cast<size_t>(inner_bytes_[i]),
            static_cast<size_t>(outer_), cudaMemcpyDeviceToDevice, l.stream));
      }
      column += inner_bytes_[i];
    }
    return Status();
  }

 private:
  int64_t outer_;
  std::vector<int64_t> inner_bytes_;
  int64_t out_row_bytes_;
};

Status MakeConcat(const CudaNode& node, std::unique_ptr<CudaKernel>* out, std::string*) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  const Shape& shape = node.out_shapes[0];
  int64_t axis = attrs.Int("dim", 1);
  if (axis < 0) axis += shape.ndim();
  const size_t element = DTypeSize(node.out_dtypes[0]);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  std::vector<int64_t> inner_bytes;
  for (const Shape& in : node.in_shapes) {
    int64_t inner = 1;
    for (int d = static_cast<int>(axis); d < in.ndim(); ++d) inner *= in[d];
    inner_bytes.push_back(inner * static_cast<int64_t>(element));
  }
  int64_t row = 1;
  for (int d = static_cast<int>(axis); d < shape.ndim(); ++d) row *= shape[d];
  out->reset(new ConcatOp(outer, std::move(inner_bytes), row * static_cast<int64_t>(element)));
  return Status();
}

// --- BatchNorm ---------------------------------------------------------------

// Per-plane kernels: one block per (image, channel) plane of `inner`
// elements, so the channel is found once per block (no division per
// element) and its constants sit in registers.
// Whether `count` elements in planes of `plane` run a block per plane:
// planes of fewer than a warp's elements leave most of each block idle
// (BatchNorm after FullyConnected, FullyConnected's bias: planes of 1), and
// a grid holds at most 2^31 - 1 blocks. Elsewhere an element-wise kernel runs.
bool RunsPlaneBlocks(int64_t plane, int64_t count) {
  return plane >= 32 && count / plane <= 0x7fffffff;
}

unsigned PlaneThreads(int64_t inner) {
  const int64_t warps = (inner + 31) / 32;
  return static_cast<unsigned>(warps >= kThreads / 32 ? kThreads : warps < 1 ? 32 : warps * 32);
}

// BatchNorm at inference and a clamp after it (relu, clip: _FusedBatchNorm
// and fused convolution chains), each as the CPU operators compute it.
struct ChannelNorm {
  const float* gamma = nullptr;  // parameters; null mean: no BatchNorm
  const float* beta = nullptr;
  const float* mean = nullptr;
  const float* var = nullptr;
  float eps = 1e-3f;
  bool fix_gamma = true;
  bool clamp = false;
  float lower = 0.f, upper = 0.f;
};

// One channel's constants, read once per block or element.
struct ChannelConstants {
  float mean, invstd, gamma, beta;
};

__device__ ChannelConstants ChannelConstantsOf(const ChannelNorm& n, int64_t c) {
  ChannelConstants k;
  k.mean = n.mean[c];
  k.invstd = 1.f / sqrtf(n.var[c] + n.eps);  // as batch_norm.cc
  k.gamma = n.fix_gamma ? 1.f : n.gamma[c];
  k.beta = n.beta[c];
  return k;
}

// ((x - mean) * invstd) * gamma + beta, where there is a BatchNorm.
__device__ float NormalizeOnly(const ChannelNorm& n, const ChannelConstants& k, float v) {
  return n.mean ? ((v - k.mean) * k.invstd) * k.gamma + k.beta : v;
}

// The clamp, where there is one (NaN becomes the lower bound, as relu
// makes it 0).
__device__ float ClampOnly(const ChannelNorm& n, float v) {
  if (n.clamp) {
    v = v > n.lower ? v : n.lower;
    v = v < n.upper ? v : n.upper;
  }
  return v;
}

__device__ float Normalize(const ChannelNorm& n, const ChannelConstants& k, float v) {
  return ClampOnly(n, NormalizeOnly(n, k, v));
}

__global__ void BatchNormKernel(const float* x, ChannelNorm n, int64_t channels, int64_t inner,
                                float* y) {
  const int64_t plane = blockIdx.x;
  const ChannelConstants k = ChannelConstantsOf(n, plane % channels);
  const float* src = x + plane * inner;
  float* dst = y + plane * inner;
  for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) dst[i] = Normalize(n, k, src[i]);
}

// The same, element by element, for planes too small to give a block work
// (BatchNorm after FullyConnected has planes of 1).
__global__ void BatchNormElementsKernel(const float* x, ChannelNorm n, int64_t channels,
                                        int64_t inner, int64_t count, float* y) {
  MXL_GRID_STRIDE(i, count) {
    y[i] = Normalize(n, ChannelConstantsOf(n, (i / inner) % channels), x[i]);
  }
}

// The hidden outputs, as MXNet's CPU kernel fills them: the mean used and invstd.
__global__ void BatchNormStatsKernel(const float* mean, const float* var, float eps,
                                     int64_t channels, float* mean_out, float* invstd_out) {
  MXL_GRID_STRIDE(c, channels) {
    mean_out[c] = mean[c];
    invstd_out[c] = 1.f / sqrtf(var[c] + eps);
  }
}

class BatchNormOp : public CudaKernel {
 public:
  BatchNormOp(const ChannelNorm& norm, int64_t channels, int64_t inner, int64_t count)
      : norm_(norm), channels_(channels), inner_(inner), count_(count) {}
  Status Launch(const CudaLaunch& l) const override {
    ChannelNorm n = norm_;
    n.gamma = static_cast<const float*>(l.in[1]);
    n.beta = static_cast<const float*>(l.in[2]);
    n.mean = static_cast<const float*>(l.in[3]);
    n.var = static_cast<const float*>(l.in[4]);
    const float* x = static_cast<const float*>(l.in[0]);
    float* y = static_cast<float*>(l.out[0]);
    if (count_ != 0 && !RunsPlaneBlocks(inner_, count_)) {
      BatchNormElementsKernel<<<GridFor(count_), kThreads, 0, l.stream>>>(x, n, channels_, inner_,
                                                                          count_, y);
      MXL_RETURN_IF_ERROR(LaunchStatus("BatchNorm"));
    } else if (count_ != 0) {
      BatchNormKernel<<<static_cast<unsigned>(count_ / inner_), PlaneThreads(inner_), 0,
                        l.stream>>>(x, n, channels_, inner_, y);
      MXL_RETURN_IF_ERROR(LaunchStatus("BatchNorm"));
    }
    if (l.out.size() < 3) return Status();  // _FusedBatchNorm has no hidden outputs
    BatchNormStatsKernel<<<GridFor(channels_), kThreads, 0, l.stream>>>(
        n.mean, n.var, n.eps, channels_, static_cast<float*>(l.out[1]),
        static_cast<float*>(l.out[2]));
    return LaunchStatus("BatchNorm statistics");
  }

 private:
  ChannelNorm norm_;
  int64_t channels_, inner_, count_;
};

// A clamp attribute pair (clamp_min, clamp_max) of a fused node, as the CPU
// operators read it; no clamp when neither is given.
void ReadClamp(AttrParser* attrs, ChannelNorm* norm) {
  const double lower = attrs->Float("clamp_min", -HUGE_VAL);
  const double upper = attrs->Float("clamp_max", HUGE_VAL);
  norm->clamp = lower != -HUGE_VAL || upper != HUGE_VAL;
  norm->lower = static_cast<float>(lower);
  norm->upper = static_cast<float>(upper);
}

Status MakeBatchNorm(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                     std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  ChannelNorm norm;
  norm.eps = static_cast<float>(attrs.Float("eps", static_cast<double>(1e-3f)));
  norm.fix_gamma = attrs.Bool("fix_gamma", true);
  if (node.op == "_FusedBatchNorm") ReadClamp(&attrs, &norm);
  int64_t axis = attrs.Int("axis", 1);
  const Shape& shape = node.in_shapes[0];
  if (axis < 0) axis += shape.ndim();
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < shape.ndim(); ++d) inner *= shape[d];
  if (inner != 0 && shape.Size() / inner > 0x7fffffff) {
    *unsupported = "more than 2^31 channel planes";
    return Status();
  }
  out->reset(new BatchNormOp(norm, shape[static_cast<int>(axis)], inner, shape.Size()));
  return Status();
}

// A window attribute (kernel, stride, dilate, pad) along height (d = 0) or
// width (d = 1), `fallback` where it is not given. 1-D operators run as 2-D
// ones of height 1: their one value is the width's.
int64_t WindowAxis(const std::vector<int64_t>& values, bool one_d, int d, int64_t fallback) {
  if (one_d) return d == 0 || values.empty() ? fallback : values[0];
  return values.size() == 2 ? values[d] : fallback;
}

// --- pooling ---------------------------------------------------------------------

struct Pool2d {
  PoolType type;
  bool count_include_pad;
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
};

// pool_algorithms.cc's reference loops, one thread per output element (the
// same window spans, PoolWindowSpan, and each term divided by the divisor).
__global__ void PoolKernel2d(Pool2d g, const float* x, float* y) {
  const int64_t count = g.planes * g.out_h * g.out_w;
  MXL_GRID_STRIDE(i, count) {
    const int64_t ow = i % g.out_w;
    const int64_t oh = (i / g.out_w) % g.out_h;
    const int64_t plane = i / (g.out_w * g.out_h);
    const PoolSpan sh = PoolWindowSpan(oh, g.in_h, g.kernel_h, g.stride_h, g.pad_h);
    const PoolSpan sw = PoolWindowSpan(ow, g.in_w, g.kernel_w, g.stride_w, g.pad_w);
    const float* src = x + plane * g.in_h * g.in_w;
    if (g.type == PoolType::kMax) {
      float best = -FLT_MAX;
      for (int64_t h = sh.begin; h < sh.end; ++h) {
        for (int64_t w = sw.begin; w < sw.end; ++w) best = fmaxf(best, src[h * g.in_w + w]);
      }
      y[i] = best;
      continue;
    }
    float divisor = 1.f;
    if (g.type == PoolType::kAvg) {
      divisor = static_cast<float>(g.count_include_pad
                                       ? sh.padded_extent * sw.padded_extent
                                       : (sh.end - sh.begin) * (sw.end - sw.begin));
    }
    float sum = 0.f;
    for (int64_t h = sh.begin; h < sh.end; ++h) {
      for (int64_t w = sw.begin; w < sw.end; ++w) sum += src[h * g.in_w + w] / divisor;
    }
    y[i] = sum;
  }
}

class PoolOp : public CudaKernel {
 public:
  explicit PoolOp(const Pool2d& g) : g_(g) {}
  Status Launch(const CudaLaunch& l) const override {
    PoolKernel2d<<<GridFor(g_.planes * g_.out_h * g_.out_w), kThreads, 0, l.stream>>>(
        g_, static_cast<const float*>(l.in[0]), static_cast<float*>(l.out[0]));
    return LaunchStatus("Pooling");
  }

 private:
  Pool2d g_;
};

Status MakePooling(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                   std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  std::vector<int64_t> kernel = attrs.Tuple("kernel", {});
  const int type = attrs.Enum("pool_type", {"max", "avg", "sum", "lp"}, 0);
  const bool global = attrs.Bool("global_pool", false);
  std::vector<int64_t> stride = attrs.Tuple("stride", {});
  std::vector<int64_t> pad = attrs.Tuple("pad", {});
  const std::string include_text = attrs.String("count_include_pad", "None");
  const bool count_include_pad =
      include_text == "None" ? true : attrs.Bool("count_include_pad", true);
  const std::string layout = attrs.String("layout", "None");
  const Shape& in = node.in_shapes[0];
  const Shape& shape_out = node.out_shapes[0];
  if (type == 3 || (layout != "None" && layout != "NCW" && layout != "NCHW") ||
      (in.ndim() != 3 && in.ndim() != 4)) {
    *unsupported = "lp pooling, channel-last layouts and 3-D pooling run on the host";
    return Status();
  }
  // 1-D pooling is 2-D pooling of height 1.
  const bool one_d = in.ndim() == 3;
  Pool2d g;
  g.type = static_cast<PoolType>(type);
  g.count_include_pad = count_include_pad;
  g.planes = in[0] * in[1];
  g.in_h = one_d ? 1 : in[2];
  g.in_w = in[in.ndim() - 1];
  g.out_h = one_d ? 1 : shape_out[2];
  g.out_w = shape_out[shape_out.ndim() - 1];
  auto axis = [one_d](const std::vector<int64_t>& values, int d, int64_t fallback) {
    return WindowAxis(values, one_d, d, fallback);
  };
  if (global) {
    g.kernel_h = g.in_h;
    g.kernel_w = g.in_w;
    g.stride_h = g.stride_w = 1;
    g.pad_h = g.pad_w = 0;
  } else {
    g.kernel_h = axis(kernel, 0, 1);
    g.kernel_w = axis(kernel, 1, 1);
    g.stride_h = axis(stride, 0, 1);
    g.stride_w = axis(stride, 1, 1);
    g.pad_h = one_d ? 0 : axis(pad, 0, 0);
    g.pad_w = axis(pad, 1, 0);
  }
  out->reset(new PoolOp(g));
  return Status();
}

// --- softmax -----------------------------------------------------------------------

// Softmax over the middle axis of (outer, length, inner): one block per
// (outer, inner) row, a shared-memory maximum and sum.
__global__ void SoftmaxKernel(const float* x, float* y, int64_t length, int64_t inner,
                              float temperature) {
  __shared__ float scratch[kThreads];
  const int64_t row = blockIdx.x;
  const int64_t base = (row / inner) * length * inner + row % inner;
  float local = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < length; k += blockDim.x) {
    local = fmaxf(local, x[base + k * inner]);
  }
  scratch[threadIdx.x] = local;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const float maximum = scratch[0];
  __syncthreads();
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < length; k += blockDim.x) {
    const float e = expf((x[base + k * inner] - maximum) / temperature);
    y[base + k * inner] = e;
    sum += e;
  }
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
    __syncthreads();
  }
  const float total = scratch[0];
  for (int64_t k = threadIdx.x; k < length; k += blockDim.x) y[base + k * inner] /= total;
}

class SoftmaxOp : public CudaKernel {
 public:
  SoftmaxOp(int64_t outer, int64_t length, int64_t inner, float temperature)
      : outer_(outer), length_(length), inner_(inner), temperature_(temperature) {}
  Status Launch(const CudaLaunch& l) const override {
    const int64_t rows = outer_ * inner_;
    if (rows == 0 || length_ == 0) return Status();
    if (rows > 0x7fffffff) return Status::Error("softmax: too many rows for one CUDA grid");
    SoftmaxKernel<<<static_cast<unsigned>(rows), kThreads, 0, l.stream>>>(
        static_cast<const float*>(l.in[0]), static_cast<float*>(l.out[0]), length_, inner_,
        temperature_);
    return LaunchStatus("softmax");
  }

 private:
  int64_t outer_, length_, inner_;
  float temperature_;
};

Status MakeSoftmax(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                   std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  const Shape& shape = node.in_shapes[0];
  int64_t axis = shape.ndim() - 1;
  float temperature = 1.f;
  int64_t split = -1;  // softmax over dims [split, ndim) flattened, when >= 0
  if (node.op == "softmax") {
    axis = attrs.Int("axis", -1);
    double t = 1.0;
    if (attrs.OptionalFloat("temperature", &t)) temperature = static_cast<float>(t);
    if (attrs.OptionalBool("use_length") || attrs.String("dtype", "None") != "None" ||
        node.in_shapes.size() != 1) {
      *unsupported = "a length input or an output dtype";
      return Status();
    }
  } else if (node.op == "SoftmaxOutput") {
    const bool multi_output = attrs.Bool("multi_output", false);
    const bool preserve_shape = attrs.Bool("preserve_shape", false);
    if (multi_output) {
      axis = 1;
    } else if (!preserve_shape) {
      split = 1;
    }
  } else {  // SoftmaxActivation: instance mode is over the last axis
    if (attrs.Enum("mode", {"instance", "channel"}, 0) == 1) axis = 1;
  }
  if (axis < 0) axis += shape.ndim();
  int64_t outer = 1, length = 1, inner = 1;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (split >= 0 ? d < split : d < axis) {
      outer *= shape[d];
    } else if (split >= 0 || d == axis) {
      length *= shape[d];
    } else {
      inner *= shape[d];
    }
  }
  out->reset(new SoftmaxOp(outer, length, inner, temperature));
  return Status();
}

// --- GEMM operators ---------------------------------------------------------------

// y[(n, k, p)] += bias[k], one block per plane of `plane` elements.
__global__ void AddBiasKernel(float* y, const float* bias, int64_t channels, int64_t plane) {
  const int64_t index = blockIdx.x;
  const float b = bias[index % channels];
  float* dst = y + index * plane;
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) dst[i] += b;
}

// The same, element by element: for planes too small to give a block work
// (FullyConnected's rows have planes of 1).
__global__ void AddBiasElementsKernel(float* y, const float* bias, int64_t channels,
                                      int64_t plane, int64_t count) {
  MXL_GRID_STRIDE(i, count) y[i] += bias[plane == 1 ? i % channels : (i / plane) % channels];
}

Status AddBias(const CudaLaunch& l, const void* bias, int64_t channels, int64_t plane,
               int64_t count) {
  if (count == 0) return Status();
  if (!RunsPlaneBlocks(plane, count)) {
    AddBiasElementsKernel<<<GridFor(count), kThreads, 0, l.stream>>>(
        static_cast<float*>(l.out[0]), static_cast<const float*>(bias), channels, plane, count);
    return LaunchStatus("bias");
  }
  AddBiasKernel<<<static_cast<unsigned>(count / plane), PlaneThreads(plane), 0, l.stream>>>(
      static_cast<float*>(l.out[0]), static_cast<const float*>(bias), channels, plane);
  return LaunchStatus("bias");
}

class FullyConnectedOp : public CudaKernel {
 public:
  FullyConnectedOp(int64_t rows, int64_t width, int64_t hidden, bool bias)
      : rows_(rows), width_(width), hidden_(hidden), bias_(bias) {}
  Status Launch(const CudaLaunch& l) const override {
    // Y (rows x hidden) = X (rows x width) * W^T, W hidden x width.
    const float one = 1.f, zero = 0.f;
    MXL_CUBLAS_RETURN_IF_ERROR(cublasSgemm(
        l.blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(hidden_), static_cast<int>(rows_),
        static_cast<int>(width_), &one, static_cast<const float*>(l.in[1]),
        static_cast<int>(width_), static_cast<const float*>(l.in[0]), static_cast<int>(width_),
        &zero, static_cast<float*>(l.out[0]), static_cast<int>(hidden_)));
    if (bias_) return AddBias(l, l.in[2], hidden_, 1, rows_ * hidden_);
    return Status();
  }
  const char* Name() const override { return "cuBLAS SGEMM"; }

 private:
  int64_t rows_, width_, hidden_;
  bool bias_;
};

bool FitsInt(int64_t value) { return value >= 0 && value <= 0x7fffffff; }

Status MakeFullyConnected(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                          std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  const int64_t hidden = attrs.Int("num_hidden");
  const bool no_bias = attrs.Bool("no_bias", false);
  const bool flatten = attrs.Bool("flatten", true);
  const Shape& in = node.in_shapes[0];
  const int64_t width = flatten ? (in[0] == 0 ? 0 : in.Size() / in[0]) : in[in.ndim() - 1];
  const int64_t rows = width == 0 ? 0 : in.Size() / width;
  if (!FitsInt(rows) || !FitsInt(width) || !FitsInt(hidden) || rows == 0 || width == 0) {
    *unsupported = "sizes past cuBLAS's int range, or empty";
    return Status();
  }
  out->reset(new FullyConnectedOp(rows, width, hidden, !no_bias));
  return Status();
}

struct ConvGeometry {
  int64_t batch, channels, in_h, in_w, filters, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilate_h, dilate_w, groups;
};

// Columns of `images` consecutive images: per image, row (c, i, j) and
// column (oh, ow), zero where the window reads padding.
__global__ void Im2ColKernel(ConvGeometry g, const float* x, int64_t images, float* columns) {
  const int64_t plane = g.out_h * g.out_w;
  const int64_t per_image = g.channels * g.kernel_h * g.kernel_w * plane;
  MXL_GRID_STRIDE(i, images * per_image) {
    const int64_t image = i / per_image;
    const int64_t p = i % plane;
    const int64_t row = (i % per_image) / plane;
    const int64_t j = row % g.kernel_w;
    const int64_t ki = (row / g.kernel_w) % g.kernel_h;
    const int64_t c = row / (g.kernel_w * g.kernel_h);
    const int64_t h = (p / g.out_w) * g.stride_h - g.pad_h + ki * g.dilate_h;
    const int64_t w = (p % g.out_w) * g.stride_w - g.pad_w + j * g.dilate_w;
    columns[i] = h >= 0 && h < g.in_h && w >= 0 && w < g.in_w
                     ? x[((image * g.channels + c) * g.in_h + h) * g.in_w + w]
                     : 0.f;
  }
}

// One input channel per group: each output element sums its window.
__global__ void DepthwiseKernel(ConvGeometry g, const float* x, const float* weight,
                                const float* bias, float* y) {
  const int64_t count = g.batch * g.filters * g.out_h * g.out_w;
  const int64_t per_group = g.filters / g.groups;
  MXL_GRID_STRIDE(i, count) {
    const int64_t ow = i % g.out_w;
    const int64_t oh = (i / g.out_w) % g.out_h;
    const int64_t k = (i / (g.out_w * g.out_h)) % g.filters;
    const int64_t n = i / (g.out_w * g.out_h * g.filters);
    const float* src = x + (n * g.channels + k / per_group) * g.in_h * g.in_w;
    const float* w = weight + k * g.kernel_h * g.kernel_w;
    float sum = 0.f;
    for (int64_t a = 0; a < g.kernel_h; ++a) {
      const int64_t h = oh * g.stride_h - g.pad_h + a * g.dilate_h;
      if (h < 0 || h >= g.in_h) continue;
      for (int64_t b = 0; b < g.kernel_w; ++b) {
        const int64_t col = ow * g.stride_w - g.pad_w + b * g.dilate_w;
        if (col >= 0 && col < g.in_w) sum += src[h * g.in_w + col] * w[a * g.kernel_w + b];
      }
    }
    y[i] = bias ? sum + bias[k] : sum;
  }
}

class ConvolutionOp : public CudaKernel {
 public:
  enum Form { kDepthwise, kPointwise, kIm2col };
  ConvolutionOp(const ConvGeometry& g, bool bias, Form form) : g_(g), bias_(bias), form_(form) {}

  // im2col works on as many images at once as kIm2colBytes of columns
  // hold (at least one): one GEMM per group then covers them all.
  static constexpr int64_t kIm2colBytes = int64_t{256} << 20;
  int64_t ColumnBytes() const {
    return g_.channels * g_.kernel_h * g_.kernel_w * g_.out_h * g_.out_w *
           static_cast<int64_t>(sizeof(float));
  }
  int64_t ImagesPerChunk() const {
    const int64_t fit = kIm2colBytes / std::max<int64_t>(ColumnBytes(), 1);
    return std::max<int64_t>(1, std::min(g_.batch, fit));
  }
  size_t WorkspaceBytes() const override {
    return form_ == kIm2col ? static_cast<size_t>(ImagesPerChunk() * ColumnBytes()) : 0;
  }
  const char* Name() const override {
    return form_ == kDepthwise ? "depthwise" : form_ == kPointwise ? "1x1 GEMM" : "im2col GEMM";
  }

  Status Launch(const CudaLaunch& l) const override {
    const ConvGeometry& g = g_;
    const float* x = static_cast<const float*>(l.in[0]);
    const float* w = static_cast<const float*>(l.in[1]);
    const float* b = bias_ ? static_cast<const float*>(l.in[2]) : nullptr;
    float* y = static_cast<float*>(l.out[0]);
    if (form_ == kDepthwise) {
      DepthwiseKernel<<<GridFor(g.batch * g.filters * g.out_h * g.out_w), kThreads, 0,
                        l.stream>>>(g, x, w, b, y);
      return LaunchStatus("depthwise convolution");
    }
    const int64_t plane = g.out_h * g.out_w;
    const int64_t in_group = g.channels / g.groups, out_group = g.filters / g.groups;
    const int64_t depth = in_group * g.kernel_h * g.kernel_w;  // GEMM's inner dimension
    const float one = 1.f, zero = 0.f;
    if (form_ == kPointwise) {
      // Per group, over the whole batch: Y_n[g] = W[g] * X_n[g].
      for (int64_t group = 0; group < g.groups; ++group) {
        MXL_CUBLAS_RETURN_IF_ERROR(cublasSgemmStridedBatched(
            l.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(plane),
            static_cast<int>(out_group), static_cast<int>(depth), &one,
            x + group * in_group * plane, static_cast<int>(plane), g.channels * plane,
            w + group * out_group * depth, static_cast<int>(depth), 0,
            &zero, y + group * out_group * plane, static_cast<int>(plane), g.filters * plane,
            static_cast<int>(g.batch)));
      }
    } else {
      float* columns = static_cast<float*>(l.workspace);
      const int64_t rows = g.channels * g.kernel_h * g.kernel_w;  // columns rows per image
      const int64_t chunk = ImagesPerChunk();
      for (int64_t first = 0; first < g.batch; first += chunk) {
        const int64_t images = std::min(chunk, g.batch - first);
        Im2ColKernel<<<GridFor(images * rows * plane), kThreads, 0, l.stream>>>(
            g, x + first * g.channels * g.in_h * g.in_w, images, columns);
        MXL_RETURN_IF_ERROR(LaunchStatus("im2col"));
        // Per group, over the images: Y_n[g] = W[g] * columns_n[g].
        for (int64_t group = 0; group < g.groups; ++group) {
          MXL_CUBLAS_RETURN_IF_ERROR(cublasSgemmStridedBatched(
              l.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(plane),
              static_cast<int>(out_group), static_cast<int>(depth), &one,
              columns + group * depth * plane, static_cast<int>(plane), rows * plane,
              w + group * out_group * depth, static_cast<int>(depth), 0, &zero,
              y + (first * g.filters + group * out_group) * plane, static_cast<int>(plane),
              g.filters * plane, static_cast<int>(images)));
        }
      }
    }
    if (bias_) return AddBias(l, b, g.filters, plane, g.batch * g.filters * plane);
    return Status();
  }

 private:
  ConvGeometry g_;
  bool bias_;
  Form form_;
};

// How many of cuDNN's best-ranked algorithms a convolution times at bind
// under conv_tuning (with its cuBLAS form): the heuristics' first choice is
// not always the fastest (on an H200 at batch 1, resnet18_v1's pass took
// 1.37 ms with the heuristics' choices against 0.92 with cuBLAS alone;
// BENCHMARKS.md).
constexpr int kCudnnCandidates = 3;

// A convolution through cuDNN: descriptors made once, the algorithm chosen
// by cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm_v7, as
// PyTorch does by default) among those in plain FP32 arithmetic whose
// workspace fits kMaxWorkspace, the bias added after.
class CudnnConvolutionOp : public CudaKernel {
 public:
  static constexpr size_t kMaxWorkspace = size_t{256} << 20;

  CudnnConvolutionOp(const CudnnLibrary* dnn, const ConvGeometry& g, bool bias)
      : dnn_(dnn), g_(g), bias_(bias) {}
  ~CudnnConvolutionOp() override {
    if (x_) dnn_->DestroyTensorDescriptor(x_);
    if (y_) dnn_->DestroyTensorDescriptor(y_);
    if (w_) dnn_->DestroyFilterDescriptor(w_);
    if (conv_) dnn_->DestroyConvolutionDescriptor(conv_);
  }
  CudnnConvolutionOp(const CudnnConvolutionOp&) = delete;
  CudnnConvolutionOp& operator=(const CudnnConvolutionOp&) = delete;

  // Sets up the descriptors and the algorithm: the `rank`-th (from 0) of
  // those cuDNN's heuristics rank that qualify; *usable false when cuDNN
  // does not take this convolution or has no such algorithm.
  Status Init(cudnnHandle_t handle, int rank, bool* usable) {
    *usable = false;
    const ConvGeometry& g = g_;
    const int in_group = static_cast<int>(g.channels / g.groups);
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, CreateTensorDescriptor(&x_));
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, CreateTensorDescriptor(&y_));
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, CreateFilterDescriptor(&w_));
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, CreateConvolutionDescriptor(&conv_));
    MXL_CUDNN_RETURN_IF_ERROR(
        dnn_, SetTensor4dDescriptor(x_, kCudnnTensorNCHW, kCudnnFloat, static_cast<int>(g.batch),
                                    static_cast<int>(g.channels), static_cast<int>(g.in_h),
                                    static_cast<int>(g.in_w)));
    MXL_CUDNN_RETURN_IF_ERROR(
        dnn_, SetTensor4dDescriptor(y_, kCudnnTensorNCHW, kCudnnFloat, static_cast<int>(g.batch),
                                    static_cast<int>(g.filters), static_cast<int>(g.out_h),
                                    static_cast<int>(g.out_w)));
    MXL_CUDNN_RETURN_IF_ERROR(
        dnn_, SetFilter4dDescriptor(w_, kCudnnFloat, kCudnnTensorNCHW, static_cast<int>(g.filters),
                                    in_group, static_cast<int>(g.kernel_h),
                                    static_cast<int>(g.kernel_w)));
    MXL_CUDNN_RETURN_IF_ERROR(
        dnn_, SetConvolution2dDescriptor(
                  conv_, static_cast<int>(g.pad_h), static_cast<int>(g.pad_w),
                  static_cast<int>(g.stride_h), static_cast<int>(g.stride_w),
                  static_cast<int>(g.dilate_h), static_cast<int>(g.dilate_w),
                  kCudnnCrossCorrelation, kCudnnFloat));
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, SetConvolutionGroupCount(conv_, static_cast<int>(g.groups)));
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, SetConvolutionMathType(conv_, kCudnnFmaMath));
    int n = 0, c = 0, h = 0, w = 0;
    MXL_CUDNN_RETURN_IF_ERROR(dnn_,
                              GetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w));
    if (n != g.batch || c != g.filters || h != g.out_h || w != g.out_w) return Status();
    CudnnForwardAlgoPerf ranked[kCudnnForwardAlgorithms];
    int returned = 0;
    MXL_CUDNN_RETURN_IF_ERROR(dnn_, GetConvolutionForwardAlgorithm_v7(
                                        handle, x_, w_, conv_, y_, kCudnnForwardAlgorithms,
                                        &returned, ranked));
    for (int i = 0; i < returned; ++i) {
      const CudnnForwardAlgoPerf& choice = ranked[i];
      // The descriptor asks for FMA math; an algorithm ranked under the
      // default math type runs in FMA math too, one that needs tensor ops
      // (TF32) is skipped.
      if (choice.status != kCudnnSuccess ||
          (choice.math_type != kCudnnFmaMath && choice.math_type != kCudnnDefaultMath)) {
        continue;
      }
      size_t bytes = 0;
      if (dnn_->GetConvolutionForwardWorkspaceSize(handle, x_, w_, conv_, y_, choice.algo,
                                                   &bytes) != kCudnnSuccess ||
          bytes > kMaxWorkspace) {
        continue;
      }
      if (rank-- > 0) continue;
      algo_ = choice.algo;
      workspace_ = bytes;
      *usable = true;
      return Status();
    }
    return Status();
  }

  size_t WorkspaceBytes() const override { return workspace_; }
  const char* Name() const override {
    static const char* const kNames[kCudnnForwardAlgorithms] = {
        "cuDNN implicit GEMM", "cuDNN precomputed implicit GEMM", "cuDNN GEMM", "cuDNN direct",
        "cuDNN FFT", "cuDNN tiled FFT", "cuDNN Winograd", "cuDNN Winograd (unfused)"};
    return algo_ >= 0 && algo_ < kCudnnForwardAlgorithms ? kNames[algo_] : "cuDNN";
  }

  Status Launch(const CudaLaunch& l) const override {
    if (!l.dnn) return Status::Error("a cuDNN convolution launched without a cuDNN handle");
    const float one = 1.f, zero = 0.f;
    MXL_CUDNN_RETURN_IF_ERROR(
        dnn_, ConvolutionForward(l.dnn, &one, x_, l.in[0], w_, l.in[1], conv_, algo_,
                                 l.workspace, workspace_, &zero, y_, l.out[0]));
    if (bias_) {
      return AddBias(l, l.in[2], g_.filters, g_.out_h * g_.out_w,
                     g_.batch * g_.filters * g_.out_h * g_.out_w);
    }
    return Status();
  }

 private:
  const CudnnLibrary* dnn_;
  ConvGeometry g_;
  bool bias_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = -1;
  size_t workspace_ = 0;
};

// Several kernels for one node, the fastest of them chosen when the runner
// times them at bind (Tune; option conv_tuning), as MXNet autotuned its
// cuDNN convolutions. Until then, and where timing fails, the first runs.
class RacedKernel : public CudaKernel {
 public:
  explicit RacedKernel(std::vector<std::unique_ptr<CudaKernel>> candidates)
      : candidates_(std::move(candidates)) {}
  size_t WorkspaceBytes() const override {
    size_t bytes = 0;
    for (const auto& candidate : candidates_) bytes = std::max(bytes, candidate->WorkspaceBytes());
    return bytes;
  }
  const char* Name() const override { return candidates_[chosen_]->Name(); }
  Status Launch(const CudaLaunch& l) const override { return candidates_[chosen_]->Launch(l); }

  // Each candidate once to warm up (cuDNN and cuBLAS load their kernels on
  // first use), then kTimedRuns times between two events; a candidate that
  // fails to launch is not chosen.
  Status Tune(const CudaLaunch& l) override {
    constexpr int kTimedRuns = 3;
    cudaEvent_t begin = nullptr, end = nullptr;
    MXL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&begin));
    MXL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&end));
    float best = 0;
    bool any_timed = false;
    Status status;
    for (size_t i = 0; i < candidates_.size() && status.ok(); ++i) {
      bool launched = candidates_[i]->Launch(l).ok();
      status = StatusOfCuda(cudaEventRecord(begin, l.stream));
      for (int run = 0; run < kTimedRuns && launched && status.ok(); ++run) {
        launched = candidates_[i]->Launch(l).ok();
      }
      if (status.ok()) status = StatusOfCuda(cudaEventRecord(end, l.stream));
      if (status.ok()) status = StatusOfCuda(cudaEventSynchronize(end));
      float ms = 0;
      if (status.ok()) status = StatusOfCuda(cudaEventElapsedTime(&ms, begin, end));
      if (status.ok() && launched && (!any_timed || ms < best)) {
        best = ms;
        chosen_ = i;
        any_timed = true;
      }
      cudaGetLastError();  // a candidate's failed launch is not sticky
    }
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    return status;
  }

 private:
  std::vector<std::unique_ptr<CudaKernel>> candidates_;
  size_t chosen_ = 0;
};

// The convolution of `node` (a Convolution, or the convolution of a
// _FusedConvolution chain), adding its bias input when `bias` is true; the
// geometry in *geometry.
Status MakeConvolutionKernel(const CudaNode& node, bool bias, std::unique_ptr<CudaKernel>* out,
                             ConvGeometry* geometry, std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  const std::vector<int64_t> kernel = attrs.Tuple("kernel");
  const std::vector<int64_t> stride = attrs.Tuple("stride", {});
  const std::vector<int64_t> dilate = attrs.Tuple("dilate", {});
  const std::vector<int64_t> pad = attrs.Tuple("pad", {});
  const int64_t groups = attrs.Int("num_group", 1);
  const std::string layout = attrs.String("layout", "None");
  const Shape& in = node.in_shapes[0];
  const Shape& shape_out = node.out_shapes[0];
  if ((kernel.size() != 1 && kernel.size() != 2) ||
      (layout != "None" && layout != "NCW" && layout != "NCHW")) {
    *unsupported = "3-D and channel-last convolutions run on the host";
    return Status();
  }
  const bool one_d = kernel.size() == 1;
  auto axis = [one_d](const std::vector<int64_t>& values, int d, int64_t fallback) {
    return WindowAxis(values, one_d, d, fallback);
  };
  ConvGeometry g;
  g.batch = in[0];
  g.channels = in[1];
  g.in_h = one_d ? 1 : in[2];
  g.in_w = in[in.ndim() - 1];
  g.filters = shape_out[1];
  g.out_h = one_d ? 1 : shape_out[2];
  g.out_w = shape_out[shape_out.ndim() - 1];
  g.kernel_h = one_d ? 1 : kernel[0];
  g.kernel_w = kernel[kernel.size() - 1];
  g.stride_h = axis(stride, 0, 1);
  g.stride_w = axis(stride, 1, 1);
  g.dilate_h = axis(dilate, 0, 1);
  g.dilate_w = axis(dilate, 1, 1);
  g.pad_h = one_d ? 0 : axis(pad, 0, 0);
  g.pad_w = axis(pad, 1, 0);
  g.groups = groups;
  const int64_t plane = g.out_h * g.out_w;
  const int64_t depth = g.channels / groups * g.kernel_h * g.kernel_w;
  *geometry = g;
  if (g.batch == 0 || plane == 0 || g.filters == 0) {
    *unsupported = "an empty tensor";
    return Status();
  }
  ConvolutionOp::Form form = ConvolutionOp::kIm2col;
  if (g.channels == groups) {
    form = ConvolutionOp::kDepthwise;
  } else if (g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
             g.pad_h == 0 && g.pad_w == 0) {
    form = ConvolutionOp::kPointwise;
  }
  // The candidates: cuDNN's first choice (with tuning, its first
  // kCudnnCandidates), where the runner loaded it and every size fits its
  // ints, then the form above, where cuBLAS's ints hold the sizes. Without
  // tuning the first candidate runs; with it, the runner times them all.
  std::vector<std::unique_ptr<CudaKernel>> candidates;
  const int64_t elements = std::max(g.batch * g.channels * g.in_h * g.in_w,
                                    g.batch * g.filters * plane);
  const int cudnn_candidates = node.tune ? kCudnnCandidates : 1;
  for (int rank = 0; node.dnn && FitsInt(elements) && rank < cudnn_candidates; ++rank) {
    std::unique_ptr<CudnnConvolutionOp> op(new CudnnConvolutionOp(node.dnn, g, bias));
    bool usable = false;
    // An error here (a form this cuDNN rejects) leaves the layer to the
    // kernels below, as a refusal does.
    if (!op->Init(node.dnn_handle, rank, &usable).ok() || !usable) break;
    candidates.push_back(std::move(op));
  }
  if (form == ConvolutionOp::kDepthwise ||
      (FitsInt(plane) && FitsInt(depth) && FitsInt(g.filters) && FitsInt(g.batch))) {
    candidates.emplace_back(new ConvolutionOp(g, bias, form));
  }
  if (candidates.empty()) {
    *unsupported = "sizes past cuBLAS's int range";
  } else if (candidates.size() == 1 || !node.tune) {
    *out = std::move(candidates[0]);
  } else {
    out->reset(new RacedKernel(std::move(candidates)));
  }
  return Status();
}

Status MakeConvolution(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                       std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  ConvGeometry g;
  return MakeConvolutionKernel(node, !attrs.Bool("no_bias", false), out, &g, unsupported);
}

// The rest of a fused convolution chain (graph/fuse.h), one block per
// (image, filter) plane over the convolution's output: the bias, the
// BatchNorm, the residual, the clamp, in that order, each as its own
// operator computes it. One pass instead of one per operator.
__global__ void ConvEpilogueKernel(float* y, const float* bias, const float* residual,
                                   ChannelNorm n, int64_t channels, int64_t plane) {
  const int64_t index = blockIdx.x;
  const int64_t c = index % channels;
  const float b = bias ? bias[c] : 0.f;
  ChannelConstants k = {};
  if (n.mean) k = ChannelConstantsOf(n, c);
  float* dst = y + index * plane;
  const float* other = residual ? residual + index * plane : nullptr;
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) {
    float v = dst[i];
    if (bias) v += b;
    v = NormalizeOnly(n, k, v);
    if (other) v += other[i];
    dst[i] = ClampOnly(n, v);
  }
}

// _FusedConvolution: the convolution (without its bias) by any of the forms
// above, then the epilogue. Inputs, as fuse.cc writes them: data, weight,
// [bias], [gamma, beta, mean, var], [residual].
class FusedConvolutionOp : public CudaKernel {
 public:
  FusedConvolutionOp(std::unique_ptr<CudaKernel> conv, const ChannelNorm& norm, int bias_slot,
                     int norm_slot, int residual_slot, int64_t planes, int64_t channels,
                     int64_t plane)
      : conv_(std::move(conv)),
        norm_(norm),
        bias_slot_(bias_slot),
        norm_slot_(norm_slot),
        residual_slot_(residual_slot),
        planes_(planes),
        channels_(channels),
        plane_(plane),
        name_(StrCat(conv_->Name(), " + epilogue")) {}
  size_t WorkspaceBytes() const override { return conv_->WorkspaceBytes(); }
  const char* Name() const override { return name_.c_str(); }
  Status Tune(const CudaLaunch& l) override {
    Status status = conv_->Tune(l);
    name_ = StrCat(conv_->Name(), " + epilogue");  // the choice may have changed
    return status;
  }
  Status Launch(const CudaLaunch& l) const override {
    MXL_RETURN_IF_ERROR(conv_->Launch(l));
    auto input = [&l](int slot) {
      return slot < 0 ? nullptr : static_cast<const float*>(l.in[slot]);
    };
    ChannelNorm n = norm_;
    if (norm_slot_ >= 0) {
      n.gamma = input(norm_slot_);
      n.beta = input(norm_slot_ + 1);
      n.mean = input(norm_slot_ + 2);
      n.var = input(norm_slot_ + 3);
    }
    ConvEpilogueKernel<<<static_cast<unsigned>(planes_), PlaneThreads(plane_), 0, l.stream>>>(
        static_cast<float*>(l.out[0]), input(bias_slot_), input(residual_slot_), n, channels_,
        plane_);
    return LaunchStatus("convolution epilogue");
  }

 private:
  std::unique_ptr<CudaKernel> conv_;
  ChannelNorm norm_;
  int bias_slot_, norm_slot_, residual_slot_;
  int64_t planes_, channels_, plane_;
  std::string name_;
};

Status MakeFusedConvolution(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                            std::string* unsupported) {
  AttrParser attrs(node.name, node.op, *node.attrs);
  if (attrs.Bool("with_input_bn", false) || attrs.Bool("with_max_pool", false) ||
      attrs.Bool("with_input_avg_pool", false)) {
    *unsupported = "an input BatchNorm or a pooling fused in (the CPU's forms)";
    return Status();
  }
  const bool bias = !attrs.Bool("no_bias", false);
  ChannelNorm norm;
  const bool batch_norm = attrs.Bool("with_bn", false);
  norm.eps = static_cast<float>(attrs.Float("bn_eps", 1e-3));
  norm.fix_gamma = attrs.Bool("bn_fix_gamma", true);
  ReadClamp(&attrs, &norm);
  const bool residual = attrs.Bool("with_residual", false);
  int slot = 2;
  const int bias_slot = bias ? slot++ : -1;
  const int norm_slot = batch_norm ? slot : -1;
  if (batch_norm) slot += 4;
  const int residual_slot = residual ? slot++ : -1;
  if (static_cast<size_t>(slot) != node.in_shapes.size()) {
    return Status::Error(StrCat("a fused convolution with ", node.in_shapes.size(),
                                " inputs where its attributes make ", slot));
  }
  std::unique_ptr<CudaKernel> conv;
  ConvGeometry g;
  MXL_RETURN_IF_ERROR(MakeConvolutionKernel(node, false, &conv, &g, unsupported));
  if (!conv) return Status();
  const int64_t planes = g.batch * g.filters;
  if (!FitsInt(planes)) {
    *unsupported = "more than 2^31 output planes";
    return Status();
  }
  out->reset(new FusedConvolutionOp(std::move(conv), norm, bias_slot, norm_slot, residual_slot,
                                    planes, g.filters, g.out_h * g.out_w));
  return Status();
}

using Factory = Status (*)(const CudaNode&, std::unique_ptr<CudaKernel>*, std::string*);
struct CudaOpEntry {
  const char* name;
  Factory make;
};

const CudaOpEntry kCudaOps[] = {
#define MXL_CUDA_OP(name, factory, text) {name, factory},
#include "cuda_op_list.inc"
#undef MXL_CUDA_OP
};

}  // namespace cuda_ops_cc

Status MakeCudaKernel(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                      std::string* unsupported) {
  out->reset();
  unsupported->clear();
  const cuda_ops_cc::CudaOpEntry* entry = nullptr;
  for (const auto& candidate : cuda_ops_cc::kCudaOps) {
    if (node.op == candidate.name) entry = &candidate;
  }
  if (!entry) {
    *unsupported = "no GPU kernel";
    return Status();
  }
  // Copies move bytes of any dtype; every other kernel computes in float32.
  if (entry->make != cuda_ops_cc::MakeCopy && entry->make != cuda_ops_cc::MakeConcat &&
      !cuda_ops_cc::AllFloat32(node)) {
    *unsupported = "not float32";
    return Status();
  }
  return entry->make(node, out, unsupported);
}

}  // namespace mxlite

#endif  // MXLITE_NO_CUDA
