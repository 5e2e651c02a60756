/*
 * ActivationRow with AVX2 (see activation_row.h): one line of the row
 * kernels' table in activation_row.cc.
 */
#include <cstdint>

#include "../kernels/x86_simd.h"
#include "activation_row.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace activation_row_avx2 {

// Eight elements, as ActivateAvx512 (activation_row_avx512.cc): the
// ordered comparisons are false for NaN.
template <RowActivation kKind>
MXLITE_TARGET_AVX2_INLINE __m256 ActivateAvx2(__m256 x, __m256 slope) {
  const __m256 zero = _mm256_setzero_ps();
  if (kKind == RowActivation::kRelu) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, zero, _CMP_LE_OQ), x);
  }
  return _mm256_blendv_ps(_mm256_mul_ps(slope, x), x, _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
}

// Whole vectors, then the last 1-7 elements through masked loads and
// stores.
template <RowActivation kKind>
MXLITE_TARGET_AVX2 void Row(const float* src, float* dst, int64_t count, float slope) {
  const __m256 s = _mm256_set1_ps(slope);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(dst + i, ActivateAvx2<kKind>(_mm256_loadu_ps(src + i), s));
  }
  if (i < count) {
    const __m256i mask = LanesBelowAvx2(count - i);
    _mm256_maskstore_ps(dst + i, mask, ActivateAvx2<kKind>(_mm256_maskload_ps(src + i, mask), s));
  }
}

}  // namespace activation_row_avx2

void ActivationRowAvx2(RowActivation kind, const float* src, float* dst, int64_t count,
                       float slope) {
  if (kind == RowActivation::kRelu) {
    activation_row_avx2::Row<RowActivation::kRelu>(src, dst, count, slope);
  } else {
    activation_row_avx2::Row<RowActivation::kLeaky>(src, dst, count, slope);
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
