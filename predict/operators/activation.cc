/*
 * Activation: elementwise relu, sigmoid, tanh, softrelu, softsign.
 * softrelu is log(1 + exp(x)), written so large inputs do not overflow.
 */
#include <cmath>

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

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = in[0].Size();
    switch (type_) {
      case kRelu:
        for (int64_t i = 0; i < size; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
        break;
      case kSigmoid:
        for (int64_t i = 0; i < size; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
        break;
      case kTanh:
        for (int64_t i = 0; i < size; ++i) y[i] = std::tanh(x[i]);
        break;
      case kSoftrelu:
        for (int64_t i = 0; i < size; ++i) y[i] = x[i] > 20.f ? x[i] : std::log1p(std::exp(x[i]));
        break;
      case kSoftsign:
        for (int64_t i = 0; i < size; ++i) y[i] = x[i] / (1.f + std::fabs(x[i]));
        break;
    }
    return Status();
  }

 private:
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
