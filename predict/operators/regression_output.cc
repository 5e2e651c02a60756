/*
 * The regression heads LinearRegressionOutput, MAERegressionOutput (both
 * the identity at inference) and LogisticRegressionOutput (the sigmoid).
 * Their label input only matters for the gradient: it is never read, but
 * its shape is inferred as MXNet does (RegressionOutputShape): the data
 * shape, or (N,) for data of shape (N, 1).
 */
#include <cmath>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace regression_output_op {

class RegressionOutput : public Operator {
 public:
  explicit RegressionOutput(bool logistic) : logistic_(logistic) {}

  std::vector<std::string> InputNames() const override { return {"data", "label"}; }
  std::vector<int> UnreadInputs() const override { return {1}; }
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    const Shape& data = (*in)[0];
    const Shape& label = (*in)[1];
    if (!data.is_complete()) return Status();
    if (!label.rank_known()) {
      const bool column = data.ndim() == 2 && data[1] == 1;
      return AssignShape(in, 1, column ? Shape({data[0]}) : data, "input", InputNames());
    }
    if (label.is_complete()) {
      MXL_CHECK(label.ndim() > 0 && data.ndim() > 0 && label[0] == data[0] &&
                    label.Size() == data.Size(),
                "input 'label' has shape ", label.ToString(), " which does not match 'data' ",
                data.ToString());
    }
    return Status();
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0, 1}, true, in, out);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = in[0].Size();
    if (logistic_) {
      for (int64_t i = 0; i < size; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
    } else {
      CopyIfDistinct(x, y, size);
    }
    return Status();
  }

 private:
  bool logistic_;
};

Status CreateRegressionOutput(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  attrs->Float("grad_scale", 1.0);  // gradient only
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new RegressionOutput(attrs->op_name() == "LogisticRegressionOutput"));
  return Status();
}

}  // namespace regression_output_op
}  // namespace mxlite
