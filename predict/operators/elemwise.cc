/*
 * Elementwise binary operators on inputs of identical shape.
 */
#include "operator.h"

namespace mxlite {
namespace elemwise_op {

class ElemwiseAdd : public Operator {
 public:
  std::vector<std::string> InputNames() const override { return {"lhs", "rhs"}; }
  std::vector<InplacePair> InplaceOptions() const override {
    return {{0, 0, false}, {1, 0, false}};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    // All three shapes are equal: gather what any of them knows, then assign.
    Shape shape = (*out)[0];
    for (const Shape& input : *in) {
      MXL_CHECK(MergeShape(&shape, input), "inputs have different shapes ",
                (*in)[0].ToString(), " and ", (*in)[1].ToString());
    }
    MXL_RETURN_IF_ERROR(AssignShape(in, 0, shape, "input", InputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, shape, "input", InputNames()));
    return AssignShape(out, 0, shape, "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* a = in[0].fdata();
    const float* b = in[1].fdata();
    float* y = out[0].fdata();
    const int64_t size = out[0].Size();
    for (int64_t i = 0; i < size; ++i) y[i] = a[i] + b[i];
    return Status();
  }
};

Status CreateElemwiseAdd(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ElemwiseAdd());
  return Status();
}

}  // namespace elemwise_op
}  // namespace mxlite
