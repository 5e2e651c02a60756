/*
 * Direct convolution with AVX-512 (see direct_conv.h): one line of the
 * family's table in direct_conv.cc.
 */
#include <algorithm>
#include <cstdint>

#include "direct_conv_x86.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace direct_conv_avx512 {

using direct_conv_x86::kTileFilters;
using direct_conv_x86::TileOutput;

// kTileFilters x kVecs vectors of one output row: tap t reads the lines at
// lines + offsets[t] (lines: at the tile's first column), weights: one
// filter group's, packed.
template <int kVecs>
MXLITE_TARGET_AVX512 void TileAvx512(const float* lines, const int64_t* offsets, int64_t taps,
                                     const float* weights, const float* bias,
                                     const TileOutput& out) {
  __m512 acc[kTileFilters][kVecs];
  MXLITE_UNROLL
  for (int f = 0; f < kTileFilters; ++f) {
    MXLITE_UNROLL
    for (int v = 0; v < kVecs; ++v) acc[f][v] = _mm512_setzero_ps();
  }
  const float* w = weights;
  for (int64_t tap = 0; tap < taps; ++tap, w += kTileFilters) {
    const float* x = lines + offsets[tap];
    __m512 xv[kVecs];
    MXLITE_UNROLL
    for (int v = 0; v < kVecs; ++v) xv[v] = _mm512_loadu_ps(x + 16 * v);
    MXLITE_UNROLL
    for (int f = 0; f < kTileFilters; ++f) {
      const __m512 wf = _mm512_set1_ps(w[f]);
      MXLITE_UNROLL
      for (int v = 0; v < kVecs; ++v) acc[f][v] = _mm512_fmadd_ps(wf, xv[v], acc[f][v]);
    }
  }
  // The clamp's bounds are loaded only now: held in registers through the
  // tap loop they pushed an accumulator onto the stack.
  const __m512 lower = _mm512_set1_ps(out.lower), upper = _mm512_set1_ps(out.upper);
  // Copies of the output's fields, as in TileAvx2: read through `out`,
  // each store could change them, so they would be reloaded after it.
  const int64_t plane = out.plane, columns = out.columns, filters = out.filters;
  float* const output = out.output;
  const float* const residual = out.residual;
  MXLITE_UNROLL
  for (int f = 0; f < kTileFilters; ++f) {
    // A guard, not a break: clang fails to unroll the two-exit loop.
    if (f < filters) {
      const __m512 b = _mm512_set1_ps(bias[f]);
      MXLITE_UNROLL
      for (int v = 0; v < kVecs; ++v) {
        __m512 value = _mm512_add_ps(acc[f][v], b);
        float* dst = output + f * plane + 16 * v;
        const __mmask16 lanes = LanesBelowAvx512(columns - 16 * v);
        if (residual) {
          value = _mm512_add_ps(value,
                                _mm512_maskz_loadu_ps(lanes, residual + f * plane + 16 * v));
        }
        value = ClampAvx512(lower, upper, value);
        if (lanes == 0xffff) {
          _mm512_storeu_ps(dst, value);
        } else {
          _mm512_mask_storeu_ps(dst, lanes, value);
        }
      }
    }
  }
}

// The AVX-512 tile shapes, for RowsVector.
struct Avx512Tiles {
  static constexpr int64_t kLanes = 16, kFilters = kTileFilters;
  static constexpr bool kGroupsOuter = false;
  static constexpr bool kGathersBothPhases = false;
  static void Run(int64_t vectors, const float* lines, const int64_t* offsets, int64_t taps,
                  const float* weights, const float* bias, const TileOutput& out) {
    if (vectors == 3) {
      TileAvx512<3>(lines, offsets, taps, weights, bias, out);
    } else if (vectors == 2) {
      TileAvx512<2>(lines, offsets, taps, weights, bias, out);
    } else {
      TileAvx512<1>(lines, offsets, taps, weights, bias, out);
    }
  }
};

}  // namespace direct_conv_avx512

void DirectConvRowsAvx512(const DirectConvGeometry& g, const float* input, const float* packed,
                          const float* bias, int64_t row_begin, int64_t row_end, float* output,
                          const float* residual, float lower, float upper) {
  using direct_conv_avx512::Avx512Tiles;
  if (g.stride == 1) {
    direct_conv_x86::RowsVector<Avx512Tiles, 1>(g, input, packed, bias, row_begin, row_end, output,
                                                residual, lower, upper);
  } else {
    direct_conv_x86::RowsVector<Avx512Tiles, 2>(g, input, packed, bias, row_begin, row_end, output,
                                                residual, lower, upper);
  }
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
