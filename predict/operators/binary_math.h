/*
 * The elementwise binary functions, in one list shared by every operator
 * family that applies them: same-shape (elemwise_add, _maximum, ...),
 * broadcasting (broadcast_add, ...) and with a scalar (_plus_scalar,
 * _rminus_scalar, ...). Each entry is a function of two floats with MXNet's
 * semantics (mshadow_op.h): comparisons and logical functions give 1 or 0,
 * mod follows Python (the result takes the divisor's sign; x mod 0 is 0).
 *
 * MXL_BINARY_FUNCTIONS expands X(Name, expression in a and b) per function;
 * each becomes a functor type binary_math::Name and an enumerator kName, and
 * Dispatch calls a visitor with the functor for an enumerator, so a family
 * instantiates its loop once per function without writing it again.
 */
#ifndef MXLITE_OPERATORS_BINARY_MATH_H_
#define MXLITE_OPERATORS_BINARY_MATH_H_

#include <cmath>

namespace mxlite {
namespace binary_math {

// Python-style modulo as mshadow_op::mod computes it.
inline float Mod(float a, float b) {
  if (b == 0.f) return 0.f;
  const float r = std::fmod(a, b);
  return r != 0.f && ((r < 0.f) != (b < 0.f)) ? r + b : r;
}

// smooth_l1 with sigma = b: quadratic near zero, linear beyond 1/sigma^2.
inline float SmoothL1(float a, float b) {
  const float bsq = b * b;
  if (a > 1.f / bsq) return a - 0.5f / bsq;
  if (a < -1.f / bsq) return -a - 0.5f / bsq;
  return 0.5f * a * a * bsq;
}

#define MXL_BINARY_FUNCTIONS(X)                          \
  X(Add, a + b)                                          \
  X(Sub, a - b)                                          \
  X(Mul, a * b)                                          \
  X(Div, a / b)                                          \
  X(Modulo, Mod(a, b))                                   \
  X(Power, std::pow(a, b))                               \
  X(Maximum, a > b ? a : b)                              \
  X(Minimum, a < b ? a : b)                              \
  X(Hypot, std::hypot(a, b))                             \
  X(Equal, a == b ? 1.f : 0.f)                           \
  X(NotEqual, a != b ? 1.f : 0.f)                        \
  X(Greater, a > b ? 1.f : 0.f)                          \
  X(GreaterEqual, a >= b ? 1.f : 0.f)                    \
  X(Lesser, a < b ? 1.f : 0.f)                           \
  X(LesserEqual, a <= b ? 1.f : 0.f)                     \
  X(LogicalAnd, a != 0.f && b != 0.f ? 1.f : 0.f)        \
  X(LogicalOr, a != 0.f || b != 0.f ? 1.f : 0.f)         \
  X(LogicalXor, (a != 0.f) != (b != 0.f) ? 1.f : 0.f)    \
  X(SmoothL1Loss, SmoothL1(a, b))

#define MXL_BINARY_FUNCTOR(Name, expression) \
  struct Name {                              \
    static float Apply(float a, float b) {   \
      return expression;                     \
    }                                        \
  };
MXL_BINARY_FUNCTIONS(MXL_BINARY_FUNCTOR)
#undef MXL_BINARY_FUNCTOR

enum Function {
#define MXL_BINARY_ENUMERATOR(Name, expression) k##Name,
  MXL_BINARY_FUNCTIONS(MXL_BINARY_ENUMERATOR)
#undef MXL_BINARY_ENUMERATOR
};

// Calls visitor(Functor()) for `function`.
template <typename Visitor>
void Dispatch(Function function, Visitor&& visitor) {
  switch (function) {
#define MXL_BINARY_CASE(Name, expression) \
  case k##Name:                           \
    visitor(Name());                      \
    break;
    MXL_BINARY_FUNCTIONS(MXL_BINARY_CASE)
#undef MXL_BINARY_CASE
  }
}

}  // namespace binary_math
}  // namespace mxlite

#endif  // MXLITE_OPERATORS_BINARY_MATH_H_
