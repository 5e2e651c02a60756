#include "strided_copy.h"

#include "cpu_features.h"
#include "x86_simd.h"

namespace mxlite {

namespace strided_copy_cc {

#if defined(MXLITE_X86_64)
// Stride 2: the even lanes of each 32 consecutive floats. Whole vectors
// while all 32 floats they load are needed or before the last needed one.
MXLITE_TARGET_AVX512 int64_t CopyStride2Avx512(const float* src, int64_t count, float* dst) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t i = 0;
  // The vector at i reads src[2i .. 2i + 31]; the last float needed is
  // src[2 * (count - 1)], so 2i + 31 <= 2 * count - 2 keeps it in bounds.
  for (; 2 * i + 33 <= 2 * count; i += 16) {
    const __m512 low = _mm512_loadu_ps(src + 2 * i);
    const __m512 high = _mm512_loadu_ps(src + 2 * i + 16);
    _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(low, even, high));
  }
  return i;
}
#endif  // MXLITE_X86_64

}  // namespace strided_copy_cc

void CopyStrided(const float* src, int64_t stride, int64_t count, float* dst) {
  int64_t i = 0;
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (avx512 && stride == 2) i = strided_copy_cc::CopyStride2Avx512(src, count, dst);
#endif
  for (; i < count; ++i) dst[i] = src[i * stride];
}

}  // namespace mxlite
