/*
 * The int16 pair GEMM with AVX2 (see int16_pair_gemm.h): a tile of up to
 * four filters by sixteen columns is eight int32 vectors kept in registers;
 * each pair row of x adds, per filter, pmaddwd(x row, the filter's pair
 * broadcast) to them. Filters go in groups of 16: for each sixteen columns
 * the group's four tiles read the same x slice (64 bytes a pair row), and
 * the group's weights stay in L2 over all the columns.
 */
#include <algorithm>
#include <cstdint>

#include "int16_pair_gemm.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace int16_pair_gemm_avx2 {

constexpr int64_t kFilterGroup = 16;

template <int kFilters>
MXLITE_TARGET_AVX2 void Tile(const int32_t* w, const int32_t* x, int64_t pairs, int64_t columns,
                             int32_t* acc) {
  __m256i sum[kFilters][2];
  MXLITE_UNROLL
  for (int f = 0; f < kFilters; ++f) {
    sum[f][0] = _mm256_setzero_si256();
    sum[f][1] = _mm256_setzero_si256();
  }
  for (int64_t kp = 0; kp < pairs; ++kp) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kp * columns));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kp * columns + 8));
    MXLITE_UNROLL
    for (int f = 0; f < kFilters; ++f) {
      const __m256i pair = _mm256_set1_epi32(w[f * pairs + kp]);
      sum[f][0] = _mm256_add_epi32(sum[f][0], _mm256_madd_epi16(x0, pair));
      sum[f][1] = _mm256_add_epi32(sum[f][1], _mm256_madd_epi16(x1, pair));
    }
  }
  MXLITE_UNROLL
  for (int f = 0; f < kFilters; ++f) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + f * columns), sum[f][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + f * columns + 8), sum[f][1]);
  }
}

}  // namespace int16_pair_gemm_avx2

MXLITE_TARGET_AVX2 void Int16PairGemmAvx2(const int32_t* w, const int32_t* x, int64_t filters,
                                          int64_t pairs, int64_t columns, int32_t* acc) {
  using namespace int16_pair_gemm_avx2;
  for (int64_t f0 = 0; f0 < filters; f0 += kFilterGroup) {
    const int64_t f1 = std::min(filters, f0 + kFilterGroup);
    for (int64_t c = 0; c < columns; c += kInt16PairColumnStep) {
      int64_t f = f0;
      for (; f + 4 <= f1; f += 4) {
        Tile<4>(w + f * pairs, x + c, pairs, columns, acc + f * columns + c);
      }
      switch (f1 - f) {
        case 3: Tile<3>(w + f * pairs, x + c, pairs, columns, acc + f * columns + c); break;
        case 2: Tile<2>(w + f * pairs, x + c, pairs, columns, acc + f * columns + c); break;
        case 1: Tile<1>(w + f * pairs, x + c, pairs, columns, acc + f * columns + c); break;
        default: break;
      }
    }
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
