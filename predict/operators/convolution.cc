/*
 * Convolution: 1-D, 2-D and 3-D, channel-first layouts (NCW, NCHW, NCDHW),
 * with groups, dilation, per-axis kernel/stride/pad and an optional bias.
 *
 * The operator parses the attributes, infers shapes, folds a fused
 * BatchNorm into the weights and hands the layer, as one ConvGeometry, to
 * the algorithm table (conv_algorithms.h): the first algorithm that covers
 * the geometry and pays for it is chosen once, in Prepare, and prepared
 * with the final weights; Forward runs it and KernelName names it.
 *
 * Shapes follow MXNet's ConvolutionShape: out = (in + 2*pad - dk) / stride + 1
 * with dk = dilate*(k-1)+1 (floor), weight (num_filter, C/num_group, *kernel),
 * bias (num_filter,). Like MXNet, inference also fills the batch size and,
 * where the stride is 1, an unknown input extent back from the output.
 *
 * A max pooling fused after a 2-D convolution (a network's stem: fuse.cc)
 * makes the operator's output the pooled one. Where the chosen kernel
 * computes bands of output rows (the direct kernel of the stems), each
 * thread computes a band of convolution rows into its part of the
 * workspace and pools it from there into the output, so the
 * convolution's output (3 MB for a 224x224 image's 64-channel stem, more
 * than L2 holds) never goes to memory and back. The rows a band's first
 * windows share with the band before (one for a 3x3 stride-2 pooling) are
 * moved to the front of the buffer, not computed again, when the same
 * thread computed that band. Any other kernel writes the whole
 * convolution into the workspace and the pooling reads it from there.
 * Both run the Pooling operator's algorithms (max is exact), so the result
 * is what the Pooling operator computes from this convolution's output, at
 * any thread count.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "batch_norm_row.h"
#include "conv_algorithms.h"
#include "conv_tuning.h"
#include "operator.h"
#include "pool_algorithms.h"

namespace mxlite {
namespace convolution_op {

// A 2-D pooling window fused into the convolution: height, width.
struct PoolWindow {
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, pad[2] = {0, 0};
  bool full = false;  // pooling_convention 'full' (else 'valid')
  // The pooled extent along axis i of `extent` (at least the kernel, padded).
  int64_t Extent(int i, int64_t extent) const {
    return PoolOutputExtent(extent, kernel[i], stride[i], pad[i], full);
  }
};

// What the graph optimizer folded into this convolution (the internal
// operator _FusedConvolution): a following BatchNorm (its statistics are
// folded into the weights and bias at Prepare), a residual input added to
// the result, and a clamp (relu, relu6/clip); and, for a 1x1 convolution, a
// BatchNorm and clamp before it (a pre-activation network's), applied to
// the input as it is read. Plain Convolution has none.
struct Fusion {
  bool batch_norm = false;
  double bn_eps = 1e-3;
  bool bn_fix_gamma = true;
  bool residual = false;
  float lower = -std::numeric_limits<float>::infinity();
  float upper = std::numeric_limits<float>::infinity();
  bool input_bn = false;
  double in_bn_eps = 1e-3;
  bool in_bn_fix_gamma = true;
  float in_lower = -std::numeric_limits<float>::infinity();
  float in_upper = std::numeric_limits<float>::infinity();
  // The output may take over the residual's buffer (the memory plan's
  // in-place pair; set by the graph optimizer for the CPU's 1x1 layers).
  // Kernels that do not read each residual element before writing over it
  // (ConvKernel::ResidualMayBeOutput) then get a copy in the workspace.
  bool residual_in_place = false;
  // The data is a depthwise convolution's output (ConvGeometry).
  bool depthwise_input = false;
  // A max pooling after the convolution (2-D; no residual, no input
  // BatchNorm).
  bool max_pool = false;
  PoolWindow max_window;
  // An average pooling of the data before a 2-D 1x1 convolution (see
  // "Average pooling" below).
  bool input_avg_pool = false;
  PoolWindow avg_window;
  bool avg_count_include_pad = true;
};

// Bytes of convolution rows a band of the fused pooling holds at most: with
// the input rows it reads and the pooled rows it writes (700 KB in all for
// a 224x224 image's 64-channel stems) it stays within a 1 MB L2, and the
// pooled output, which the next layer reads, stays in L2 too. A band is
// never less than one pooling window's rows. Fewer, larger bands gather
// and keep fewer rows (measured against 256 KB in BENCHMARKS.md).
constexpr int64_t kPoolBandBytes = int64_t{512} << 10;

// Bands of the fused pooling: each holds at most as many pooled rows as
// kPoolBandBytes of convolution rows feed (row_bytes each, `window` rows
// for the first pooled row and `stride` more for each next one), up to 8,
// at least two bands per thread, at least one. Each thread takes a
// contiguous run of bands, so their count is a multiple of the thread
// count, and the caller shares the rows out near-evenly (ResNet's 56
// pooled rows at two threads: 8 bands of 7, 28 rows a thread, where 7
// bands of 8 gave one thread 24 rows and the other 32).
int64_t PoolBandCount(int64_t pooled_rows, int64_t threads, int64_t row_bytes, int64_t window,
                      int64_t stride) {
  if (pooled_rows <= 0) return 0;
  const int64_t fitting = (kPoolBandBytes / std::max<int64_t>(1, row_bytes) - window) / stride + 1;
  const int64_t most_rows =
      std::max<int64_t>(1, std::min({int64_t{8}, pooled_rows / (2 * threads), fitting}));
  const int64_t bands = (pooled_rows + most_rows - 1) / most_rows;
  const int64_t per_thread = (bands + threads - 1) / threads;
  return std::max<int64_t>(1, std::min(pooled_rows, per_thread * threads));
}

// Everything in a Fusion that the prepared weights depend on, exactly
// (floats in hexadecimal), for the prepared-weight cache's keys.
std::string FusionForm(const Fusion& f) {
  char text[256];
  std::snprintf(text, sizeof(text), "bn%d:%a:%d,res%d,clamp%a:%a,inbn%d:%a:%d,inclamp%a:%a,dw%d",
                f.batch_norm, f.bn_eps, f.bn_fix_gamma, f.residual, f.lower, f.upper, f.input_bn,
                f.in_bn_eps, f.in_bn_fix_gamma, f.in_lower, f.in_upper, f.depthwise_input);
  return text;
}

class Convolution : public Operator {
 public:
  Convolution(std::vector<int64_t> kernel, std::vector<int64_t> stride,
              std::vector<int64_t> dilate, std::vector<int64_t> pad, int64_t num_filter,
              int64_t num_group, bool no_bias, Fusion fusion)
      : kernel_(std::move(kernel)),
        stride_(std::move(stride)),
        dilate_(std::move(dilate)),
        pad_(std::move(pad)),
        num_filter_(num_filter),
        num_group_(num_group),
        no_bias_(no_bias),
        fusion_(fusion) {}

  std::vector<std::string> InputNames() const override {
    std::vector<std::string> names = {"data", "weight"};
    if (!no_bias_) names.push_back("bias");
    if (fusion_.batch_norm) {
      for (const char* name : {"gamma", "beta", "moving_mean", "moving_var"}) names.push_back(name);
    }
    if (fusion_.residual) names.push_back("residual");
    if (fusion_.input_bn) {
      for (const char* name : {"in_gamma", "in_beta", "in_moving_mean", "in_moving_var"}) {
        names.push_back(name);
      }
    }
    return names;
  }

  std::vector<InplacePair> InplaceOptions() const override {
    if (!fusion_.residual_in_place) return {};
    return {{ResidualIndex(), 0, false}};
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const int nk = static_cast<int>(kernel_.size());
    const std::vector<std::string> names = InputNames();
    Shape data = (*in)[0];
    if (!data.rank_known()) return Status();
    MXL_CHECK(data.ndim() == nk + 2, "input 'data' has shape ", data.ToString(), " but a ", nk,
              "-D convolution needs ", nk + 2, "-D input (batch, channel, ",
              nk == 1 ? "width" : nk == 2 ? "height, width" : "depth, height, width", ")");

    // Channels: from the data, else from a known weight.
    int64_t channels = data[1];
    const Shape& weight = (*in)[1];
    if (channels < 0 && weight.rank_known() && weight.ndim() == nk + 2 && weight[1] >= 0) {
      channels = weight[1] * num_group_;
    }
    if (channels >= 0) {
      MXL_CHECK(channels % num_group_ == 0, "input 'data' has shape ", data.ToString(), ": its ",
                channels, " channels are not divisible by num_group=", num_group_);
    }
    std::vector<int64_t> wdims = {num_filter_, channels >= 0 ? channels / num_group_ : -1};
    wdims.insert(wdims.end(), kernel_.begin(), kernel_.end());
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape(wdims), "input", names));
    int next = 2;
    if (!no_bias_) MXL_RETURN_IF_ERROR(AssignShape(in, next++, Shape({num_filter_}), "input", names));
    if (fusion_.batch_norm) {
      for (int i = 0; i < 4; ++i) {
        MXL_RETURN_IF_ERROR(AssignShape(in, next++, Shape({num_filter_}), "input", names));
      }
    }

    std::vector<int64_t> odims = {data[0], num_filter_};
    for (int i = 0; i < nk; ++i) {
      int64_t extent = data[2 + i];
      if (fusion_.input_avg_pool && extent >= 0) {
        MXL_RETURN_IF_ERROR(CheckPoolFits(fusion_.avg_window, i, extent, data, "data"));
        extent = fusion_.avg_window.Extent(i, extent);
      }
      if (extent < 0) {
        odims.push_back(-1);
        continue;
      }
      const int64_t padded = extent + 2 * pad_[i];
      const int64_t dk = DilatedKernel(i);
      MXL_CHECK(padded >= dk, "input 'data' has shape ", data.ToString(), ": spatial dim ", i,
                " is ", extent, " (", padded, " with padding) but the dilated kernel spans ", dk);
      odims.push_back(OutputExtent(i, extent));
    }
    if (fusion_.max_pool) {
      // The convolution's own output is not an entry of the graph: only
      // the batch size flows back through the pooling.
      for (int i = 0; i < 2; ++i) {
        const int64_t extent = odims[2 + i];
        if (extent < 0) continue;
        MXL_RETURN_IF_ERROR(
            CheckPoolFits(fusion_.max_window, i, extent, data, "the convolution's output"));
        odims[2 + i] = fusion_.max_window.Extent(i, extent);
      }
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, Shape(odims), "output", OutputNames()));
    if (fusion_.residual) MXL_RETURN_IF_ERROR(AssignShape(in, next, (*out)[0], "input", names));
    if (fusion_.input_bn && channels >= 0) {
      for (int i = 0; i < 4; ++i) {
        MXL_RETURN_IF_ERROR(
            AssignShape(in, InputBnIndex() + i, Shape({channels}), "input", names));
      }
    }

    // Back-fill the data: batch size always, extents where the stride is 1.
    const Shape& oshape = (*out)[0];
    if (oshape.rank_known() && oshape.ndim() == nk + 2) {
      data[0] = oshape[0];
      for (int i = 0; i < nk && !fusion_.max_pool && !fusion_.input_avg_pool; ++i) {
        if (data[2 + i] < 0 && oshape[2 + i] >= 0 && stride_[i] == 1) {
          data[2 + i] = oshape[2 + i] + dilate_[i] * (kernel_[i] - 1) - 2 * pad_[i];
        }
      }
    }
    if (data[1] < 0) data[1] = channels;
    return AssignShape(in, 0, data, "input", names);
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    const int nk = static_cast<int>(kernel_.size());
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    MXL_CHECK(data.ndim() == nk + 2 && oshape.ndim() == nk + 2, "input 'data' has shape ",
              data.ToString(), " and output ", oshape.ToString(), "; expected rank ", nk + 2);
    ConvGeometry& g = geometry_;
    g = ConvGeometry();
    g.batch = data[0];
    g.channels = data[1];
    g.filters = num_filter_;
    g.groups = num_group_;
    // 1-D and 2-D layers get unit dims in front.
    for (int i = 0; i < nk; ++i) {
      const int d = 3 - nk + i;
      g.in[d] = data[2 + i];
      // A fused pooling's output is the operator's; the convolution's is
      // not in the graph.
      g.out[d] = fusion_.max_pool ? OutputExtent(i, data[2 + i]) : oshape[2 + i];
      // Pooling first, the convolution reads the pooled data.
      if (fusion_.input_avg_pool) g.in[d] = fusion_.avg_window.Extent(i, data[2 + i]);
      g.kernel[d] = kernel_[i];
      g.stride[d] = stride_[i];
      g.pad[d] = pad_[i];
      g.dilate[d] = dilate_[i];
    }
    g.normalises_input = fusion_.input_bn;
    g.input_from_depthwise = fusion_.depthwise_input;
    g.threads = thread_pool() ? thread_pool()->size() : 1;
    MXL_CHECK(g.channels % g.groups == 0, "input 'data' has ", g.channels,
              " channels, not divisible by num_group=", g.groups);
    // Average pooling: convolving first where that pools fewer planes of
    // the same size (the input BatchNorm then stays the GEMM's); else the
    // BatchNorm is applied as the data is pooled.
    convolves_first_ = false;
    if (fusion_.input_avg_pool) {
      convolves_first_ = !fusion_.residual && g.filters < g.channels &&
                         g.in[1] == data[2] && g.in[2] == data[3];
      if (convolves_first_) {
        g.in[1] = data[2];
        g.in[2] = data[3];
      } else {
        g.normalises_input = false;
      }
    }

    ConvOptions switches;
    switches.winograd = runtime_options().winograd;
    switches.shifted_gemm = runtime_options().shifted_gemm;
    switches.compact_weights = runtime_options().compact_weights;
    algorithm_ = ChooseConvAlgorithm(g, switches);
    // Only an input BatchNorm can leave a layer without one: the graph
    // optimizer folds those into 1x1, stride-1, one-group layers only.
    MXL_CHECK(algorithm_ != nullptr, "no convolution algorithm covers ", g.ToString(),
              " (an input BatchNorm is folded into 1x1, stride-1, one-group layers only)");
    // The prepared kernel depends on every input but the data and the
    // residual, so executors of one model share it (SharedPrepared).
    std::vector<int> weight_inputs;
    for (int i = 1; i < static_cast<int>(in.size()); ++i) {
      if (!(fusion_.residual && i == ResidualIndex())) weight_inputs.push_back(i);
    }
    // Weights the graph computes may change from run to run: Forward
    // prepares those layers again on every call.
    weights_constant_ = true;
    for (int i : weight_inputs) weights_constant_ &= input_is_constant(i);
    // Timed choice (conv_tuning.h): layers with constant weights, where the
    // packed copies may be made (not under compact_weights).
    if (runtime_options().conv_tuning && !switches.compact_weights && weights_constant_ &&
        g.batch > 0 && g.OutSpatial() > 0) {
      ConvTuningRequest request;
      request.geometry = g;
      request.fusion_form = StrCat(FusionForm(fusion_), convolves_first_ ? ",pooled after" : "");
      request.has_residual = fusion_.residual;
      request.candidates = ApplicableConvAlgorithms(g, switches);
      request.heuristic = algorithm_;
      request.pool = thread_pool();
      request.cache_path = runtime_options().tuning_cache;
      request.max_bytes = MemoryBudget(runtime_options());
      MXL_RETURN_IF_ERROR(TuneConvAlgorithm(
          request,
          [&](const ConvAlgorithm* candidate, std::unique_ptr<ConvKernel>* kernel) {
            return MakeKernelWith(candidate, in, kernel);
          },
          &algorithm_));
    }
    // Kernels take the batch size per call, so one serves every batch.
    ConvGeometry any_batch = g;
    any_batch.batch = 0;
    const std::string form = StrCat("conv ", algorithm_->name, "; ", any_batch.ToString(), "; ",
                                    FusionForm(fusion_), convolves_first_ ? ",pooled after" : "");
    kernel_impl_.reset();
    MXL_RETURN_IF_ERROR(SharedPrepared<ConvKernel>(
        weight_inputs, form,
        [&](std::shared_ptr<const ConvKernel>* made) { return MakeKernel(in, made); },
        &kernel_impl_));
    *workspace_bytes = kernel_impl_->WorkspaceBytes();
    if (fusion_.max_pool) MXL_RETURN_IF_ERROR(PreparePool(oshape, workspace_bytes));
    if (fusion_.input_avg_pool) {
      MXL_RETURN_IF_ERROR(PrepareAvgPool(data, workspace_bytes));
      MXL_RETURN_IF_ERROR(AvgPoolConstants(in));
    }
    // The plan put the output over the residual, and this kernel would
    // write there before reading it: it reads a copy after its workspace.
    copies_residual_ = fusion_.residual && in[ResidualIndex()].data() == out[0].data() &&
                       !kernel_impl_->ResidualMayBeOutput();
    if (copies_residual_) {
      residual_copy_offset_ = AlignedBytes(*workspace_bytes);
      *workspace_bytes = residual_copy_offset_ + out[0].bytes();
    }
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const ConvGeometry& g = geometry_;
    if (g.batch == 0 || g.OutSpatial() == 0) return Status();
    MXL_CHECK(kernel_impl_ != nullptr, "convolution run before it was prepared");
    if (!weights_constant_) MXL_RETURN_IF_ERROR(MakeKernel(in, &kernel_impl_));
    ConvCall call;
    call.batch = g.batch;
    call.data = in[0].fdata();
    call.residual = fusion_.residual ? in[ResidualIndex()].fdata() : nullptr;
    call.output = out[0].fdata();
    call.workspace = ctx.workspace;
    call.workspace_bytes = ctx.workspace_bytes;
    call.pool = ctx.pool;
    if (call.residual == call.output && !kernel_impl_->ResidualMayBeOutput()) {
      // See Prepare: the residual goes to the workspace first.
      MXL_CHECK(copies_residual_ && ctx.workspace_bytes >= residual_copy_offset_ + out[0].bytes(),
                "internal error: the convolution's output lies over its residual, and no "
                "workspace was set aside for a copy");
      char* copy = static_cast<char*>(ctx.workspace) + residual_copy_offset_;
      std::memcpy(copy, call.residual, out[0].bytes());
      call.residual = reinterpret_cast<const float*>(copy);
      call.workspace_bytes = residual_copy_offset_;
    }
    if (fusion_.max_pool) return ForwardPooled(call, out[0].fdata());
    if (fusion_.input_avg_pool) {
      if (!weights_constant_) MXL_RETURN_IF_ERROR(AvgPoolConstants(in));
      return ForwardAvgPooled(call);
    }
    return kernel_impl_->Forward(call);
  }

  const char* KernelName() const override {
    return fusion_.max_pool || fusion_.input_avg_pool ? kernel_name_.c_str()
           : algorithm_                                ? algorithm_->name
                                                       : "";
  }
  size_t PreparedBytes() const override { return kernel_impl_ ? kernel_impl_->PreparedBytes() : 0; }

 private:
  // The chosen algorithm's kernel for the current values of the inputs.
  Status MakeKernel(const std::vector<NDArray>& in, std::shared_ptr<const ConvKernel>* out) const {
    std::unique_ptr<ConvKernel> kernel;
    MXL_RETURN_IF_ERROR(MakeKernelWith(algorithm_, in, &kernel));
    *out = std::move(kernel);
    return Status();
  }
  // `algorithm`'s kernel for the current values of the inputs.
  Status MakeKernelWith(const ConvAlgorithm* algorithm, const std::vector<NDArray>& in,
                        std::unique_ptr<ConvKernel>* out) const {
    const bool in_place = algorithm->switch_ == ConvAlgorithm::kCompactOnly;
    ConvWeights weights;
    MXL_RETURN_IF_ERROR(FinalWeights(in, in_place, &weights));
    if (convolves_first_) {  // the bias and clamp follow the pooling
      std::fill(weights.bias.begin(), weights.bias.end(), 0.f);
      weights.lower = -std::numeric_limits<float>::infinity();
      weights.upper = std::numeric_limits<float>::infinity();
    }
    return algorithm->prepare(geometry_, std::move(weights), out);
  }

  // Inputs after data, weight and bias: the folded BatchNorm's four, then
  // the residual, then the input BatchNorm's four.
  int ResidualIndex() const { return 2 + (no_bias_ ? 0 : 1) + (fusion_.batch_norm ? 4 : 0); }
  int InputBnIndex() const { return ResidualIndex() + (fusion_.residual ? 1 : 0); }

  // Final weights and per-filter bias, with a fused BatchNorm folded in:
  //   bn(conv(x) + b) = conv(x) * s + ((b - mean) * s + beta),
  //   s = gamma / sqrt(var + eps)        (gamma = 1 with fix_gamma)
  // and the clamps and input BatchNorm of the fusion.
  // With `in_place`, the weights stay in the parameter array (copied when
  // the graph computes them) and the BatchNorm's scale goes to
  // filter_scale.
  Status FinalWeights(const std::vector<NDArray>& in, bool in_place, ConvWeights* out) const {
    const ConvGeometry& g = geometry_;
    const int64_t per_filter = g.channels / g.groups * g.KernelSize();
    ConvWeights& w = *out;
    const float* weight = in[1].fdata();
    if (!in_place) {
      w.weights.assign(weight, weight + g.filters * per_filter);
    } else if (input_is_constant(1)) {
      // The parameter, or its float32 copy converted once: both keep
      // their values as long as the model.
      w.weights_in_place = in[1];
    } else {
      MXL_RETURN_IF_ERROR(in[1].Clone(&w.weights_in_place));
    }
    w.bias.assign(static_cast<size_t>(g.filters), 0.f);
    if (!no_bias_) std::copy(in[2].fdata(), in[2].fdata() + g.filters, w.bias.begin());
    if (fusion_.batch_norm) {
      const int first = no_bias_ ? 2 : 3;
      const float* gamma = in[first].fdata();
      const float* beta = in[first + 1].fdata();
      const float* mean = in[first + 2].fdata();
      const float* var = in[first + 3].fdata();
      if (in_place) w.filter_scale.resize(static_cast<size_t>(g.filters));
      for (int64_t f = 0; f < g.filters; ++f) {
        const float invstd = BatchNormInvStd(var[f], fusion_.bn_eps);  // as MXNet
        const float scale = (fusion_.bn_fix_gamma ? 1.f : gamma[f]) * invstd;
        if (in_place) {
          w.filter_scale[f] = scale;
        } else {
          for (int64_t i = 0; i < per_filter; ++i) w.weights[f * per_filter + i] *= scale;
        }
        w.bias[f] = (w.bias[f] - mean[f]) * scale + beta[f];
      }
    }
    w.lower = fusion_.lower;
    w.upper = fusion_.upper;
    if (fusion_.input_bn) {
      const int first = InputBnIndex();
      const float* gamma = in[first].fdata();
      const float* beta = in[first + 1].fdata();
      const float* mean = in[first + 2].fdata();
      const float* var = in[first + 3].fdata();
      w.input_scale.resize(static_cast<size_t>(4 * g.channels));
      for (int64_t c = 0; c < g.channels; ++c) {
        w.input_scale[4 * c] = mean[c];
        w.input_scale[4 * c + 1] = BatchNormInvStd(var[c], fusion_.in_bn_eps);
        w.input_scale[4 * c + 2] = gamma[c];
        w.input_scale[4 * c + 3] = beta[c];
      }
      w.input_has_gamma = !fusion_.in_bn_fix_gamma;
      w.input_lower = fusion_.in_lower;
      w.input_upper = fusion_.in_upper;
    }
    return Status();
  }

  // The fused max pooling (see the file comment). Row bands where the
  // kernel computes them: every band's pooling geometry (the first may
  // start in the padding, the last may hold fewer rows) gets its algorithm
  // from the Pooling operator's table; else one pooling of whole planes
  // after the whole convolution, which then goes to the workspace.
  Status PreparePool(const Shape& oshape, size_t* workspace_bytes) {
    const ConvGeometry& g = geometry_;
    const int64_t conv_h = g.out[1], conv_w = g.out[2];
    pooled_h_ = oshape[2];
    pooled_w_ = oshape[3];
    PoolGeometry pg;
    pg.type = PoolType::kMax;
    pg.kernel[1] = fusion_.max_window.kernel[0];
    pg.kernel[2] = fusion_.max_window.kernel[1];
    pg.stride[1] = fusion_.max_window.stride[0];
    pg.stride[2] = fusion_.max_window.stride[1];
    pg.pad[2] = fusion_.max_window.pad[1];
    pg.in[2] = conv_w;
    pg.out[2] = pooled_w_;
    bands_.clear();
    band_kernels_.clear();
    whole_pool_.reset();
    if (!kernel_impl_->ComputesRowBands()) {
      pg.planes = g.batch * g.filters;
      pg.in[1] = conv_h;
      pg.out[1] = pooled_h_;
      pg.pad[1] = fusion_.max_window.pad[0];
      const PoolAlgorithm* algorithm = ChoosePoolAlgorithm(pg);
      MXL_CHECK(algorithm != nullptr, "no pooling algorithm covers ", pg.ToString());
      MXL_RETURN_IF_ERROR(algorithm->prepare(pg, &whole_pool_));
      kernel_name_ = StrCat(algorithm_->name, ", then max pool ", algorithm->name);
      const int64_t conv_floats = g.batch * g.filters * conv_h * conv_w;
      *workspace_bytes =
          AlignedBytes(*workspace_bytes) + static_cast<size_t>(conv_floats) * sizeof(float);
      return Status();
    }
    // Bands of pooled rows; each reads the convolution rows its windows
    // cover, clipped to the convolution's output.
    const int64_t threads = thread_pool() ? thread_pool()->size() : 1;
    const int64_t band_count =
        PoolBandCount(pooled_h_, threads, g.filters * conv_w * int64_t{sizeof(float)},
                      fusion_.max_window.kernel[0], fusion_.max_window.stride[0]);
    const int64_t stride = fusion_.max_window.stride[0], pad = fusion_.max_window.pad[0];
    // One plane per call: each band plane's pooled rows go straight to
    // their place in the output plane.
    pg.planes = 1;
    int64_t most_rows = 0;
    for (int64_t b = 0; b < band_count; ++b) {
      Band band;
      band.pooled_begin = b * pooled_h_ / band_count;
      band.pooled_end = (b + 1) * pooled_h_ / band_count;
      const int64_t start = band.pooled_begin * stride - pad;
      band.conv_begin = std::max<int64_t>(0, start);
      band.conv_end =
          std::min(conv_h, (band.pooled_end - 1) * stride - pad + fusion_.max_window.kernel[0]);
      pg.in[1] = band.conv_end - band.conv_begin;
      pg.out[1] = band.pooled_end - band.pooled_begin;
      pg.pad[1] = band.conv_begin - start;  // the first band's windows start in the padding
      most_rows = std::max(most_rows, pg.in[1]);
      // Bands of one geometry (rows in and out, padding) share a kernel.
      band.kernel = -1;
      for (size_t k = 0; k < band_kernels_.size(); ++k) {
        const PoolGeometry& other = band_kernels_[k].geometry;
        if (other.in[1] == pg.in[1] && other.out[1] == pg.out[1] && other.pad[1] == pg.pad[1]) {
          band.kernel = static_cast<int>(k);
        }
      }
      if (band.kernel < 0) {
        const PoolAlgorithm* algorithm = ChoosePoolAlgorithm(pg);
        MXL_CHECK(algorithm != nullptr, "no pooling algorithm covers ", pg.ToString());
        BandKernel made;
        made.geometry = pg;
        MXL_RETURN_IF_ERROR(algorithm->prepare(pg, &made.kernel));
        band.kernel = static_cast<int>(band_kernels_.size());
        band_kernels_.push_back(std::move(made));
        if (band.kernel == 0) {
          kernel_name_ = StrCat(algorithm_->name, ", max pool ", algorithm->name, " in row bands");
        }
      }
      bands_.push_back(band);
    }
    // Each thread's part of the workspace: a band's convolution rows.
    slot_floats_ = g.filters * most_rows * conv_w;
    slots_ = std::max<int64_t>(1, std::min(threads, static_cast<int64_t>(bands_.size()) *
                                                        std::max<int64_t>(1, g.batch)));
    *workspace_bytes =
        std::max(*workspace_bytes, static_cast<size_t>(slots_ * slot_floats_) * sizeof(float));
    return Status();
  }

  Status ForwardPooled(ConvCall call, float* output) const {
    const ConvGeometry& g = geometry_;
    const int64_t conv_w = g.out[2];
    const int64_t in_image = g.channels * g.InSpatial();
    const int64_t pooled_plane = pooled_h_ * pooled_w_;
    float* const workspace = static_cast<float*>(call.workspace);
    if (whole_pool_) {
      // The convolution into the workspace after the kernel's own scratch.
      const size_t kernel_bytes = AlignedBytes(kernel_impl_->WorkspaceBytes());
      call.output = reinterpret_cast<float*>(static_cast<char*>(call.workspace) + kernel_bytes);
      call.workspace_bytes = kernel_bytes;
      MXL_RETURN_IF_ERROR(kernel_impl_->Forward(call));
      whole_pool_->Forward(call.output, output, call.pool);
      return Status();
    }
    const int64_t bands = static_cast<int64_t>(bands_.size());
    const int64_t tasks = call.batch * bands;
    const int64_t slots = std::min(slots_, tasks);
    // Slot s takes the s-th contiguous part of the (image, band) tasks.
    ParallelFor(call.pool, slots, [&](int64_t slot) {
      float* conv_rows = workspace + slot * slot_floats_;
      const int64_t first_task = slot * tasks / slots;
      for (int64_t task = first_task; task < (slot + 1) * tasks / slots; ++task) {
        const int64_t n = task / bands;
        const Band& band = bands_[static_cast<size_t>(task % bands)];
        const int64_t rows = band.conv_end - band.conv_begin;
        // Rows the previous band of this image left in the buffer move to
        // the front of each plane. Planes no longer than the previous
        // band's go first to last, longer ones last to first, so that no
        // plane lands on rows still to move.
        int64_t kept = 0;
        if (task > first_task && task % bands > 0) {
          const Band& before = bands_[static_cast<size_t>(task % bands - 1)];
          const int64_t before_rows = before.conv_end - before.conv_begin;
          kept = std::max<int64_t>(0, before.conv_end - band.conv_begin);
          for (int64_t i = 0; i < g.filters && kept > 0; ++i) {
            const int64_t f = rows <= before_rows ? i : g.filters - 1 - i;
            std::memmove(conv_rows + f * rows * conv_w,
                         conv_rows + (f * before_rows + before_rows - kept) * conv_w,
                         static_cast<size_t>(kept * conv_w) * sizeof(float));
          }
        }
        kernel_impl_->ForwardRows(call.data + n * in_image, band.conv_begin + kept, band.conv_end,
                                  conv_rows + kept * conv_w, rows * conv_w);
        const PoolKernel& pool_kernel = *band_kernels_[static_cast<size_t>(band.kernel)].kernel;
        float* pooled = output + n * g.filters * pooled_plane + band.pooled_begin * pooled_w_;
        for (int64_t f = 0; f < g.filters; ++f) {
          pool_kernel.Forward(conv_rows + f * rows * conv_w, pooled + f * pooled_plane, nullptr);
        }
      }
    });
    return Status();
  }

  // Average pooling (with_input_avg_pool, fuse.cc): the operator computes
  // conv1x1(avgpool(data)), in one of two orders, both of which give the
  // same values up to rounding (the two commute):
  //   - pooling first: each image's planes are pooled (with an input
  //     BatchNorm, normalised first, 16 planes at a time, into a thread's
  //     scratch) into the workspace, and the GEMM reads the pooled planes
  //     with its whole epilogue;
  //   - convolving first, where the pooling keeps the map's size and the
  //     layer has fewer filters than channels: the GEMM, without bias and
  //     clamp, writes each image into the workspace, which is pooled into
  //     the output, and then the bias and clamp are applied.
  // Either runs the Pooling operator's algorithms on whole planes, so the
  // bits do not depend on the thread count.
  Status PrepareAvgPool(const Shape& data, size_t* workspace_bytes) {
    const ConvGeometry& g = geometry_;
    PoolGeometry pg;
    pg.type = PoolType::kAvg;
    pg.count_include_pad = fusion_.avg_count_include_pad;
    for (int i = 0; i < 2; ++i) {
      pg.in[1 + i] = data[2 + i];
      pg.out[1 + i] = fusion_.avg_window.Extent(i, data[2 + i]);
      pg.kernel[1 + i] = fusion_.avg_window.kernel[i];
      pg.stride[1 + i] = fusion_.avg_window.stride[i];
      pg.pad[1 + i] = fusion_.avg_window.pad[i];
    }
    avg_pool_geometry_ = pg;
    // The staged planes: the convolution's output (convolving first) or the
    // pooled data, one image.
    const int64_t staged_planes = convolves_first_ ? g.filters : g.channels;
    staged_offset_ = AlignedBytes(kernel_impl_->WorkspaceBytes());
    size_t bytes = staged_offset_ + static_cast<size_t>(staged_planes * (convolves_first_
                                                                            ? pg.InPlane()
                                                                            : pg.OutPlane())) *
                                        sizeof(float);
    // Normalising while pooling: kNormalisedPlanes planes at a time (the
    // blocked pooling kernels' width) into a thread's scratch, then pooled;
    // a shorter last block has a kernel of its own.
    normalises_planes_ = fusion_.input_bn && !convolves_first_;
    const PoolAlgorithm* algorithm = nullptr;
    avg_pool_.reset();
    last_block_pool_.reset();
    norm_slots_ = 0;
    if (normalises_planes_) {
      const int64_t blocks = (g.channels + kNormalisedPlanes - 1) / kNormalisedPlanes;
      norm_slots_ = std::min(thread_pool() ? thread_pool()->size() : int64_t{1}, blocks);
      pg.planes = std::min(kNormalisedPlanes, g.channels);
      MXL_RETURN_IF_ERROR(PrepareAvgPoolKernel(pg, &avg_pool_, &algorithm));
      if (g.channels > kNormalisedPlanes && g.channels % kNormalisedPlanes != 0) {
        pg.planes = g.channels % kNormalisedPlanes;
        MXL_RETURN_IF_ERROR(PrepareAvgPoolKernel(pg, &last_block_pool_, nullptr));
      }
    } else {
      pg.planes = staged_planes;
      MXL_RETURN_IF_ERROR(PrepareAvgPoolKernel(pg, &avg_pool_, &algorithm));
    }
    norm_offset_ = AlignedBytes(bytes);
    *workspace_bytes = norm_offset_ + static_cast<size_t>(norm_slots_ * kNormalisedPlanes *
                                                          pg.InPlane()) *
                                          sizeof(float);
    kernel_name_ = StrCat(algorithm_->name,
                          convolves_first_ ? ", then avg pool " : " of the avg pool ",
                          algorithm->name);
    return Status();
  }

  static Status PrepareAvgPoolKernel(const PoolGeometry& pg, std::unique_ptr<PoolKernel>* kernel,
                                     const PoolAlgorithm** chosen) {
    const PoolAlgorithm* algorithm = ChoosePoolAlgorithm(pg);
    MXL_CHECK(algorithm != nullptr, "no pooling algorithm covers ", pg.ToString());
    if (chosen) *chosen = algorithm;
    return algorithm->prepare(pg, kernel);
  }

  // The bias and clamp applied after the pooling (convolving first), and
  // the input BatchNorm applied while pooling (pooling first), for the
  // current values of the inputs.
  Status AvgPoolConstants(const std::vector<NDArray>& in) {
    ConvWeights w;
    MXL_RETURN_IF_ERROR(FinalWeights(in, /*in_place=*/true, &w));
    pooled_bias_ = std::move(w.bias);
    input_norm_ = std::move(w.input_scale);
    return Status();
  }

  Status ForwardAvgPooled(const ConvCall& call) const {
    const ConvGeometry& g = geometry_;
    const PoolGeometry& pg = avg_pool_geometry_;
    char* const workspace = static_cast<char*>(call.workspace);
    float* const staged = reinterpret_cast<float*>(workspace + staged_offset_);
    const int64_t in_image = g.channels * pg.InPlane();
    const int64_t out_plane = g.OutSpatial(), out_image = g.filters * out_plane;
    ConvCall image = call;
    image.batch = 1;
    image.workspace_bytes = AlignedBytes(kernel_impl_->WorkspaceBytes());
    for (int64_t n = 0; n < call.batch; ++n) {
      const float* data = call.data + n * in_image;
      float* output = call.output + n * out_image;
      if (convolves_first_) {
        image.data = data;
        image.output = staged;
        MXL_RETURN_IF_ERROR(kernel_impl_->Forward(image));
        avg_pool_->Forward(staged, output, call.pool);
        // x + bias, clamped: BatchNormRow's (x - 0) * 1 + bias is exactly that.
        const bool clamps = ClampIsSet(fusion_.lower, fusion_.upper);
        ParallelFor(call.pool, g.filters, [&](int64_t f) {
          float* plane = output + f * out_plane;
          BatchNormRow(plane, plane, out_plane, 0.f, 1.f, false, 1.f,
                       pooled_bias_[static_cast<size_t>(f)], clamps, fusion_.lower,
                       fusion_.upper);
        });
        continue;
      }
      if (normalises_planes_) {
        const bool clamps = ClampIsSet(fusion_.in_lower, fusion_.in_upper);
        float* const scratch = reinterpret_cast<float*>(workspace + norm_offset_);
        const int64_t blocks = (g.channels + kNormalisedPlanes - 1) / kNormalisedPlanes;
        // Slot s takes the s-th contiguous part of the blocks.
        ParallelFor(call.pool, norm_slots_, [&](int64_t slot) {
          float* planes = scratch + slot * kNormalisedPlanes * pg.InPlane();
          for (int64_t b = slot * blocks / norm_slots_; b < (slot + 1) * blocks / norm_slots_;
               ++b) {
            const int64_t first = b * kNormalisedPlanes;
            const int64_t count = std::min(kNormalisedPlanes, g.channels - first);
            for (int64_t c = first; c < first + count; ++c) {
              const float* s = input_norm_.data() + 4 * c;
              BatchNormRow(data + c * pg.InPlane(), planes + (c - first) * pg.InPlane(),
                           pg.InPlane(), s[0], s[1], !fusion_.in_bn_fix_gamma, s[2], s[3],
                           clamps, fusion_.in_lower, fusion_.in_upper);
            }
            const PoolKernel& kernel =
                count < kNormalisedPlanes && last_block_pool_ ? *last_block_pool_ : *avg_pool_;
            kernel.Forward(planes, staged + first * pg.OutPlane(), nullptr);
          }
        });
      } else {
        avg_pool_->Forward(data, staged, call.pool);
      }
      image.data = staged;
      image.output = output;
      if (call.residual) image.residual = call.residual + n * out_image;
      MXL_RETURN_IF_ERROR(kernel_impl_->Forward(image));
    }
    return Status();
  }

  // Whether a fused pooling's window fits `extent` along spatial axis i
  // (of `what`, which comes from the data).
  static Status CheckPoolFits(const PoolWindow& window, int i, int64_t extent, const Shape& data,
                              const char* what) {
    const int64_t padded = extent + 2 * window.pad[i];
    MXL_CHECK(window.kernel[i] <= padded, "input 'data' has shape ", data.ToString(), ": ",
              what, ", ", extent, " along spatial dim ", i, " (", padded,
              " with the pooling's padding), is smaller than the pooling kernel ",
              window.kernel[i]);
    return Status();
  }

  // Spatial axis i: the kernel's extent with dilation, and the output's for
  // an input of `extent` (floor, as MXNet's ConvolutionShape).
  int64_t DilatedKernel(int i) const { return dilate_[i] * (kernel_[i] - 1) + 1; }
  int64_t OutputExtent(int i, int64_t extent) const {
    return (extent + 2 * pad_[i] - DilatedKernel(i)) / stride_[i] + 1;
  }

  // Bytes rounded up to a whole cache line, where a second buffer follows.
  static size_t AlignedBytes(size_t bytes) { return (bytes + 63) / 64 * 64; }

  std::vector<int64_t> kernel_, stride_, dilate_, pad_;
  int64_t num_filter_, num_group_;
  bool no_bias_;
  Fusion fusion_;
  // Set by Prepare.
  ConvGeometry geometry_;
  const ConvAlgorithm* algorithm_ = nullptr;
  std::shared_ptr<const ConvKernel> kernel_impl_;  // shared by the model's executors
  bool weights_constant_ = true;
  // Whether the residual is copied to the workspace, and where (Prepare).
  bool copies_residual_ = false;
  size_t residual_copy_offset_ = 0;
  // The fused max pooling's plan (PreparePool).
  struct Band {
    int64_t pooled_begin, pooled_end;  // rows of the pooled output
    int64_t conv_begin, conv_end;      // rows of the convolution they read
    int kernel;                        // index into band_kernels_
  };
  int64_t pooled_h_ = 0, pooled_w_ = 0;
  std::vector<Band> bands_;
  struct BandKernel {
    PoolGeometry geometry;
    std::unique_ptr<PoolKernel> kernel;
  };
  std::vector<BandKernel> band_kernels_;
  std::unique_ptr<PoolKernel> whole_pool_;  // without row bands
  int64_t slot_floats_ = 0, slots_ = 1;  // per thread's workspace part, parts
  std::string kernel_name_;
  // The fused average pooling's plan (PrepareAvgPool) and constants
  // (AvgPoolConstants).
  bool convolves_first_ = false, normalises_planes_ = false;
  PoolGeometry avg_pool_geometry_;
  // Pooling all staged planes, or, normalising, a block of them (and the
  // last block where it is shorter).
  std::unique_ptr<PoolKernel> avg_pool_, last_block_pool_;
  static constexpr int64_t kNormalisedPlanes = 16;
  size_t staged_offset_ = 0, norm_offset_ = 0;
  int64_t norm_slots_ = 0;
  std::vector<float> pooled_bias_, input_norm_;
};

// A fused pooling's window attributes as written by fuse.cc: read with the
// others, checked after.
struct PoolWindowAttrs {
  const char* kernel_key;
  const char* stride_key;
  const char* pad_key;
  const char* convention_key;
  std::vector<int64_t> kernel, stride, pad;

  void Read(AttrParser* attrs, PoolWindow* window) {
    kernel = attrs->Tuple(kernel_key);
    stride = attrs->Tuple(stride_key, {});
    pad = attrs->Tuple(pad_key, {});
    window->full = attrs->Enum(convention_key, {"valid", "full"}, 0) == 1;
  }
  // Two entries each (stride 1 and pad 0 where unset) into *window, or
  // false with the attribute's error recorded.
  bool Check(AttrParser* attrs, PoolWindow* window) {
    if (!CheckWindowAttrs(attrs, {{kernel_key, &kernel, 1, 1}, {stride_key, &stride, 1, 1},
                                  {pad_key, &pad, 0, 0}},
                          2, StrCat(kernel_key, " ", TupleText(kernel), " has 2"),
                          /*extra_allowed=*/true)) {
      return false;
    }
    if (kernel.size() != 2) {
      attrs->Fail(kernel_key, StrCat(TupleText(kernel), " must have 2 entries"));
      return false;
    }
    for (int i = 0; i < 2; ++i) {
      window->kernel[i] = kernel[i];
      window->stride[i] = stride[i];
      window->pad[i] = pad[i];
    }
    return true;
  }
};

Status CreateConvolution(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> kernel = attrs->Tuple("kernel");
  std::vector<int64_t> stride = attrs->Tuple("stride", {});
  std::vector<int64_t> dilate = attrs->Tuple("dilate", {});
  std::vector<int64_t> pad = attrs->Tuple("pad", {});
  int64_t num_filter = attrs->Int("num_filter");
  int64_t num_group = attrs->Int("num_group", 1);
  bool no_bias = attrs->Bool("no_bias", false);
  std::string layout = attrs->String("layout", "None");
  attrs->Ignore("workspace");
  attrs->IgnoreEnum("cudnn_tune", {"None", "off", "limited_workspace", "fastest"});
  attrs->IgnoreBool("cudnn_off");
  Fusion fusion;
  PoolWindowAttrs max_window{"pool_kernel", "pool_stride", "pool_pad", "pool_convention", {},
                             {}, {}};
  PoolWindowAttrs avg_window{"in_pool_kernel", "in_pool_stride", "in_pool_pad",
                             "in_pool_convention", {}, {}, {}};
  if (attrs->op_name() == "_FusedConvolution") {
    // Written by the graph optimizer (graph/fuse.cc), never by MXNet.
    fusion.batch_norm = attrs->Bool("with_bn", false);
    fusion.bn_eps = attrs->Float("bn_eps", 1e-3);
    fusion.bn_fix_gamma = attrs->Bool("bn_fix_gamma", true);
    fusion.residual = attrs->Bool("with_residual", false);
    fusion.lower = static_cast<float>(attrs->Float("clamp_min", -HUGE_VAL));
    fusion.upper = static_cast<float>(attrs->Float("clamp_max", HUGE_VAL));
    fusion.input_bn = attrs->Bool("with_input_bn", false);
    fusion.in_bn_eps = attrs->Float("in_bn_eps", 1e-3);
    fusion.in_bn_fix_gamma = attrs->Bool("in_bn_fix_gamma", true);
    fusion.in_lower = static_cast<float>(attrs->Float("in_clamp_min", -HUGE_VAL));
    fusion.in_upper = static_cast<float>(attrs->Float("in_clamp_max", HUGE_VAL));
    fusion.residual_in_place = attrs->Bool("residual_in_place", false);
    fusion.depthwise_input = attrs->Bool("with_depthwise_input", false);
    fusion.max_pool = attrs->Bool("with_max_pool", false);
    if (fusion.max_pool) max_window.Read(attrs, &fusion.max_window);
    fusion.input_avg_pool = attrs->Bool("with_input_avg_pool", false);
    if (fusion.input_avg_pool) {
      avg_window.Read(attrs, &fusion.avg_window);
      fusion.avg_count_include_pad = attrs->Bool("in_pool_count_include_pad", true);
    }
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());

  const size_t nk = kernel.size();
  if (nk < 1 || nk > 3) {
    attrs->Fail("kernel", StrCat(TupleText(kernel), ": only 1-D, 2-D and 3-D kernels exist"));
    return attrs->Finish();
  }
  // Unset tuples default to 1 (stride, dilate) and 0 (pad) per dim.
  if (!CheckWindowAttrs(attrs,
                        {{"kernel", &kernel, 1, 1}, {"stride", &stride, 1, 1},
                         {"dilate", &dilate, 1, 1}, {"pad", &pad, 0, 0}},
                        nk, StrCat("kernel ", TupleText(kernel), " has ", nk))) {
    return attrs->Finish();
  }
  if (num_filter < 1) {
    attrs->Fail("num_filter", StrCat(num_filter, " must be at least 1"));
    return attrs->Finish();
  }
  if (fusion.residual_in_place && !fusion.residual) {
    attrs->Fail("residual_in_place", "it needs with_residual");
    return attrs->Finish();
  }
  if (fusion.max_pool) {
    // Written by fuse.cc for 2-D stems only.
    if (nk != 2 || fusion.residual || fusion.input_bn) {
      attrs->Fail("with_max_pool", "a fused max pooling needs a 2-D convolution without a "
                                   "residual or input BatchNorm");
      return attrs->Finish();
    }
    if (!max_window.Check(attrs, &fusion.max_window)) return attrs->Finish();
  }
  if (fusion.input_avg_pool) {
    // Written by fuse.cc for 2-D 1x1 stride-1 one-group layers only.
    const bool pointwise = nk == 2 && kernel == std::vector<int64_t>{1, 1} &&
                           stride == std::vector<int64_t>{1, 1} &&
                           pad == std::vector<int64_t>{0, 0} && num_group == 1;
    if (!pointwise || fusion.max_pool) {
      attrs->Fail("with_input_avg_pool", "a fused average pooling needs a 2-D 1x1 convolution "
                                         "of stride 1, no padding and one group, without a "
                                         "max pooling");
      return attrs->Finish();
    }
    if (!avg_window.Check(attrs, &fusion.avg_window)) return attrs->Finish();
  }
  if (num_group < 1 || num_filter % num_group != 0) {
    attrs->Fail("num_group", StrCat(num_group, " must be positive and divide num_filter=",
                                    num_filter));
    return attrs->Finish();
  }
  static constexpr char kLayouts[][6] = {"NCW", "NCHW", "NCDHW"};
  if (layout != "None" && layout != kLayouts[nk - 1]) {
    bool channel_first = layout == "NCW" || layout == "NCHW" || layout == "NCDHW";
    attrs->Fail("layout", channel_first
                              ? StrCat("layout ", layout, " does not match the ", nk,
                                       "-D kernel (expected ", kLayouts[nk - 1], ")")
                              : StrCat("layout ", layout, " is not supported (mxlite runs ",
                                       kLayouts[nk - 1], " only)"));
    return attrs->Finish();
  }
  out->reset(new Convolution(kernel, stride, dilate, pad, num_filter, num_group, no_bias, fusion));
  return Status();
}

}  // namespace convolution_op
}  // namespace mxlite
