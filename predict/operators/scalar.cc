/*
 * Operators with a scalar operand: y = f(x, s), or f(s, x) for the
 * reversed forms (_rminus_scalar, _rdiv_scalar, _rpower_scalar,
 * _rmod_scalar), and smooth_l1 (s is sigma). The functions are the shared
 * list in binary_math.h. MXNet casts the scalar to the data type before
 * using it, so it is rounded to float here, and to the data's type when
 * that is not float32 (SetDTypes). The attribute is_int only
 * changes the output type of integer data in MXNet's numpy mode and has no
 * effect on the values. The tensor is split over the thread pool in runs
 * of kElementwiseChunk.
 */
#include "../kernels/thread_pool.h"
#include "binary_math.h"
#include "operator.h"

namespace mxlite {
namespace scalar_op {

using binary_math::Function;

struct ScalarName {
  const char* name;
  Function function;
  bool reversed;  // f(scalar, x)
};

const ScalarName kScalarNames[] = {
    {"_plus_scalar", binary_math::kAdd, false},
    {"_minus_scalar", binary_math::kSub, false},
    {"_rminus_scalar", binary_math::kSub, true},
    {"_mul_scalar", binary_math::kMul, false},
    {"_div_scalar", binary_math::kDiv, false},
    {"_rdiv_scalar", binary_math::kDiv, true},
    {"_mod_scalar", binary_math::kModulo, false},
    {"_rmod_scalar", binary_math::kModulo, true},
    {"_power_scalar", binary_math::kPower, false},
    {"_rpower_scalar", binary_math::kPower, true},
    {"_maximum_scalar", binary_math::kMaximum, false},
    {"_minimum_scalar", binary_math::kMinimum, false},
    {"_hypot_scalar", binary_math::kHypot, false},
    {"_equal_scalar", binary_math::kEqual, false},
    {"_not_equal_scalar", binary_math::kNotEqual, false},
    {"_greater_scalar", binary_math::kGreater, false},
    {"_greater_equal_scalar", binary_math::kGreaterEqual, false},
    {"_lesser_scalar", binary_math::kLesser, false},
    {"_lesser_equal_scalar", binary_math::kLesserEqual, false},
    {"_logical_and_scalar", binary_math::kLogicalAnd, false},
    {"_logical_or_scalar", binary_math::kLogicalOr, false},
    {"_logical_xor_scalar", binary_math::kLogicalXor, false},
    {"smooth_l1", binary_math::kSmoothL1Loss, false},
};

template <typename F, bool kReversed>
void ScalarKernel(const float* x, float scalar, float* y, int64_t size) {
  for (int64_t i = 0; i < size; ++i) y[i] = kReversed ? F::Apply(scalar, x[i]) : F::Apply(x[i], scalar);
}
using ScalarKernelFn = void (*)(const float*, float, float*, int64_t);

class ScalarOp : public Operator {
 public:
  ScalarOp(Function function, bool reversed, float scalar) : scalar_(scalar) {
    binary_math::Dispatch(function, [this, reversed](auto functor) {
      using F = decltype(functor);
      kernel_ = reversed ? &ScalarKernel<F, true> : &ScalarKernel<F, false>;
    });
  }

  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  // The scalar in the data's type (float16 data: a float16 scalar).
  void SetDTypes(const std::vector<int>& in, const std::vector<int>&) override {
    scalar_ = RoundToDType(in[0], scalar_);
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    return SameShapeInference(*this, in, out);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    ParallelRanges(ctx.pool, out[0].Size(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
      kernel_(x + begin, scalar_, y + begin, end - begin);
    });
    return Status();
  }

 private:
  float scalar_;
  ScalarKernelFn kernel_ = nullptr;
};

Status CreateScalar(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const double scalar = attrs->Float("scalar", 1.0);
  if (attrs->op_name() != "smooth_l1") attrs->Bool("is_int", true);  // smooth_l1 has no is_int
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (const ScalarName& entry : kScalarNames) {
    if (attrs->op_name() == entry.name) {
      out->reset(new ScalarOp(entry.function, entry.reversed, static_cast<float>(scalar)));
      return Status();
    }
  }
  return Status::Error(StrCat("internal error: no scalar function for '", attrs->op_name(), "'"));
}

}  // namespace scalar_op
}  // namespace mxlite
