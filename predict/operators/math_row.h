/*
 * The transcendental element-wise functions on one run of values, shared by
 * Activation (sigmoid, tanh), the unary operators (exp, expm1, sigmoid,
 * tanh, erf), LeakyReLU (elu, selu, gelu), softmax's exponentials and the
 * recurrent cells' gates. The reference kernel is MXNet's float
 * expressions over the C library (mshadow_op.h):
 *
 *   exp      exp(x)                 expm1  expm1(x)
 *   sigmoid  1 / (1 + exp(-x))      tanh   tanh(x)
 *   erf      erf(x)                 gelu   0.5 * x * (1 + erf(x / sqrt 2))
 *   elu      x > 0 ? x : alpha * expm1(x)
 *
 * The vector kernels (math_row_avx512.cc, math_row_avx2.cc) evaluate the
 * same expressions with their own exp, expm1, tanh and erf:
 *   exp(x) = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 in two
 *     parts), e^r = 1 + r + r^2 q(r); x is first clamped to [-104, 89],
 *     past which the result is 0 or +inf, and 2^n is applied in two steps
 *     (or by VSCALEFPS) so that subnormal results come out right;
 *   expm1(x) = 2^n ((e^r - 1) + (1 - 2^-n)), e^r - 1 = r + r^2 q(r) with
 *     no cancellation near 0; x clamped to [-30, 89] (below -30 it is -1);
 *   tanh(x) = x + x^3 t(x^2) for |x| < 0.625, else
 *     sign(x) (1 - 2 / (exp(2|x|) + 1));
 *   erf(z) = z p(z^2) for |z| < 0.875, else
 *     sign(z) (1 - exp(-a^2) s(1 / (1 + a))), a = min(|z|, 4), with a^2's
 *     rounding error carried as a factor (1 - lo).
 * q, t, p and s are near-minimax fits of relative error below 2e-8
 * (scripts/vector_math_coefficients.py, which also checks the constants
 * below). Each function is within a few units in the last place of the C
 * library's (tests/cpp/math_row_test.cc measures every path on a dense
 * sweep of floats; gelu inherits 1 + erf's cancellation for x < 0, as
 * MXNet's does); NaN stays NaN, +-inf give the limits, and exp's
 * subnormal results are kept.
 */
#ifndef MXLITE_OPERATORS_MATH_ROW_H_
#define MXLITE_OPERATORS_MATH_ROW_H_

#include <cstdint>
#include <type_traits>

namespace mxlite {

enum class RowMath { kExp, kExpm1, kSigmoid, kTanh, kErf, kGelu, kElu };

// `alpha` is elu's (unused by the others). src may equal dst.
void MathRow(RowMath function, const float* src, float* dst, int64_t count, float alpha);

// Softmax's three passes over a row (softmax.cc), with the same exp:
// the largest of src[0, count) as MXNet's loop finds it (`if (m < x) m = x`
// from m = src[0]: a NaN first stays, a later one is passed over; count >=
// 1);
float RowMax(const float* src, int64_t count);
// dst[i] = exp((src[i] - shift) / temperature), returning the sum of dst
// (vector partial sums: not index order; a temperature of 1 divides by
// nothing, as MXNet);
float ExpShiftedRow(const float* src, float* dst, int64_t count, float shift, float temperature);
// and dst[i] = src[i] / divisor, a true division per element.
void DivideRow(const float* src, float* dst, int64_t count, float divisor);

// The last step of the vector passes, on a vector stored to `lanes`
// (`count` a power of two): the largest lane as RowMax's loop finds it, and
// the sum of the lanes halving their number each step (`lanes` is
// overwritten).
inline float LargestLane(const float* lanes, int count) {
  float largest = lanes[0];
  for (int lane = 1; lane < count; ++lane) {
    if (largest < lanes[lane]) largest = lanes[lane];
  }
  return largest;
}
inline float SumOfLanes(float* lanes, int count) {
  for (int width = count / 2; width >= 1; width /= 2) {
    for (int lane = 0; lane < width; ++lane) lanes[lane] += lanes[lane + width];
  }
  return lanes[0];
}

// Calls rows(std::integral_constant<RowMath, function>()): how each
// instruction set's file turns the function into its template argument.
template <typename Rows>
void DispatchRowMath(RowMath function, Rows rows) {
  switch (function) {
    case RowMath::kExp:
      return rows(std::integral_constant<RowMath, RowMath::kExp>());
    case RowMath::kExpm1:
      return rows(std::integral_constant<RowMath, RowMath::kExpm1>());
    case RowMath::kSigmoid:
      return rows(std::integral_constant<RowMath, RowMath::kSigmoid>());
    case RowMath::kTanh:
      return rows(std::integral_constant<RowMath, RowMath::kTanh>());
    case RowMath::kErf:
      return rows(std::integral_constant<RowMath, RowMath::kErf>());
    case RowMath::kGelu:
      return rows(std::integral_constant<RowMath, RowMath::kGelu>());
    case RowMath::kElu:
      return rows(std::integral_constant<RowMath, RowMath::kElu>());
  }
}

// The implementations per instruction set, for the family's table in
// math_row.cc only.
struct MathRowKernels {
  void (*row)(RowMath function, const float* src, float* dst, int64_t count, float alpha);
  float (*max)(const float* src, int64_t count);
  float (*exp_shifted)(const float* src, float* dst, int64_t count, float shift,
                       float temperature);
  void (*divide)(const float* src, float* dst, int64_t count, float divisor);
};
extern const MathRowKernels kMathRowAvx512;
extern const MathRowKernels kMathRowAvx2;

// Inline: the builds without x86 vector kernels (Arm, wasm) read none of
// them, and clang warns about an unused constant with internal linkage.
namespace math_row_constants {

inline constexpr float kLog2E = 1.44269504088896341f;
// ln 2 = kLn2High + kLn2Low: the high part is ln 2 rounded to float.
inline constexpr float kLn2High = 0.693147182464599609375f;
inline constexpr float kLn2Low = -1.904654299957768e-09f;
inline constexpr float kSqrtHalf = 0.70710678118654752440f;
inline constexpr float kExpLowest = -104.f;  // exp rounds to 0 below about -103.97
inline constexpr float kExpHighest = 89.f;   // and to +inf above about 88.72
inline constexpr float kExpm1Lowest = -30.f;  // expm1 rounds to -1 below about -17.3
inline constexpr float kTanhLimit = 0.625f;
inline constexpr float kErfLimit = 0.875f;
inline constexpr float kErfOne = 4.f;  // erf rounds to +-1 past about 3.92

// The fits, lowest power first (scripts/vector_math_coefficients.py).
inline constexpr float kExpQ[] = {0.49999994f, 0.16666521f, 0.04166839f, 0.00836871f,
                                  0.0013814613f};
inline constexpr float kTanhT[] = {-0.3333328f, 0.13331442f, -0.053739715f, 0.020639088f,
                                   -0.0057049873f};
inline constexpr float kErfP[] = {1.1283791f,    -0.3761255f,  0.11282455f,
                                  -0.026791468f, 0.005032189f, -0.0006203291f};
inline constexpr float kErfcS[] = {-0.00015419512f, 0.5678081f,  0.52911824f, 0.45814404f,
                                   -0.7262088f,     -0.4412477f, 1.1256405f,  -0.52799135f};

}  // namespace math_row_constants

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_MATH_ROW_H_
