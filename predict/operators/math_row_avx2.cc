/*
 * MathRow with AVX2 (see math_row.h for the algorithms): one line of the
 * vector math kernels' table in math_row.cc. As math_row_avx512.cc, eight
 * lanes at a time; 2^n is applied in two steps, 2^(n - n/2) 2^(n/2), each
 * a normal float, where AVX-512 has VSCALEFPS.
 */
#include <cstdint>

#include "../kernels/x86_simd.h"
#include "math_row.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace math_row_avx2 {

using namespace math_row_constants;  // NOLINT: the header's constants, this file only

MXLITE_TARGET_AVX2_INLINE __m256 Splat(float value) { return _mm256_set1_ps(value); }

// c[0] + c[1] x + ... + c[n-1] x^(n-1), by Horner's rule.
template <int kCount>
MXLITE_TARGET_AVX2_INLINE __m256 Polynomial(__m256 x, const float (&c)[kCount]) {
  __m256 sum = Splat(c[kCount - 1]);
  MXLITE_UNROLL for (int i = kCount - 2; i >= 0; --i) {
    sum = _mm256_fmadd_ps(sum, x, Splat(c[i]));
  }
  return sum;
}

// max(lower, min(upper, x)), keeping NaN: where either operand is NaN the
// instructions return the second, here x.
MXLITE_TARGET_AVX2_INLINE __m256 ClampKeepingNan(__m256 x, float lower, float upper) {
  return _mm256_max_ps(Splat(lower), _mm256_min_ps(Splat(upper), x));
}

// n = round(x / ln 2) and r = x - n ln 2.
MXLITE_TARGET_AVX2_INLINE __m256 Reduce(__m256 x, __m256* n) {
  *n = _mm256_round_ps(_mm256_mul_ps(x, Splat(kLog2E)),
                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fnmadd_ps(*n, Splat(kLn2High), x);
  return _mm256_fnmadd_ps(*n, Splat(kLn2Low), r);
}

// 2^k for integers k in [-126, 127].
MXLITE_TARGET_AVX2_INLINE __m256 PowerOfTwo(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// value * 2^n for integral n in [-252, 254]: two exact steps of at most
// 2^127, so that the one rounding happens last (to a subnormal, or inf).
MXLITE_TARGET_AVX2_INLINE __m256 Scale(__m256 value, __m256 n) {
  const __m256i k = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(k, 1);
  return _mm256_mul_ps(_mm256_mul_ps(value, PowerOfTwo(half)),
                       PowerOfTwo(_mm256_sub_epi32(k, half)));
}

// e^r - 1 = r + r^2 q(r).
MXLITE_TARGET_AVX2_INLINE __m256 ExpMinusOneReduced(__m256 r) {
  return _mm256_fmadd_ps(_mm256_mul_ps(r, r), Polynomial(r, kExpQ), r);
}

MXLITE_TARGET_AVX2_INLINE __m256 Exp(__m256 x) {
  __m256 n;
  const __m256 r = Reduce(ClampKeepingNan(x, kExpLowest, kExpHighest), &n);
  return Scale(_mm256_add_ps(ExpMinusOneReduced(r), Splat(1.f)), n);
}

MXLITE_TARGET_AVX2_INLINE __m256 Expm1(__m256 x) {
  __m256 n;
  const __m256 r = Reduce(ClampKeepingNan(x, kExpm1Lowest, kExpHighest), &n);
  // 1 - 2^-n, n kept below 30 (see math_row_avx512.cc).
  const __m256i minus_n = _mm256_sub_epi32(
      _mm256_setzero_si256(), _mm256_cvtps_epi32(_mm256_min_ps(n, Splat(30.f))));
  const __m256 one_less = _mm256_sub_ps(Splat(1.f), PowerOfTwo(minus_n));
  const __m256 result = Scale(_mm256_add_ps(ExpMinusOneReduced(r), one_less), n);
  // r + r^2 q(r) gives +0 for -0; expm1(-0) is -0.
  return _mm256_blendv_ps(result, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
}

MXLITE_TARGET_AVX2_INLINE __m256 Sigmoid(__m256 x) {
  const __m256 one = Splat(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, Exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

MXLITE_TARGET_AVX2_INLINE __m256 Magnitude(__m256 x) {
  return _mm256_andnot_ps(Splat(-0.f), x);
}

// magnitude with the sign of `sign`'s lanes.
MXLITE_TARGET_AVX2_INLINE __m256 WithSignOf(__m256 magnitude, __m256 sign) {
  return _mm256_or_ps(magnitude, _mm256_and_ps(Splat(-0.f), sign));
}

MXLITE_TARGET_AVX2_INLINE __m256 Tanh(__m256 x) {
  const __m256 a = Magnitude(x);
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x, x2), Polynomial(x2, kTanhT), x);
  const __m256 one = Splat(1.f);
  const __m256 large = _mm256_sub_ps(
      one, _mm256_div_ps(Splat(2.f), _mm256_add_ps(Exp(_mm256_add_ps(a, a)), one)));
  return _mm256_blendv_ps(WithSignOf(large, x), small,
                          _mm256_cmp_ps(a, Splat(kTanhLimit), _CMP_LT_OQ));
}

MXLITE_TARGET_AVX2_INLINE __m256 Erf(__m256 z) {
  const __m256 z2 = _mm256_mul_ps(z, z);
  const __m256 small = _mm256_mul_ps(z, Polynomial(z2, kErfP));
  const __m256 a = _mm256_min_ps(Splat(kErfOne), Magnitude(z));
  const __m256 one = Splat(1.f);
  const __m256 s = Polynomial(_mm256_div_ps(one, _mm256_add_ps(one, a)), kErfcS);
  const __m256 a2 = _mm256_mul_ps(a, a);
  const __m256 a2_low = _mm256_fmsub_ps(a, a, a2);  // a^2 - a2, exactly
  const __m256 tail = _mm256_mul_ps(_mm256_mul_ps(Exp(_mm256_sub_ps(_mm256_setzero_ps(), a2)), s),
                                    _mm256_sub_ps(one, a2_low));
  const __m256 large = WithSignOf(_mm256_sub_ps(one, tail), z);
  return _mm256_blendv_ps(large, small,
                          _mm256_cmp_ps(Magnitude(z), Splat(kErfLimit), _CMP_LT_OQ));
}

template <RowMath kFunction>
MXLITE_TARGET_AVX2_INLINE __m256 Evaluate(__m256 x, __m256 alpha) {
  switch (kFunction) {
    case RowMath::kExp:
      return Exp(x);
    case RowMath::kExpm1:
      return Expm1(x);
    case RowMath::kSigmoid:
      return Sigmoid(x);
    case RowMath::kTanh:
      return Tanh(x);
    case RowMath::kErf:
      return Erf(x);
    case RowMath::kGelu:
      return _mm256_mul_ps(_mm256_mul_ps(Splat(0.5f), x),
                           _mm256_add_ps(Splat(1.f), Erf(_mm256_mul_ps(x, Splat(kSqrtHalf)))));
    case RowMath::kElu:
      return _mm256_blendv_ps(_mm256_mul_ps(alpha, Expm1(x)), x,
                              _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
  }
  return x;
}

// Whole vectors, then the last 1-7 elements through masked loads and
// stores.
template <RowMath kFunction>
MXLITE_TARGET_AVX2 void Row(const float* src, float* dst, int64_t count, float alpha) {
  const __m256 a = Splat(alpha);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(dst + i, Evaluate<kFunction>(_mm256_loadu_ps(src + i), a));
  }
  if (i < count) {
    const __m256i mask = LanesBelowAvx2(count - i);
    _mm256_maskstore_ps(dst + i, mask, Evaluate<kFunction>(_mm256_maskload_ps(src + i, mask), a));
  }
}

void Rows(RowMath function, const float* src, float* dst, int64_t count, float alpha) {
  DispatchRowMath(function, [&](auto kind) { Row<decltype(kind)::value>(src, dst, count, alpha); });
}

// As math_row_avx512.cc's Max: VMAXPS(v, m) passes over a NaN in v and
// keeps one in m.
MXLITE_TARGET_AVX2 float Max(const float* src, int64_t count) {
  __m256 m = Splat(src[0]);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(src + i), m);
  if (i < count) {
    const __m256i mask = LanesBelowAvx2(count - i);
    m = _mm256_blendv_ps(m, _mm256_max_ps(_mm256_maskload_ps(src + i, mask), m),
                         _mm256_castsi256_ps(mask));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  return LargestLane(lanes, 8);
}

template <bool kScaled>
MXLITE_TARGET_AVX2 float ExpShifted(const float* src, float* dst, int64_t count, float shift,
                                    float temperature) {
  const __m256 s = Splat(shift), t = Splat(temperature);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(src + i), s);
    if (kScaled) x = _mm256_div_ps(x, t);
    const __m256 e = Exp(x);
    _mm256_storeu_ps(dst + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < count) {
    const __m256i mask = LanesBelowAvx2(count - i);
    __m256 x = _mm256_sub_ps(_mm256_maskload_ps(src + i, mask), s);
    if (kScaled) x = _mm256_div_ps(x, t);
    const __m256 e = _mm256_and_ps(Exp(x), _mm256_castsi256_ps(mask));
    _mm256_maskstore_ps(dst + i, mask, e);
    sum = _mm256_add_ps(sum, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  return SumOfLanes(lanes, 8);
}

float ExpShiftedAny(const float* src, float* dst, int64_t count, float shift, float temperature) {
  return temperature == 1.f ? ExpShifted<false>(src, dst, count, shift, temperature)
                            : ExpShifted<true>(src, dst, count, shift, temperature);
}

MXLITE_TARGET_AVX2 void Divide(const float* src, float* dst, int64_t count, float divisor) {
  const __m256 d = Splat(divisor);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_div_ps(_mm256_loadu_ps(src + i), d));
  }
  if (i < count) {
    const __m256i mask = LanesBelowAvx2(count - i);
    _mm256_maskstore_ps(dst + i, mask, _mm256_div_ps(_mm256_maskload_ps(src + i, mask), d));
  }
}

}  // namespace math_row_avx2

const MathRowKernels kMathRowAvx2 = {math_row_avx2::Rows, math_row_avx2::Max,
                                     math_row_avx2::ExpShiftedAny, math_row_avx2::Divide};

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
