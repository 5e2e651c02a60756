/*
 * BatchNormRow with AVX2 (see batch_norm_row.h): one line of the row
 * kernels' table in batch_norm_row.cc.
 */
#include <cstdint>

#include "../kernels/x86_simd.h"
#include "batch_norm_row.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace batch_norm_row_avx2 {

// The same in eight lanes for AVX2 machines: the operations of
// NormalizeAvx512 (batch_norm_row_avx512.cc) in its order (no FMA), the
// clamp as ClampAvx512 (max and min return their second operand, x, on
// NaN), so the same bits. GCC writes the AVX2 intrinsics as plain vector
// arithmetic and, compiling C++, fuses a multiply and the add after it into
// an FMA where it sees fit (it did in some of BatchNormRowAvx2's loops and
// not in others, so an element's bits
// depended on its position in the run); the empty asm hides the product
// from it.
MXLITE_TARGET_AVX2_INLINE __m256 NormalizeAvx2(__m256 x, __m256 mean, __m256 invstd,
                                               bool has_gamma, __m256 gamma, __m256 beta,
                                               bool clamps, __m256 lower, __m256 upper) {
  __m256 v = _mm256_mul_ps(_mm256_sub_ps(x, mean), invstd);
  if (has_gamma) v = _mm256_mul_ps(v, gamma);
  asm("" : "+x"(v));
  v = _mm256_add_ps(v, beta);
  return clamps ? _mm256_min_ps(upper, _mm256_max_ps(lower, v)) : v;
}

}  // namespace batch_norm_row_avx2

// One plane, four vectors a step (independent, so the loads overlap), then
// single vectors, then the last 1-7 elements through masked loads and
// stores (the vector operations again, not a scalar tail the compiler might
// contract into FMAs in this FMA-enabled function).
MXLITE_TARGET_AVX2 void BatchNormRowAvx2(const float* src, float* dst, int64_t count,
                                         float mean, float invstd, bool has_gamma, float gamma,
                                         float beta, bool clamps, float lower, float upper) {
  using batch_norm_row_avx2::NormalizeAvx2;
  const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(invstd);
  const __m256 w = _mm256_set1_ps(gamma), b = _mm256_set1_ps(beta);
  const __m256 lo = _mm256_set1_ps(lower), hi = _mm256_set1_ps(upper);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    MXLITE_UNROLL for (int64_t k = 0; k < 32; k += 8) {
      _mm256_storeu_ps(dst + i + k, NormalizeAvx2(_mm256_loadu_ps(src + i + k), m, s, has_gamma,
                                                  w, b, clamps, lo, hi));
    }
  }
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(dst + i, NormalizeAvx2(_mm256_loadu_ps(src + i), m, s, has_gamma, w, b,
                                            clamps, lo, hi));
  }
  if (i < count) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count - i)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(dst + i, mask,
                        NormalizeAvx2(_mm256_maskload_ps(src + i, mask), m, s, has_gamma, w, b,
                                      clamps, lo, hi));
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
