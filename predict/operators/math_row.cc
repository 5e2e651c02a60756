/*
 * The vector math kernels (see math_row.h): the scalar reference, MXNet's
 * expressions over the C library, and the table that picks the family's
 * implementation once, from the instruction set (SelectedIsa). The vector
 * kernels live one file per instruction set (math_row_avx512.cc,
 * math_row_avx2.cc).
 */
#include "math_row.h"

#include <cmath>
#include <cstdint>

#include "../kernels/cpu_features.h"
#include "../kernels/x86_simd.h"

namespace mxlite {
namespace math_row_cc {

template <typename Function>
void Apply(const float* src, float* dst, int64_t count, Function function) {
  for (int64_t i = 0; i < count; ++i) dst[i] = function(src[i]);
}

// The portable path and the vector kernels' reference: MXNet's loops.
void RowScalar(RowMath function, const float* src, float* dst, int64_t count, float alpha) {
  using math_row_constants::kSqrtHalf;
  switch (function) {
    case RowMath::kExp:
      return Apply(src, dst, count, [](float x) { return std::exp(x); });
    case RowMath::kExpm1:
      return Apply(src, dst, count, [](float x) { return std::expm1(x); });
    case RowMath::kSigmoid:
      return Apply(src, dst, count, [](float x) { return 1.f / (1.f + std::exp(-x)); });
    case RowMath::kTanh:
      return Apply(src, dst, count, [](float x) { return std::tanh(x); });
    case RowMath::kErf:
      return Apply(src, dst, count, [](float x) { return std::erf(x); });
    case RowMath::kGelu:
      return Apply(src, dst, count,
                   [](float x) { return 0.5f * x * (1.f + std::erf(x * kSqrtHalf)); });
    case RowMath::kElu:
      return Apply(src, dst, count,
                   [alpha](float x) { return x > 0.f ? x : alpha * std::expm1(x); });
  }
}

float MaxScalar(const float* src, int64_t count) {
  float m = src[0];
  for (int64_t i = 1; i < count; ++i) {
    if (m < src[i]) m = src[i];
  }
  return m;
}

float ExpShiftedScalar(const float* src, float* dst, int64_t count, float shift,
                       float temperature) {
  float sum = 0.f;
  for (int64_t i = 0; i < count; ++i) {
    dst[i] = temperature == 1.f ? std::exp(src[i] - shift)
                                : std::exp((src[i] - shift) / temperature);
    sum += dst[i];
  }
  return sum;
}

void DivideScalar(const float* src, float* dst, int64_t count, float divisor) {
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i] / divisor;
}

const MathRowKernels kMathRowScalar = {RowScalar, MaxScalar, ExpShiftedScalar, DivideScalar};

// One implementation of the family.
struct MathRowImplementation {
  Isa isa;
  const MathRowKernels* kernels;
};

// In order of preference: the first whose instruction set is selected.
const MathRowImplementation kMathRowImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, &kMathRowAvx512},
    {Isa::kAvx2, &kMathRowAvx2},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, &kMathRowScalar},
};

const MathRowKernels& Chosen() {
  static const MathRowKernels& chosen = *ChooseImplementation(kMathRowImplementations).kernels;
  return chosen;
}

}  // namespace math_row_cc

void MathRow(RowMath function, const float* src, float* dst, int64_t count, float alpha) {
  math_row_cc::Chosen().row(function, src, dst, count, alpha);
}

float RowMax(const float* src, int64_t count) { return math_row_cc::Chosen().max(src, count); }

float ExpShiftedRow(const float* src, float* dst, int64_t count, float shift, float temperature) {
  return math_row_cc::Chosen().exp_shifted(src, dst, count, shift, temperature);
}

void DivideRow(const float* src, float* dst, int64_t count, float divisor) {
  math_row_cc::Chosen().divide(src, dst, count, divisor);
}

}  // namespace mxlite
