/*
 * Direct convolution with AVX2 and FMA (see direct_conv.h): one line of the
 * family's table in direct_conv.cc.
 */
#include <algorithm>
#include <cstdint>

#include "direct_conv_x86.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace direct_conv_avx2 {

using direct_conv_x86::kTileFilters;
using direct_conv_x86::TileOutput;

// AVX2 has 16 registers of 8 floats, so the tile is 4 filters (half a
// packed group of 8, read at a stride of 8) by up to 3 vectors: 12
// accumulators, 3 input vectors and 1 broadcast weight. Per tap 3 loads,
// 4 broadcasts and 12 FMAs: still FMA-bound. The taps are summed in the
// same order as above, so the two paths agree to the bit.
constexpr int kAvx2TileFilters = 4;

template <int kVecs>
MXLITE_TARGET_AVX2 void TileAvx2(const float* lines, const int64_t* offsets, int64_t taps,
                                 const float* weights, const float* bias,
                                 const TileOutput& out) {
  __m256 acc[kAvx2TileFilters][kVecs];
  MXLITE_UNROLL
  for (int f = 0; f < kAvx2TileFilters; ++f) {
    MXLITE_UNROLL
    for (int v = 0; v < kVecs; ++v) acc[f][v] = _mm256_setzero_ps();
  }
  const float* w = weights;
  for (int64_t tap = 0; tap < taps; ++tap, w += kTileFilters) {
    const float* x = lines + offsets[tap];
    __m256 xv[kVecs];
    MXLITE_UNROLL
    for (int v = 0; v < kVecs; ++v) xv[v] = _mm256_loadu_ps(x + 8 * v);
    MXLITE_UNROLL
    for (int f = 0; f < kAvx2TileFilters; ++f) {
      const __m256 wf = _mm256_broadcast_ss(w + f);
      MXLITE_UNROLL
      for (int v = 0; v < kVecs; ++v) acc[f][v] = _mm256_fmadd_ps(wf, xv[v], acc[f][v]);
    }
  }
  // The tile's fields in locals: the stores (may_alias vector types) would
  // otherwise make the compiler reload them after each one.
  const __m256 lower = _mm256_set1_ps(out.lower), upper = _mm256_set1_ps(out.upper);
  const int64_t plane = out.plane, columns = out.columns, filters = out.filters;
  float* const output = out.output;
  const float* const residual = out.residual;
  MXLITE_UNROLL
  for (int f = 0; f < kAvx2TileFilters; ++f) {
    if (f >= filters) break;
    const __m256 b = _mm256_set1_ps(bias[f]);
    MXLITE_UNROLL
    for (int v = 0; v < kVecs; ++v) {
      __m256 value = _mm256_add_ps(acc[f][v], b);
      float* dst = output + f * plane + 8 * v;
      const float* add = residual ? residual + f * plane + 8 * v : nullptr;
      if (columns - 8 * v >= 8) {
        if (add) value = _mm256_add_ps(value, _mm256_loadu_ps(add));
        _mm256_storeu_ps(dst, ClampAvx2(lower, upper, value));
      } else {
        // The row's last vector: the residual and output planes end (or
        // the next row starts) within it.
        const __m256i lanes = LanesBelowAvx2(columns - 8 * v);
        if (add) value = _mm256_add_ps(value, _mm256_maskload_ps(add, lanes));
        _mm256_maskstore_ps(dst, lanes, ClampAvx2(lower, upper, value));
      }
    }
  }
}

// AVX2, stride 2: one channel's band of input rows into both column
// phases' lines at once (line p, element j: column p - pad_w + 2 j). Each
// sixteen columns inside the row are read as four quarters, low halves
// 0-3 and 4-7, high halves 8-11 and 12-15, so that one in-lane shuffle
// puts the even columns (and one the odd) in order; the blocks at a row's
// edges load with masks, zeros for the padding, and permute. Two calls of
// GatherRowsZeroPadded per channel, a phase each, read every column twice
// and permuted across lanes: a band of a 224-wide 3-channel stem took
// 2.8-3.7 us that way, 2.3-2.5 us so (Zen 3, one thread, input from L3).
MXLITE_TARGET_AVX2 void GatherStrideTwoAvx2(const float* plane, int64_t height, int64_t width,
                                            int64_t first_row, int64_t rows, int64_t pad_w,
                                            int64_t line_len, float* even, float* odd) {
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t r = 0; r < rows; ++r, even += line_len, odd += line_len) {
    const int64_t y = first_row + r;
    const bool inside = y >= 0 && y < height;
    const float* row = inside ? plane + y * width : plane;
    // line_len >= 16: the last block starts at line_len - 8, overlapping
    // the one before it, so nothing is stored past a line.
    for (int64_t j = 0; j < line_len; j += 8) {
      const int64_t at = std::min(j, line_len - 8), column = 2 * at - pad_w;
      __m256 evens = zero, odds = zero;  // rows above or below the input
      if (inside && column >= 0 && column + 16 <= width) {
        const __m256 a = _mm256_loadu2_m128(row + column + 8, row + column);
        const __m256 b = _mm256_loadu2_m128(row + column + 12, row + column + 4);
        evens = _mm256_shuffle_ps(a, b, 0x88);
        odds = _mm256_shuffle_ps(a, b, 0xdd);
      } else if (inside) {
        const __m256 low =
            _mm256_maskload_ps(OffsetAddress(row, column), LanesInsideAvx2(column, width));
        const __m256 high = _mm256_maskload_ps(OffsetAddress(row, column + 8),
                                               LanesInsideAvx2(column + 8, width));
        // Lanes 0 2 8 10 | 4 6 12 14: the 64-bit pairs then put in order.
        evens = _mm256_castpd_ps(_mm256_permute4x64_pd(
            _mm256_castps_pd(_mm256_shuffle_ps(low, high, 0x88)), 0xd8));
        odds = _mm256_castpd_ps(_mm256_permute4x64_pd(
            _mm256_castps_pd(_mm256_shuffle_ps(low, high, 0xdd)), 0xd8));
      }
      _mm256_storeu_ps(even + at, evens);
      _mm256_storeu_ps(odd + at, odds);
    }
  }
}

// The AVX2 tile shapes, for RowsVector.
struct Avx2Tiles {
  static constexpr int64_t kLanes = 8, kFilters = kAvx2TileFilters;
  static constexpr bool kGroupsOuter = true;  // see RowsVector
  static constexpr bool kGathersBothPhases = true;
  static void GatherStrideTwo(const float* plane, int64_t height, int64_t width,
                              int64_t first_row, int64_t rows, int64_t pad_w, int64_t line_len,
                              float* even, float* odd) {
    GatherStrideTwoAvx2(plane, height, width, first_row, rows, pad_w, line_len, even, odd);
  }
  static void Run(int64_t vectors, const float* lines, const int64_t* offsets, int64_t taps,
                  const float* weights, const float* bias, const TileOutput& out) {
    if (vectors == 3) {
      TileAvx2<3>(lines, offsets, taps, weights, bias, out);
    } else if (vectors == 2) {
      TileAvx2<2>(lines, offsets, taps, weights, bias, out);
    } else {
      TileAvx2<1>(lines, offsets, taps, weights, bias, out);
    }
  }
};

}  // namespace direct_conv_avx2

void DirectConvRowsAvx2(const DirectConvGeometry& g, const float* input, const float* packed,
                        const float* bias, int64_t row_begin, int64_t row_end, float* output,
                        const float* residual, float lower, float upper) {
  using direct_conv_avx2::Avx2Tiles;
  if (g.stride == 1) {
    direct_conv_x86::RowsVector<Avx2Tiles, 1>(g, input, packed, bias, row_begin, row_end, output,
                                              residual, lower, upper);
  } else {
    direct_conv_x86::RowsVector<Avx2Tiles, 2>(g, input, packed, bias, row_begin, row_end, output,
                                              residual, lower, upper);
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
