/*
 * Activation: elementwise relu, sigmoid, tanh, softrelu, softsign.
 * relu keeps NaN, as MXNet's mshadow_op::relu (ActivationRow); sigmoid
 * and tanh run the vector math kernels (MathRow); softrelu is
 * log(1 + exp(x)), written so large inputs do not overflow. The tensor is
 * split over the thread pool in runs of kElementwiseChunk.
 */
#include <cmath>

#include "../kernels/thread_pool.h"
#include "activation_row.h"
#include "math_row.h"
#include "operator.h"

namespace mxlite {
namespace activation_op {

enum ActType { kRelu, kSigmoid, kTanh, kSoftrelu, kSoftsign };

class Activation : public Operator {
 public:
  explicit Activation(ActType type) : type_(type) {}

  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, (*in)[0], "output", OutputNames()));
    return AssignShape(in, 0, (*out)[0], "input", InputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    ParallelRanges(ctx.pool, in[0].Size(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
      Apply(in[0].fdata() + begin, out[0].fdata() + begin, end - begin);
    });
    return Status();
  }

 private:
  void Apply(const float* x, float* y, int64_t size) const {
    switch (type_) {
      case kRelu:
        ActivationRow(RowActivation::kRelu, x, y, size, 0.f);
        break;
      case kSigmoid:
        MathRow(RowMath::kSigmoid, x, y, size, 0.f);
        break;
      case kTanh:
        MathRow(RowMath::kTanh, x, y, size, 0.f);
        break;
      case kSoftrelu:
        for (int64_t i = 0; i < size; ++i) y[i] = x[i] > 20.f ? x[i] : std::log1p(std::exp(x[i]));
        break;
      case kSoftsign:
        for (int64_t i = 0; i < size; ++i) y[i] = x[i] / (1.f + std::fabs(x[i]));
        break;
    }
  }

  ActType type_;
};

Status CreateActivation(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int type = attrs->Enum("act_type", {"relu", "sigmoid", "tanh", "softrelu", "softsign"}, -1);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Activation(static_cast<ActType>(type)));
  return Status();
}

}  // namespace activation_op
}  // namespace mxlite
