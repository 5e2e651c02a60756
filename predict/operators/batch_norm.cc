/*
 * BatchNorm at inference: every channel c (the dim `axis`, default 1,
 * negative counting from the end) is normalised with the moving statistics
 *
 *   y = (x - moving_mean[c]) * invstd[c] * gamma[c] + beta[c],
 *   invstd[c] = 1 / sqrt(moving_var[c] + eps),
 *
 * with gamma taken as 1 when fix_gamma is set, which is MXNet's default (the
 * stored gamma is then ignored). eps defaults to 1e-3. The expression and its
 * float rounding are those of MXNet's CPU kernel (batch_norm.cc): invstd is
 * computed from the float sum var + eps, and each element is evaluated as
 * ((x - mean) * invstd) * gamma + beta, so results match it bit for bit
 * where the compiler does not fuse the multiply-adds.
 *
 * Inputs: data, gamma, beta, moving_mean, moving_var; the last two are
 * auxiliary states (MXNet's FMutateInputs {3, 4}), all of shape (C,).
 * Outputs: output, mean, var; mean and var are visible only with
 * output_mean_var. At inference MXNet 1.9.1's CPU kernel returns the moving
 * mean in `mean` and the inverse standard deviation invstd (not a variance)
 * in `var`, and so does this one.
 *
 * _contrib_SyncBatchNorm is the same at inference (channel axis 1, no axis
 * attribute; ndev and the required key unused). MXNet evaluates it
 * as x * (gamma * invstd) + (beta - gamma * mean * invstd), a rounding away
 * from BatchNorm's order; its mean and var outputs stay unwritten at
 * inference, so output_mean_var is refused.
 */
#include <cmath>
#include <cstring>

#include <algorithm>
#include <cmath>
#include <limits>

#include "../kernels/gemm.h"
#include "../kernels/thread_pool.h"
#include "batch_norm_row.h"
#include "operator.h"

namespace mxlite {
namespace batch_norm_op {

class BatchNorm : public Operator {
 public:
  BatchNorm(double eps, bool fix_gamma, bool output_mean_var, int64_t axis, float lower,
            float upper)
      : eps_(eps),
        fix_gamma_(fix_gamma),
        output_mean_var_(output_mean_var),
        axis_(axis),
        lower_(lower),
        upper_(upper) {}

  std::vector<std::string> InputNames() const override {
    return {"data", "gamma", "beta", "moving_mean", "moving_var"};
  }
  std::vector<std::string> OutputNames() const override { return {"output", "mean", "var"}; }
  int NumVisibleOutputs() const override { return output_mean_var_ ? 3 : 1; }
  std::vector<int> MutatedInputs() const override { return {3, 4}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    return !image_in.empty() && (axis_ < 0 ? axis_ + image_in[0].ndim() : axis_) != 0;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    // The data and the output have one shape.
    Shape data = (*in)[0];
    MXL_CHECK(MergeShape(&data, (*out)[0]), "input 'data' has shape ", (*in)[0].ToString(),
              " but output 'output' has shape ", (*out)[0].ToString());
    if (!data.rank_known()) return Status();
    const int ndim = data.ndim();
    const int64_t axis = axis_ < 0 ? axis_ + ndim : axis_;
    MXL_CHECK(axis >= 0 && axis < ndim, "attribute axis=", axis_,
              " is out of range for input 'data' of shape ", data.ToString());
    // The channel count: from the data, else from any parameter that knows it.
    int64_t channels = data[static_cast<int>(axis)];
    for (int i = 1; i < 5 && channels < 0; ++i) {
      const Shape& param = (*in)[i];
      if (param.rank_known() && param.ndim() == 1 && param[0] >= 0) channels = param[0];
    }
    data[static_cast<int>(axis)] = channels;
    const Shape param_shape({channels});
    for (int i = 1; i < 5; ++i) {
      MXL_RETURN_IF_ERROR(AssignShape(in, i, param_shape, "input", names));
    }
    MXL_RETURN_IF_ERROR(AssignShape(in, 0, data, "input", names));
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, data, "output", OutputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, param_shape, "output", OutputNames()));
    return AssignShape(out, 2, param_shape, "output", OutputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int ndim = shape.ndim();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + ndim : axis_);
    const int64_t channels = shape[axis];
    const int64_t outer = shape.ProdRange(0, axis);
    const int64_t inner = shape.ProdRange(axis + 1, ndim);
    const float* gamma = in[1].fdata();
    const float* beta = in[2].fdata();
    const float* mean = in[3].fdata();
    const float* var = in[4].fdata();
    invstd_.resize(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) invstd_[c] = BatchNormInvStd(var[c], eps_);

    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const bool clamps = ClampIsSet(lower_, upper_);
    ParallelFor(ctx.pool, outer * channels, [&](int64_t plane) {
      const int64_t c = plane % channels;
      BatchNormRow(x + plane * inner, y + plane * inner, inner, mean[c], invstd_[c], !fix_gamma_,
                   gamma[c], beta[c], clamps, lower_, upper_);
    });
    return CopyStatistics(in, out, channels);
  }

 private:
  // The other outputs, as MXNet fills them: the mean used and invstd.
  Status CopyStatistics(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                        int64_t channels) const {
    const size_t param_bytes = static_cast<size_t>(channels) * sizeof(float);
    if (out.size() > 1 && !out[1].is_none() && out[1].data() != in[3].data()) {
      std::memcpy(out[1].data(), in[3].data(), param_bytes);
    }
    if (out.size() > 2 && !out[2].is_none()) {
      std::memcpy(out[2].data(), invstd_.data(), param_bytes);
    }
    return Status();
  }

  double eps_;
  bool fix_gamma_;
  bool output_mean_var_;
  int64_t axis_;
  float lower_, upper_;        // clamp of a fused activation (none: infinities)
  std::vector<float> invstd_;  // per-channel scratch of Forward
};

Status CreateBatchNorm(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  // MXNet declares the default as the float literal 1e-3f.
  double eps = attrs->Float("eps", static_cast<double>(1e-3f));
  bool fix_gamma = attrs->Bool("fix_gamma", true);
  bool output_mean_var = attrs->Bool("output_mean_var", false);
  int64_t axis = 1;
  if (attrs->op_name() == "_contrib_SyncBatchNorm") {
    // Gluon's SyncBatchNorm (the *_syncbn_* detectors): at inference the same
    // normalisation with the moving statistics, on axis 1 (MXNet gives it no
    // axis, cudnn_off or calibration attributes). ndev and key pair the
    // devices in training; MXNet requires key.
    attrs->IgnoreFloat("momentum");
    attrs->IgnoreBool("use_global_stats");
    attrs->Int("ndev", 1);
    attrs->String("key");
    if (output_mean_var) {
      // MXNet 1.9.1 leaves the mean and var outputs unwritten at inference.
      attrs->Fail("output_mean_var", "is not supported: MXNet does not write the mean and var "
                                     "outputs of _contrib_SyncBatchNorm at inference");
    }
  } else {
    axis = attrs->Int("axis", 1);
    attrs->IgnoreFloat("momentum");
    attrs->IgnoreBool("use_global_stats");  // inference always uses the moving statistics
    attrs->IgnoreBool("cudnn_off");
    attrs->Ignore("min_calib_range");  // only read by the quantized operator
    attrs->Ignore("max_calib_range");
  }
  double lower = -HUGE_VAL, upper = HUGE_VAL;
  if (attrs->op_name() == "_FusedBatchNorm") {
    // Written by the graph optimizer (graph/fuse.cc), never by MXNet.
    lower = attrs->Float("clamp_min", -HUGE_VAL);
    upper = attrs->Float("clamp_max", HUGE_VAL);
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BatchNorm(eps, fix_gamma, output_mean_var, axis, static_cast<float>(lower),
                           static_cast<float>(upper)));
  return Status();
}

}  // namespace batch_norm_op
}  // namespace mxlite
