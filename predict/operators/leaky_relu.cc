/*
 * Activations with parameters: LeakyReLU (leaky, prelu, rrelu, elu, selu,
 * gelu) and hard_sigmoid.
 *
 * LeakyReLU at inference (MXNet's leaky_relu-inl.h):
 *   leaky  x > 0 ? x : slope * x
 *   prelu  x > 0 ? x : gamma[c] * x, gamma one value per channel (axis 1)
 *          or a single value for all
 *   rrelu  the leaky form with slope (lower_bound + upper_bound) / 2 (the
 *          random slope's mean); its second output, the mask, is that slope
 *          (MXNet leaves it unwritten at inference)
 *   elu    x > 0 ? x : slope * expm1(x)
 *   selu   lambda * (x > 0 ? x : alpha * expm1(x)), with SELU's constants
 *   gelu   0.5 * x * (1 + erf(x / sqrt(2)))
 * hard_sigmoid: max(0, min(1, alpha * x + beta)).
 * leaky, rrelu and prelu run ActivationRow's leaky form (prelu one channel
 * plane at a time, with that channel's slope), elu, selu and gelu the vector
 * math kernels (MathRow); the tensor is split over
 * the thread pool (runs of kElementwiseChunk, or prelu's planes).
 */
#include <algorithm>

#include "../kernels/thread_pool.h"
#include "activation_row.h"
#include "math_row.h"
#include "operator.h"

namespace mxlite {
namespace leaky_relu_op {

enum ActType { kElu, kGelu, kLeaky, kPrelu, kRrelu, kSelu };

constexpr float kSeluLambda = 1.0507009873554804934193349852946f;
constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;

// elu, selu and gelu through the vector math kernels (MathRow).
void EluKernel(const float* x, float* y, int64_t size, float slope) {
  MathRow(RowMath::kElu, x, y, size, slope);
}
void SeluKernel(const float* x, float* y, int64_t size, float) {
  MathRow(RowMath::kElu, x, y, size, kSeluAlpha);
  for (int64_t i = 0; i < size; ++i) y[i] *= kSeluLambda;
}
void GeluKernel(const float* x, float* y, int64_t size, float) {
  MathRow(RowMath::kGelu, x, y, size, 0.f);
}
// The leaky form through the vector row kernels.
void LeakyKernel(const float* x, float* y, int64_t size, float slope) {
  ActivationRow(RowActivation::kLeaky, x, y, size, slope);
}
using SlopeKernelFn = void (*)(const float*, float*, int64_t, float);

class LeakyReLU : public Operator {
 public:
  LeakyReLU(ActType type, float slope) : type_(type), slope_(slope) {
    kernel_ = type == kElu    ? &EluKernel
              : type == kSelu ? &SeluKernel
              : type == kGelu ? &GeluKernel
                              : &LeakyKernel;  // leaky, rrelu (prelu: below)
  }

  std::vector<std::string> InputNames() const override {
    if (type_ == kPrelu) return {"data", "gamma"};
    return {"data"};
  }
  std::vector<std::string> OutputNames() const override {
    if (type_ == kRrelu) return {"output", "mask"};
    return {"output"};
  }
  int NumVisibleOutputs() const override { return type_ == kRrelu ? 2 : 1; }
  std::vector<InplacePair> InplaceOptions() const override {
    if (type_ == kPrelu || type_ == kRrelu) return {};
    return {{0, 0, false}};
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    if (type_ == kRrelu) MXL_RETURN_IF_ERROR(AssignShape(out, 1, (*in)[0], "output", OutputNames()));
    const Shape& data = (*in)[0];
    if (type_ != kPrelu || !data.rank_known()) return Status();
    MXL_CHECK(data.ndim() >= 2, "input 'data' has shape ", data.ToString(),
              " but prelu needs a channel axis (at least 2 dims)");
    const Shape& gamma = (*in)[1];
    // A stored gamma of one value applies to every channel.
    if (gamma.is_complete() && gamma.ndim() == 1 && gamma[0] == 1) return Status();
    return AssignShape(in, 1, Shape({data[1]}), "input", InputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const int64_t count = in[0].Size();
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    if (type_ != kPrelu || in[1].Size() == 1) {
      // A prelu whose stored gamma is one value: the leaky form with it.
      const float slope = type_ == kPrelu ? in[1].fdata()[0] : slope_;
      const SlopeKernelFn kernel = type_ == kPrelu ? &LeakyKernel : kernel_;
      ParallelRanges(ctx.pool, count, kElementwiseChunk, [&](int64_t begin, int64_t end) {
        kernel(x + begin, y + begin, end - begin, slope);
      });
      if (type_ == kRrelu) std::fill(out[1].fdata(), out[1].fdata() + count, slope_);
      return Status();
    }
    // prelu: each channel plane with its channel's slope.
    const Shape& shape = in[0].shape();
    const float* gamma = in[1].fdata();
    const int64_t channels = shape[1], inner = shape.ProdRange(2, shape.ndim());
    ParallelFor(ctx.pool, count / std::max<int64_t>(1, inner), [&](int64_t plane) {
      LeakyKernel(x + plane * inner, y + plane * inner, inner, gamma[plane % channels]);
    });
    return Status();
  }

 private:
  ActType type_;
  float slope_;
  SlopeKernelFn kernel_;
};

Status CreateLeakyReLU(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int type = attrs->Enum("act_type", {"elu", "gelu", "leaky", "prelu", "rrelu", "selu"}, 2);
  const double slope = attrs->Float("slope", 0.25);
  const double lower = attrs->Float("lower_bound", 0.125);
  const double upper = attrs->Float("upper_bound", 0.334);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  // MXNet keeps the bounds as float and averages them in float.
  const float mean_slope = (static_cast<float>(lower) + static_cast<float>(upper)) / 2.f;
  out->reset(new LeakyReLU(static_cast<ActType>(type),
                           type == kRrelu ? mean_slope : static_cast<float>(slope)));
  return Status();
}

// ---------------------------------------------------------------------------
// hard_sigmoid

class HardSigmoid : public Operator {
 public:
  HardSigmoid(float alpha, float beta) : alpha_(alpha), beta_(beta) {}

  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    return SameShapeInference(*this, in, out);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = in[0].Size();
    for (int64_t i = 0; i < size; ++i) y[i] = std::min(1.f, std::max(0.f, alpha_ * x[i] + beta_));
    return Status();
  }

 private:
  float alpha_, beta_;
};

Status CreateHardSigmoid(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const double alpha = attrs->Float("alpha", 0.2);
  const double beta = attrs->Float("beta", 0.5);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new HardSigmoid(static_cast<float>(alpha), static_cast<float>(beta)));
  return Status();
}

}  // namespace leaky_relu_op
}  // namespace mxlite
