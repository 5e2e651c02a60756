/*
 * BatchNormRow with AVX-512 (see batch_norm_row.h): one line of the row
 * kernels' table in batch_norm_row.cc.
 */
#include <cstdint>

#include "../kernels/x86_simd.h"
#include "batch_norm_row.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace batch_norm_row_avx512 {

// Sixteen elements, with the scalar code's operations in its order
// (separate multiplies and adds, no FMA), so the results are the same bit
// for bit, the clamp included (ClampAvx512 passes NaN through as the scalar
// std::max/std::min do).
MXLITE_TARGET_AVX512_INLINE __m512 NormalizeAvx512(__m512 x, __m512 mean, __m512 invstd,
                                                   bool has_gamma, __m512 gamma, __m512 beta,
                                                   bool clamps, __m512 lower, __m512 upper) {
  __m512 v = _mm512_mul_ps(_mm512_sub_ps(x, mean), invstd);
  if (has_gamma) v = _mm512_mul_ps(v, gamma);
  v = _mm512_add_ps(v, beta);
  return clamps ? ClampAvx512(lower, upper, v) : v;
}

}  // namespace batch_norm_row_avx512

// One plane: whole vectors with plain loads and stores (a masked load costs
// about twice as much), then one masked vector for the rest.
MXLITE_TARGET_AVX512 void BatchNormRowAvx512(const float* src, float* dst, int64_t count,
                                             float mean, float invstd, bool has_gamma,
                                             float gamma, float beta, bool clamps, float lower,
                                             float upper) {
  using batch_norm_row_avx512::NormalizeAvx512;
  const __m512 m = _mm512_set1_ps(mean), s = _mm512_set1_ps(invstd);
  const __m512 w = _mm512_set1_ps(gamma), b = _mm512_set1_ps(beta);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(dst + i, NormalizeAvx512(_mm512_loadu_ps(src + i), m, s, has_gamma, w, b,
                                              clamps, lo, hi));
  }
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    _mm512_mask_storeu_ps(dst + i, mask,
                          NormalizeAvx512(_mm512_maskz_loadu_ps(mask, src + i), m, s, has_gamma,
                                          w, b, clamps, lo, hi));
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
