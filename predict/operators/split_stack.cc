/*
 * SliceChannel (split): one output per equal part of the input along an
 * axis, the axis dropped with squeeze_axis; stack: the inputs laid along a
 * new axis. The counterparts of layout.cc's gathers for several outputs
 * and several inputs.
 */
#include <algorithm>
#include <cstring>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace split_stack_op {

// ---------------------------------------------------------------------------
// SliceChannel (split): num_outputs equal parts along axis.

class SliceChannel : public Operator {
 public:
  SliceChannel(int num_outputs, int64_t axis, bool squeeze_axis)
      : num_outputs_(num_outputs), axis_(axis), squeeze_axis_(squeeze_axis) {}

  std::vector<std::string> OutputNames() const override {
    return NumberedNames("output", num_outputs_);
  }
  int NumVisibleOutputs() const override { return num_outputs_; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    int axis = 0;
    MXL_RETURN_IF_ERROR(CheckAxis(axis_, data, "axis", &axis));
    std::vector<int64_t> dims = data.dims();
    if (dims[axis] >= 0) {
      MXL_CHECK(dims[axis] % num_outputs_ == 0, "input 'data' has shape ", data.ToString(),
                ": dim ", axis, " is not divisible by num_outputs=", num_outputs_);
      if (squeeze_axis_) {
        MXL_CHECK(dims[axis] == num_outputs_, "input 'data' has shape ", data.ToString(),
                  ": squeeze_axis needs dim ", axis, " to equal num_outputs=", num_outputs_);
      }
      dims[axis] /= num_outputs_;
    }
    if (squeeze_axis_) dims.erase(dims.begin() + axis);
    for (int i = 0; i < num_outputs_; ++i) {
      MXL_RETURN_IF_ERROR(AssignShape(out, i, Shape(dims), "output", OutputNames()));
    }
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& data = in[0].shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + data.ndim() : axis_);
    const int64_t outer = data.ProdRange(0, axis);
    const int64_t block = data.ProdRange(axis, data.ndim()) / num_outputs_;  // one part, one row
    const float* x = in[0].fdata();
    for (int i = 0; i < num_outputs_; ++i) {
      float* y = out[i].fdata();
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(y + o * block, x + (o * num_outputs_ + i) * block,
                    sizeof(float) * static_cast<size_t>(block));
      }
    }
    return Status();
  }

 private:
  int num_outputs_;
  int64_t axis_;
  bool squeeze_axis_;
};

Status CreateSliceChannel(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t num_outputs = attrs->Int("num_outputs");
  int64_t axis = attrs->Int("axis", 1);
  bool squeeze_axis = attrs->Bool("squeeze_axis", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_outputs < 1 || num_outputs > 100000) {
    attrs->Fail("num_outputs", StrCat(num_outputs, " is not a valid number of outputs"));
    return attrs->Finish();
  }
  out->reset(new SliceChannel(static_cast<int>(num_outputs), axis, squeeze_axis));
  return Status();
}

// ---------------------------------------------------------------------------
// stack: num_args inputs of one shape, joined along a new axis.

class Stack : public Operator {
 public:
  Stack(int num_args, int64_t axis) : num_args_(num_args), axis_(axis) {}

  std::vector<std::string> InputNames() const override { return NumberedNames("arg", num_args_); }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    std::vector<int> all(num_args_);
    for (int i = 0; i < num_args_; ++i) all[i] = i;
    Shape shape;
    MXL_RETURN_IF_ERROR(UnifyShapes(*this, all, in, &shape));
    if (!shape.rank_known()) return Status();
    int axis = 0;
    MXL_CHECK(ResolveAxis(axis_, shape.ndim() + 1, &axis), "attribute axis=", axis_,
              " is out of range for inputs of shape ", shape.ToString());
    std::vector<int64_t> dims = shape.dims();
    dims.insert(dims.begin() + axis, num_args_);
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& oshape = out[0].shape();
    int axis = 0;
    ResolveAxis(axis_, oshape.ndim(), &axis);
    const int64_t outer = oshape.ProdRange(0, axis);
    const int64_t inner = oshape.ProdRange(axis + 1, oshape.ndim());
    float* y = out[0].fdata();
    for (int k = 0; k < num_args_; ++k) {
      const float* x = in[k].fdata();
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(y + (o * num_args_ + k) * inner, x + o * inner,
                    sizeof(float) * static_cast<size_t>(inner));
      }
    }
    return Status();
  }

 private:
  int num_args_;
  int64_t axis_;
};

Status CreateStack(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t axis = attrs->Int("axis", 0);
  int64_t num_args = attrs->Int("num_args");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_args < 1 || num_args > 100000) {
    attrs->Fail("num_args", StrCat(num_args, " is not a valid number of inputs"));
    return attrs->Finish();
  }
  out->reset(new Stack(static_cast<int>(num_args), axis));
  return Status();
}

}  // namespace split_stack_op
}  // namespace mxlite
