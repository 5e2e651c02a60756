/*
 * Unary math: one operator per function of one float, applied elementwise
 * with MXNet's definitions (mshadow_op.h): round rounds halves away from
 * zero, rint takes the lower neighbour on a tie (-2.5 -> -3, 1.5 -> 1: not
 * IEEE rounding to even), fix truncates towards zero, relu keeps NaN, sign of
 * 0 is 0, zeros_like/ones_like ignore the value. The output has the input's
 * shape and may take over its buffer. zeros_like and ones_like accept a
 * dtype attribute (GluonCV's CenterNet writes one) and, as MXNet 1.9.1,
 * ignore it: the output keeps the input's type.
 *
 * MXL_UNARY_FUNCTIONS lists (name, expression in x); every entry becomes a
 * kernel instantiated from one loop, looked up by the operator's name
 * (relu's is ActivationRow's, the same expression without branches; expm1,
 * tanh, erf and sigmoid run MathRow's vector kernels, within a few ulps of
 * the C library's; exp keeps the C library's, whose values MXNet's
 * tutorials print digit for digit, as tests/test_nd_tutorial.py checks).
 * The tensor is split over the thread pool in runs of kElementwiseChunk.
 */
#include <cmath>

#include "../kernels/thread_pool.h"
#include "activation_row.h"
#include "math_row.h"
#include "operator.h"

namespace mxlite {
namespace unary_op {

constexpr float kPi = 3.14159265358979323846f;

#define MXL_UNARY_FUNCTIONS(X)                                     \
  X(abs, std::fabs(x))                                             \
  X(sign, x < 0.f ? -1.f : (x > 0.f ? 1.f : 0.f))                  \
  X(negative, -x)                                                  \
  X(reciprocal, 1.f / x)                                           \
  X(square, x * x)                                                 \
  X(sqrt, std::sqrt(x))                                            \
  X(rsqrt, 1.f / std::sqrt(x))                                     \
  X(cbrt, std::cbrt(x))                                            \
  X(rcbrt, 1.f / std::cbrt(x))                                     \
  X(exp, std::exp(x))                                              \
  X(expm1, std::expm1(x))                                          \
  X(log, std::log(x))                                              \
  X(log10, std::log10(x))                                          \
  X(log2, std::log2(x))                                            \
  X(log1p, std::log1p(x))                                          \
  X(sin, std::sin(x))                                              \
  X(cos, std::cos(x))                                              \
  X(tan, std::tan(x))                                              \
  X(arcsin, std::asin(x))                                          \
  X(arccos, std::acos(x))                                          \
  X(arctan, std::atan(x))                                          \
  X(sinh, std::sinh(x))                                            \
  X(cosh, std::cosh(x))                                            \
  X(tanh, std::tanh(x))                                            \
  X(arcsinh, std::asinh(x))                                        \
  X(arccosh, std::acosh(x))                                        \
  X(arctanh, std::atanh(x))                                        \
  X(degrees, x * (180.f / kPi))                                    \
  X(radians, x * (kPi / 180.f))                                    \
  X(floor, std::floor(x))                                          \
  X(ceil, std::ceil(x))                                            \
  X(round, std::round(x))                                          \
  X(rint, x - std::floor(x) <= std::ceil(x) - x ? std::floor(x) : std::ceil(x)) \
  X(trunc, std::trunc(x))                                          \
  X(fix, x > 0.f ? std::floor(x) : std::ceil(x))                   \
  X(erf, std::erf(x))                                              \
  X(gamma, std::tgamma(x))                                         \
  X(gammaln, std::lgamma(x))                                       \
  X(relu, std::isnan(x) ? x : (x > 0.f ? x : 0.f))                 \
  X(sigmoid, 1.f / (1.f + std::exp(-x)))                           \
  X(softsign, x / (1.f + std::fabs(x)))                            \
  X(logical_not, x == 0.f ? 1.f : 0.f)                             \
  X(zeros_like, 0.f)                                               \
  X(ones_like, 1.f)

template <typename F>
void UnaryKernel(const float* x, float* y, int64_t size) {
  for (int64_t i = 0; i < size; ++i) y[i] = F::Apply(x[i]);
}
using UnaryKernelFn = void (*)(const float*, float*, int64_t);

#define MXL_UNARY_FUNCTOR(name, expression)         \
  struct name##_function {                          \
    static float Apply(float x) {                   \
      (void)x;                                      \
      return expression;                            \
    }                                               \
  };
MXL_UNARY_FUNCTIONS(MXL_UNARY_FUNCTOR)
#undef MXL_UNARY_FUNCTOR

// relu's expression as ActivationRow computes it, without a branch per
// element, and the transcendental ones through the vector math kernels
// (MathRow, within a few ulps of the C library's).
template <>
void UnaryKernel<relu_function>(const float* x, float* y, int64_t size) {
  ActivationRow(RowActivation::kRelu, x, y, size, 0.f);
}
#define MXL_UNARY_MATH_ROW(name, function)                                   \
  template <>                                                                \
  void UnaryKernel<name##_function>(const float* x, float* y, int64_t size) { \
    MathRow(function, x, y, size, 0.f);                                      \
  }
MXL_UNARY_MATH_ROW(expm1, RowMath::kExpm1)
MXL_UNARY_MATH_ROW(tanh, RowMath::kTanh)
MXL_UNARY_MATH_ROW(erf, RowMath::kErf)
MXL_UNARY_MATH_ROW(sigmoid, RowMath::kSigmoid)
#undef MXL_UNARY_MATH_ROW

struct UnaryEntry {
  const char* name;
  UnaryKernelFn kernel;
};
const UnaryEntry kUnaryFunctions[] = {
#define MXL_UNARY_ENTRY(name, expression) {#name, &UnaryKernel<name##_function>},
    MXL_UNARY_FUNCTIONS(MXL_UNARY_ENTRY)
#undef MXL_UNARY_ENTRY
};

class Unary : public Operator {
 public:
  explicit Unary(UnaryKernelFn kernel) : kernel_(kernel) {}

  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

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
      kernel_(x + begin, y + begin, end - begin);
    });
    return Status();
  }

 private:
  UnaryKernelFn kernel_;
};

Status CreateUnary(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  if (attrs->op_name() == "zeros_like" || attrs->op_name() == "ones_like") {
    attrs->Ignore("dtype");  // MXNet's operator has no parameters and ignores it
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (const UnaryEntry& entry : kUnaryFunctions) {
    if (attrs->op_name() == entry.name) {
      out->reset(new Unary(entry.kernel));
      return Status();
    }
  }
  return Status::Error(StrCat("internal error: no unary function for '", attrs->op_name(), "'"));
}

}  // namespace unary_op
}  // namespace mxlite
