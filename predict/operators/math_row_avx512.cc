/*
 * MathRow with AVX-512 (see math_row.h for the algorithms): one line of the
 * vector math kernels' table in math_row.cc.
 */
#include <cstdint>

#include "../kernels/x86_simd.h"
#include "math_row.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace math_row_avx512 {

using namespace math_row_constants;  // NOLINT: the header's constants, this file only

// The masked forms of the instructions are used with all lanes: GCC 12
// warns about an undefined operand inside the plain ones.
constexpr __mmask16 kAllLanes = 0xffff;

MXLITE_TARGET_AVX512_INLINE __m512 Splat(float value) { return _mm512_set1_ps(value); }

// c[0] + c[1] x + ... + c[n-1] x^(n-1), by Horner's rule.
template <int kCount>
MXLITE_TARGET_AVX512_INLINE __m512 Polynomial(__m512 x, const float (&c)[kCount]) {
  __m512 sum = Splat(c[kCount - 1]);
  MXLITE_UNROLL for (int i = kCount - 2; i >= 0; --i) {
    sum = _mm512_fmadd_ps(sum, x, Splat(c[i]));
  }
  return sum;
}

// max(lower, min(upper, x)), keeping NaN: where either operand is NaN the
// instructions return the second, here x.
MXLITE_TARGET_AVX512_INLINE __m512 ClampKeepingNan(__m512 x, float lower, float upper) {
  return _mm512_maskz_max_ps(kAllLanes, Splat(lower),
                             _mm512_maskz_min_ps(kAllLanes, Splat(upper), x));
}

// n = round(x / ln 2) and r = x - n ln 2.
MXLITE_TARGET_AVX512_INLINE __m512 Reduce(__m512 x, __m512* n) {
  *n = _mm512_maskz_roundscale_ps(kAllLanes, _mm512_mul_ps(x, Splat(kLog2E)),
                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(*n, Splat(kLn2High), x);
  return _mm512_fnmadd_ps(*n, Splat(kLn2Low), r);
}

// e^r - 1 = r + r^2 q(r).
MXLITE_TARGET_AVX512_INLINE __m512 ExpMinusOneReduced(__m512 r) {
  return _mm512_fmadd_ps(_mm512_mul_ps(r, r), Polynomial(r, kExpQ), r);
}

MXLITE_TARGET_AVX512_INLINE __m512 Exp(__m512 x) {
  __m512 n;
  const __m512 r = Reduce(ClampKeepingNan(x, kExpLowest, kExpHighest), &n);
  // VSCALEFPS multiplies by 2^n with one rounding, to 0, subnormal or inf.
  return _mm512_maskz_scalef_ps(kAllLanes, _mm512_add_ps(ExpMinusOneReduced(r), Splat(1.f)), n);
}

MXLITE_TARGET_AVX512_INLINE __m512 Expm1(__m512 x) {
  __m512 n;
  const __m512 r = Reduce(ClampKeepingNan(x, kExpm1Lowest, kExpHighest), &n);
  // 1 - 2^-n is exact for |n| < 24 and rounds to 1 above (where it no
  // longer matters); n is kept below 30 so that 2^-n stays a normal.
  const __m512 minus_n =
      _mm512_sub_ps(_mm512_setzero_ps(), _mm512_maskz_min_ps(kAllLanes, n, Splat(30.f)));
  const __m512 one_less =
      _mm512_sub_ps(Splat(1.f), _mm512_maskz_scalef_ps(kAllLanes, Splat(1.f), minus_n));
  const __m512 result =
      _mm512_maskz_scalef_ps(kAllLanes, _mm512_add_ps(ExpMinusOneReduced(r), one_less), n);
  // r + r^2 q(r) gives +0 for -0; expm1(-0) is -0.
  return _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), x);
}

MXLITE_TARGET_AVX512_INLINE __m512 Sigmoid(__m512 x) {
  const __m512 one = Splat(1.f);
  return _mm512_div_ps(one, _mm512_add_ps(one, Exp(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

MXLITE_TARGET_AVX512_INLINE __m512 Magnitude(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x),
                                              _mm512_set1_epi32(0x7fffffff)));
}

// magnitude with the sign of `sign`'s lanes.
MXLITE_TARGET_AVX512_INLINE __m512 WithSignOf(__m512 magnitude, __m512 sign) {
  const __m512i sign_bit = _mm512_and_si512(_mm512_castps_si512(sign),
                                            _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(magnitude), sign_bit));
}

MXLITE_TARGET_AVX512_INLINE __m512 Tanh(__m512 x) {
  const __m512 a = Magnitude(x);
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, x2), Polynomial(x2, kTanhT), x);
  const __m512 one = Splat(1.f);
  const __m512 large = _mm512_sub_ps(
      one, _mm512_div_ps(Splat(2.f), _mm512_add_ps(Exp(_mm512_add_ps(a, a)), one)));
  return _mm512_mask_mov_ps(WithSignOf(large, x),
                            _mm512_cmp_ps_mask(a, Splat(kTanhLimit), _CMP_LT_OQ), small);
}

MXLITE_TARGET_AVX512_INLINE __m512 Erf(__m512 z) {
  const __m512 z2 = _mm512_mul_ps(z, z);
  const __m512 small = _mm512_mul_ps(z, Polynomial(z2, kErfP));
  const __m512 a = _mm512_maskz_min_ps(kAllLanes, Splat(kErfOne), Magnitude(z));
  const __m512 one = Splat(1.f);
  const __m512 s = Polynomial(_mm512_div_ps(one, _mm512_add_ps(one, a)), kErfcS);
  const __m512 a2 = _mm512_mul_ps(a, a);
  const __m512 a2_low = _mm512_fmsub_ps(a, a, a2);  // a^2 - a2, exactly
  const __m512 tail = _mm512_mul_ps(_mm512_mul_ps(Exp(_mm512_sub_ps(_mm512_setzero_ps(), a2)), s),
                                    _mm512_sub_ps(one, a2_low));
  const __m512 large = WithSignOf(_mm512_sub_ps(one, tail), z);
  return _mm512_mask_mov_ps(large, _mm512_cmp_ps_mask(Magnitude(z), Splat(kErfLimit), _CMP_LT_OQ),
                            small);
}

template <RowMath kFunction>
MXLITE_TARGET_AVX512_INLINE __m512 Evaluate(__m512 x, __m512 alpha) {
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
      return _mm512_mul_ps(_mm512_mul_ps(Splat(0.5f), x),
                           _mm512_add_ps(Splat(1.f), Erf(_mm512_mul_ps(x, Splat(kSqrtHalf)))));
    case RowMath::kElu:
      return _mm512_mask_mov_ps(_mm512_mul_ps(alpha, Expm1(x)),
                                _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), x);
  }
  return x;
}

// Whole vectors, then one masked vector for the rest.
template <RowMath kFunction>
MXLITE_TARGET_AVX512 void Row(const float* src, float* dst, int64_t count, float alpha) {
  const __m512 a = Splat(alpha);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(dst + i, Evaluate<kFunction>(_mm512_loadu_ps(src + i), a));
  }
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    _mm512_mask_storeu_ps(dst + i, mask,
                          Evaluate<kFunction>(_mm512_maskz_loadu_ps(mask, src + i), a));
  }
}

void Rows(RowMath function, const float* src, float* dst, int64_t count, float alpha) {
  DispatchRowMath(function, [&](auto kind) { Row<decltype(kind)::value>(src, dst, count, alpha); });
}

// VMAXPS(v, m) is v where v > m, else m: a NaN in v is passed over and a
// NaN in m (all lanes, src[0]) stays, as the scalar loop.
MXLITE_TARGET_AVX512 float Max(const float* src, int64_t count) {
  __m512 m = Splat(src[0]);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) m = _mm512_maskz_max_ps(kAllLanes, _mm512_loadu_ps(src + i), m);
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    m = _mm512_mask_max_ps(m, mask, _mm512_maskz_loadu_ps(mask, src + i), m);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, m);
  return LargestLane(lanes, 16);
}

template <bool kScaled>
MXLITE_TARGET_AVX512 float ExpShifted(const float* src, float* dst, int64_t count, float shift,
                                      float temperature) {
  const __m512 s = Splat(shift), t = Splat(temperature);
  __m512 sum = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 x = _mm512_sub_ps(_mm512_loadu_ps(src + i), s);
    if (kScaled) x = _mm512_div_ps(x, t);
    const __m512 e = Exp(x);
    _mm512_storeu_ps(dst + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, src + i), s);
    if (kScaled) x = _mm512_div_ps(x, t);
    const __m512 e = Exp(x);
    _mm512_mask_storeu_ps(dst + i, mask, e);
    sum = _mm512_mask_add_ps(sum, mask, sum, e);
  }
  // (_mm512_reduce_add_ps reads an undefined operand GCC 12 warns about.)
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return SumOfLanes(lanes, 16);
}

float ExpShiftedAny(const float* src, float* dst, int64_t count, float shift, float temperature) {
  return temperature == 1.f ? ExpShifted<false>(src, dst, count, shift, temperature)
                            : ExpShifted<true>(src, dst, count, shift, temperature);
}

MXLITE_TARGET_AVX512 void Divide(const float* src, float* dst, int64_t count, float divisor) {
  const __m512 d = Splat(divisor);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(dst + i, _mm512_div_ps(_mm512_loadu_ps(src + i), d));
  }
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    _mm512_mask_storeu_ps(dst + i, mask, _mm512_div_ps(_mm512_maskz_loadu_ps(mask, src + i), d));
  }
}

}  // namespace math_row_avx512

const MathRowKernels kMathRowAvx512 = {math_row_avx512::Rows, math_row_avx512::Max,
                                       math_row_avx512::ExpShiftedAny, math_row_avx512::Divide};

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
