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
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "batch_norm_row.h"
#include "conv_algorithms.h"
#include "conv_tuning.h"
#include "operator.h"

namespace mxlite {
namespace convolution_op {

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
  // The data is a depthwise convolution's output (ConvGeometry).
  bool depthwise_input = false;
};

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
      const int64_t extent = data[2 + i];
      if (extent < 0) {
        odims.push_back(-1);
        continue;
      }
      const int64_t padded = extent + 2 * pad_[i];
      const int64_t dk = dilate_[i] * (kernel_[i] - 1) + 1;
      MXL_CHECK(padded >= dk, "input 'data' has shape ", data.ToString(), ": spatial dim ", i,
                " is ", extent, " (", padded, " with padding) but the dilated kernel spans ", dk);
      odims.push_back((padded - dk) / stride_[i] + 1);
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
      for (int i = 0; i < nk; ++i) {
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
      g.out[d] = oshape[2 + i];
      g.kernel[d] = kernel_[i];
      g.stride[d] = stride_[i];
      g.pad[d] = pad_[i];
      g.dilate[d] = dilate_[i];
    }
    g.normalises_input = fusion_.input_bn;
    g.input_from_depthwise = fusion_.depthwise_input;
    MXL_CHECK(g.channels % g.groups == 0, "input 'data' has ", g.channels,
              " channels, not divisible by num_group=", g.groups);

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
      request.fusion_form = FusionForm(fusion_);
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
    const std::string form =
        StrCat("conv ", algorithm_->name, "; ", any_batch.ToString(), "; ", FusionForm(fusion_));
    kernel_impl_.reset();
    MXL_RETURN_IF_ERROR(SharedPrepared<ConvKernel>(
        weight_inputs, form,
        [&](std::shared_ptr<const ConvKernel>* made) { return MakeKernel(in, made); },
        &kernel_impl_));
    *workspace_bytes = kernel_impl_->WorkspaceBytes();
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
    return kernel_impl_->Forward(call);
  }

  const char* KernelName() const override { return algorithm_ ? algorithm_->name : ""; }
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

  std::vector<int64_t> kernel_, stride_, dilate_, pad_;
  int64_t num_filter_, num_group_;
  bool no_bias_;
  Fusion fusion_;
  // Set by Prepare.
  ConvGeometry geometry_;
  const ConvAlgorithm* algorithm_ = nullptr;
  std::shared_ptr<const ConvKernel> kernel_impl_;  // shared by the model's executors
  bool weights_constant_ = true;
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
    fusion.depthwise_input = attrs->Bool("with_depthwise_input", false);
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
  if (num_group < 1 || num_filter % num_group != 0) {
    attrs->Fail("num_group", StrCat(num_group, " must be positive and divide num_filter=",
                                    num_filter));
    return attrs->Finish();
  }
  static const char* const kLayouts[] = {"NCW", "NCHW", "NCDHW"};
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
