/*
 * ActivationRow with AVX-512 (see activation_row.h): one line of the row
 * kernels' table in activation_row.cc.
 */
#include <cstdint>

#include "../kernels/x86_simd.h"
#include "activation_row.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace activation_row_avx512 {

// Sixteen elements. The ordered comparisons are false for NaN: relu keeps
// it (not <= 0), leaky takes slope * NaN, a NaN, as the scalar code does.
template <RowActivation kKind>
MXLITE_TARGET_AVX512_INLINE __m512 ActivateAvx512(__m512 x, __m512 slope) {
  const __m512 zero = _mm512_setzero_ps();
  if (kKind == RowActivation::kRelu) {
    return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LE_OQ), zero);
  }
  return _mm512_mask_mov_ps(_mm512_mul_ps(slope, x), _mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ), x);
}

// Whole vectors, then one masked vector for the rest.
template <RowActivation kKind>
MXLITE_TARGET_AVX512 void Row(const float* src, float* dst, int64_t count, float slope) {
  const __m512 s = _mm512_set1_ps(slope);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(dst + i, ActivateAvx512<kKind>(_mm512_loadu_ps(src + i), s));
  }
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    _mm512_mask_storeu_ps(dst + i, mask,
                          ActivateAvx512<kKind>(_mm512_maskz_loadu_ps(mask, src + i), s));
  }
}

}  // namespace activation_row_avx512

void ActivationRowAvx512(RowActivation kind, const float* src, float* dst, int64_t count,
                         float slope) {
  if (kind == RowActivation::kRelu) {
    activation_row_avx512::Row<RowActivation::kRelu>(src, dst, count, slope);
  } else {
    activation_row_avx512::Row<RowActivation::kLeaky>(src, dst, count, slope);
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
