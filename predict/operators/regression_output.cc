/*
 * The regression heads LinearRegressionOutput, MAERegressionOutput (both
 * the identity at inference) and LogisticRegressionOutput (the sigmoid),
 * and SVMOutput (the identity at inference; its label is (N,) for (N, C)
 * data).
 * Their label input only matters for the gradient: it is never read, but
 * its shape is inferred as MXNet does (RegressionOutputShape): the data
 * shape, or (N,) for data of shape (N, 1).
 */
#include <cmath>

#include "math_row.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace regression_output_op {

class RegressionOutput : public Operator {
 public:
  RegressionOutput(bool logistic, bool svm) : logistic_(logistic), svm_(svm) {}

  std::vector<std::string> InputNames() const override { return {"data", "label"}; }
  std::vector<int> UnreadInputs() const override { return {1}; }
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    const Shape& data = (*in)[0];
    const Shape& label = (*in)[1];
    if (!data.is_complete()) return Status();
    if (svm_) {  // one class index per row
      return AssignShape(in, 1, Shape({data.ndim() > 0 ? data[0] : 1}), "input", InputNames());
    }
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
      MathRow(RowMath::kSigmoid, x, y, size, 0.f);
    } else {
      CopyIfDistinct(x, y, size);
    }
    return Status();
  }

 private:
  bool logistic_, svm_;
};

Status CreateRegressionOutput(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const bool svm = attrs->op_name() == "SVMOutput";
  if (svm) {  // gradient only
    attrs->Float("margin", 1.0);
    attrs->Float("regularization_coefficient", 1.0);
    attrs->Bool("use_linear", false);
  } else {
    attrs->Float("grad_scale", 1.0);  // gradient only
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new RegressionOutput(attrs->op_name() == "LogisticRegressionOutput", svm));
  return Status();
}

}  // namespace regression_output_op
}  // namespace mxlite
