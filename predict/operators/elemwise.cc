/*
 * Elementwise operators with several inputs:
 *   - same-shape binary (elemwise_add/sub/mul/div and the underscore family
 *     _maximum, _power, _equal, ...): inputs and output of one shape, known
 *     from any of them;
 *   - broadcasting binary (broadcast_add, ..., broadcast_logical_xor): numpy
 *     broadcasting from the last dim (MXNet's BinaryBroadcastShapeCompact);
 *   - add_n (ElementWiseSum): the sum of num_args same-shape inputs, added
 *     left to right as MXNet does;
 *   - where(condition, x, y): x where condition is non-zero, else y; the
 *     condition has x's shape or is 1-D and selects whole rows along x's
 *     first axis.
 * The binary functions are the shared list in binary_math.h. Both binary
 * forms run one loop: the inputs are strided views walked row by row
 * (tensor_util.h), with stride 0 along broadcast dims; the same-shape case
 * collapses to a single contiguous row, split over the thread pool in runs
 * of kElementwiseChunk, as add_n is.
 */
#include <cstring>

#include "../kernels/thread_pool.h"
#include "binary_math.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace elemwise_op {

using binary_math::Function;

struct BinaryName {
  const char* name;
  Function function;
  bool broadcast;
};

const BinaryName kBinaryNames[] = {
    {"elemwise_add", binary_math::kAdd, false},
    {"elemwise_sub", binary_math::kSub, false},
    {"elemwise_mul", binary_math::kMul, false},
    {"elemwise_div", binary_math::kDiv, false},
    {"_mod", binary_math::kModulo, false},
    {"_power", binary_math::kPower, false},
    {"_maximum", binary_math::kMaximum, false},
    {"_minimum", binary_math::kMinimum, false},
    {"_hypot", binary_math::kHypot, false},
    {"_equal", binary_math::kEqual, false},
    {"_not_equal", binary_math::kNotEqual, false},
    {"_greater", binary_math::kGreater, false},
    {"_greater_equal", binary_math::kGreaterEqual, false},
    {"_lesser", binary_math::kLesser, false},
    {"_lesser_equal", binary_math::kLesserEqual, false},
    {"_logical_and", binary_math::kLogicalAnd, false},
    {"_logical_or", binary_math::kLogicalOr, false},
    {"_logical_xor", binary_math::kLogicalXor, false},
    {"broadcast_add", binary_math::kAdd, true},
    {"broadcast_sub", binary_math::kSub, true},
    {"broadcast_mul", binary_math::kMul, true},
    {"broadcast_div", binary_math::kDiv, true},
    {"broadcast_mod", binary_math::kModulo, true},
    {"broadcast_power", binary_math::kPower, true},
    {"broadcast_maximum", binary_math::kMaximum, true},
    {"broadcast_minimum", binary_math::kMinimum, true},
    {"broadcast_hypot", binary_math::kHypot, true},
    {"broadcast_equal", binary_math::kEqual, true},
    {"broadcast_not_equal", binary_math::kNotEqual, true},
    {"broadcast_greater", binary_math::kGreater, true},
    {"broadcast_greater_equal", binary_math::kGreaterEqual, true},
    {"broadcast_lesser", binary_math::kLesser, true},
    {"broadcast_lesser_equal", binary_math::kLesserEqual, true},
    {"broadcast_logical_and", binary_math::kLogicalAnd, true},
    {"broadcast_logical_or", binary_math::kLogicalOr, true},
    {"broadcast_logical_xor", binary_math::kLogicalXor, true},
};

// Every input and the output share one shape, known from any of them.
Status AllSameShape(const Operator& op, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<int> all(in->size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  Shape shape = (*out)[0];
  MXL_RETURN_IF_ERROR(UnifyShapes(op, all, in, &shape));
  return AssignShape(out, 0, shape, "output", op.OutputNames());
}

// y = F(a, b) over `shape`, a and b read through strides.
template <typename F>
void BinaryKernel(const Shape& shape, const float* a, const std::vector<int64_t>& a_strides,
                  const float* b, const std::vector<int64_t>& b_strides, float* y) {
  RowWalker walker(shape, {a_strides, b_strides}, {0, 0});
  const int64_t length = walker.row_length();
  const int64_t sa = walker.row_stride(0), sb = walker.row_stride(1);
  for (int64_t row = 0; row < walker.rows(); ++row, walker.Next(), y += length) {
    const float* x0 = a + walker.offset(0);
    const float* x1 = b + walker.offset(1);
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < length; ++i) y[i] = F::Apply(x0[i], x1[i]);
    } else if (sa == 1 && sb == 0) {
      const float value = x1[0];
      for (int64_t i = 0; i < length; ++i) y[i] = F::Apply(x0[i], value);
    } else if (sa == 0 && sb == 1) {
      const float value = x0[0];
      for (int64_t i = 0; i < length; ++i) y[i] = F::Apply(value, x1[i]);
    } else {
      for (int64_t i = 0; i < length; ++i) y[i] = F::Apply(x0[i * sa], x1[i * sb]);
    }
  }
}

using BinaryKernelFn = void (*)(const Shape&, const float*, const std::vector<int64_t>&,
                                const float*, const std::vector<int64_t>&, float*);

class Binary : public Operator {
 public:
  Binary(Function function, bool broadcast) : broadcast_(broadcast) {
    binary_math::Dispatch(function, [this](auto functor) {
      kernel_ = &BinaryKernel<decltype(functor)>;
    });
  }

  std::vector<std::string> InputNames() const override { return {"lhs", "rhs"}; }
  std::vector<InplacePair> InplaceOptions() const override {
    if (broadcast_) return {};
    return {{0, 0, false}, {1, 0, false}};
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    if (!broadcast_) return AllSameShape(*this, in, out);
    Shape shape;
    MXL_RETURN_IF_ERROR(BroadcastShapes((*in)[0], (*in)[1], &shape));
    return AssignShape(out, 0, shape, "output", OutputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = out[0].shape();
    const float* a = in[0].fdata();
    const float* b = in[1].fdata();
    float* y = out[0].fdata();
    if (in[0].shape() == shape && in[1].shape() == shape) {
      const std::vector<int64_t> dense = {1};
      ParallelRanges(ctx.pool, out[0].Size(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
        kernel_(Shape({end - begin}), a + begin, dense, b + begin, dense, y + begin);
      });
      return Status();
    }
    kernel_(shape, a, BroadcastStrides(in[0].shape(), shape), b,
            BroadcastStrides(in[1].shape(), shape), y);
    return Status();
  }

 private:
  bool broadcast_;
  BinaryKernelFn kernel_ = nullptr;
};

Status CreateBinary(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  for (const BinaryName& entry : kBinaryNames) {
    if (attrs->op_name() == entry.name) {
      out->reset(new Binary(entry.function, entry.broadcast));
      return Status();
    }
  }
  return Status::Error(StrCat("internal error: no binary function for '", attrs->op_name(), "'"));
}

// ---------------------------------------------------------------------------
// add_n

class AddN : public Operator {
 public:
  explicit AddN(int num_args) : num_args_(num_args) {}

  std::vector<std::string> InputNames() const override { return NumberedNames("arg", num_args_); }
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    return AllSameShape(*this, in, out);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    float* y = out[0].fdata();
    const int64_t size = out[0].Size();
    if (num_args_ == 1) {
      CopyIfDistinct(in[0].fdata(), y, size);
      return Status();
    }
    // Output may share input 0's buffer: inputs 0 and 1 first, then the rest.
    ParallelRanges(ctx.pool, size, kElementwiseChunk, [&](int64_t begin, int64_t end) {
      const float* a = in[0].fdata();
      const float* b = in[1].fdata();
      for (int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
      for (int k = 2; k < num_args_; ++k) {
        const float* x = in[k].fdata();
        for (int64_t i = begin; i < end; ++i) y[i] += x[i];
      }
    });
    return Status();
  }

 private:
  int num_args_;
};

Status CreateAddN(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t num_args = attrs->Int("num_args");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_args < 1 || num_args > 100000) {
    attrs->Fail("num_args", StrCat(num_args, " is not a valid number of inputs"));
    return attrs->Finish();
  }
  out->reset(new AddN(static_cast<int>(num_args)));
  return Status();
}

// ---------------------------------------------------------------------------
// where

class Where : public Operator {
 public:
  std::vector<std::string> InputNames() const override { return {"condition", "x", "y"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    Shape shape = (*out)[0];  // x, y and the output share it
    MXL_RETURN_IF_ERROR(UnifyShapes(*this, {1, 2}, in, &shape));
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, shape, "output", OutputNames()));
    const Shape& condition = (*in)[0];
    if (!condition.rank_known() || !shape.rank_known()) return Status();
    if (condition.ndim() == 1 && shape.ndim() > 1) {
      return AssignShape(in, 0, Shape({shape[0]}), "input", names);
    }
    MXL_CHECK(condition.ndim() == shape.ndim(), "input 'condition' has shape ",
              condition.ToString(), " but needs x's shape ", shape.ToString(),
              " or a 1-D shape of x's first dim");
    return AssignShape(in, 0, shape, "input", names);
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    // The condition may have any type; x, y and the output share one.
    return UnifyDTypes(*this, {1, 2}, false, in, out);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = out[0].shape();
    std::vector<int64_t> condition_strides = RowMajorStrides(shape);
    if (in[0].shape().ndim() != shape.ndim()) {  // one value per row of x
      for (size_t d = 0; d < condition_strides.size(); ++d) condition_strides[d] = d == 0;
    }
    const std::vector<int64_t> dense = RowMajorStrides(shape);
    RowWalker walker(shape, {condition_strides, dense}, {0, 0});
    const float* condition = in[0].fdata();
    const float* x = in[1].fdata();
    const float* y = in[2].fdata();
    float* result = out[0].fdata();
    const int64_t length = walker.row_length();
    const int64_t step = walker.row_stride(0);
    for (int64_t row = 0; row < walker.rows(); ++row, walker.Next()) {
      const float* c = condition + walker.offset(0);
      const int64_t base = walker.offset(1);
      for (int64_t i = 0; i < length; ++i) {
        result[base + i] = c[i * step] != 0.f ? x[base + i] : y[base + i];
      }
    }
    return Status();
  }
};

Status CreateWhere(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Where());
  return Status();
}

}  // namespace elemwise_op
}  // namespace mxlite
