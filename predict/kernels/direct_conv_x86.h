/*
 * What the x86-64 direct convolution kernels (direct_conv_avx512.cc,
 * direct_conv_avx2.cc) share: the band's zero-padded lines and the row
 * loop over tiles, instantiated by each file for its tile shapes. Internal
 * to the direct convolution family; see direct_conv.h.
 */
#ifndef MXLITE_KERNELS_DIRECT_CONV_X86_H_
#define MXLITE_KERNELS_DIRECT_CONV_X86_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "direct_conv.h"
#include "strided_copy.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace direct_conv_x86 {

constexpr int64_t kTileFilters = kDirectConvTileFilters;

// Floats per line: every column a whole-vector tile reads, so no load runs
// past a line (lanes past out_w read zeros and are not stored). Rounded to
// the 16-float vectors of AVX-512, which covers AVX2's 8 as well.
inline int64_t LineLength(const DirectConvGeometry& g) {
  return (g.out_w + 15) / 16 * 16 + (g.kernel_w - 1) / g.stride;
}

struct TileOutput {
  float* output;           // filter 0's plane, at the tile's row and first column
  const float* residual;   // likewise, or null
  int64_t plane;           // floats between filters' planes
  int64_t columns;         // output columns left from the tile's first
  int64_t filters;         // filters in this tile (1 up to the tile's height)
  float lower, upper;      // clamp
};

// Output rows [row_begin, row_end): the band's input rows are gathered
// once into lines (per channel and column phase: input columns
// phase - pad_w + j * stride, zeros in the padding), which every output row
// of the band then reads: row oy's tap (c, ky, kx) is line (c, kx % stride,
// (oy - row_begin) * stride + ky) from element kx / stride. Tiles:
// Avx512Tiles (direct_conv_avx512.cc) or Avx2Tiles (direct_conv_avx2.cc),
// whose functions carry their own targets (a call per tile of a hundred-odd
// taps costs nothing measurable). Where Tiles::kGathersBothPhases, a
// stride-2 band's lines come from Tiles::GatherStrideTwo.
template <class Tiles, int kStride>
void RowsVector(const DirectConvGeometry& g, const float* input, const float* packed,
                const float* bias, int64_t row_begin, int64_t row_end, float* output,
                const float* residual, float lower, float upper) {
  const int64_t line_len = LineLength(g);
  const int64_t band_rows = (row_end - row_begin - 1) * kStride + g.kernel_h;
  thread_local std::vector<float> storage;
  const size_t floats = static_cast<size_t>(g.channels * kStride * band_rows * line_len);
  if (storage.size() < floats) storage.resize(floats);
  float* lines = storage.data();
  for (int64_t c = 0; c < g.channels; ++c) {
    if constexpr (kStride == 2 && Tiles::kGathersBothPhases) {  // both phases in one pass
      float* even = lines + c * kStride * band_rows * line_len;
      Tiles::GatherStrideTwo(input + c * g.in_h * g.in_w, g.in_h, g.in_w,
                          row_begin * kStride - g.pad_h, band_rows, g.pad_w, line_len, even,
                          even + band_rows * line_len);
      continue;
    }
    for (int64_t phase = 0; phase < kStride; ++phase) {
      GatherRowsZeroPadded(input + c * g.in_h * g.in_w, g.in_h, g.in_w,
                           row_begin * kStride - g.pad_h, 1, band_rows, phase - g.pad_w,
                           kStride, line_len,
                           lines + (c * kStride + phase) * band_rows * line_len);
    }
  }
  const int64_t out_plane = g.OutputPlane(), taps = g.Taps();
  // Tap (c, ky, kx)'s place in the lines, from the output row's first line
  // (one flat loop over the taps in the tile: nested loops of three
  // iterations cost a mispredicted branch each).
  thread_local std::vector<int64_t> offsets;
  offsets.resize(static_cast<size_t>(taps));
  const int64_t phase_step = band_rows * line_len;
  for (int64_t c = 0, tap = 0; c < g.channels; ++c) {
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      for (int64_t kx = 0; kx < g.kernel_w; ++kx, ++tap) {
        offsets[static_cast<size_t>(tap)] = (c * kStride + kx % kStride) * phase_step +
                                            ky * line_len + kx / kStride;
      }
    }
  }
  constexpr int64_t kLanes = Tiles::kLanes;
  // Each (output row, tile's group of filters) in turn: on AVX2 a group's
  // rows of the band one after another, so that its few planes are written
  // in runs of several rows. Row by row, every row wrote to all 32-64
  // planes at once, more write streams than the prefetchers follow: 3x3
  // stems with a cold output ran 3-5% slower so (Zen 3, one thread, 32 MB
  // flushed between runs; the 7x7 stem alike either way). The band's lines
  // are then read once per group, from L2.
  const int64_t rows = row_end - row_begin;
  const int64_t groups = (g.filters + Tiles::kFilters - 1) / Tiles::kFilters;
  for (int64_t step = 0; step < rows * groups; ++step) {
    const int64_t oy = row_begin + (Tiles::kGroupsOuter ? step % rows : step / groups);
    const int64_t f0 = Tiles::kFilters * (Tiles::kGroupsOuter ? step / rows : step % groups);
    const float* row_lines = lines + (oy - row_begin) * kStride * line_len;
    // Filter f0 within its packed group of kTileFilters.
    const float* weights = packed + f0 / kTileFilters * taps * kTileFilters + f0 % kTileFilters;
    TileOutput out;
    out.plane = out_plane;
    out.filters = std::min(Tiles::kFilters, g.filters - f0);
    out.lower = lower;
    out.upper = upper;
    // Tiles of three vectors, but two and two for the last four (a
    // one-vector tile is bound by its broadcast loads).
    int64_t ox = 0;
    while (ox < g.out_w) {
      const int64_t offset = f0 * out_plane + (oy - g.output_first_row) * g.out_w + ox;
      out.output = output + offset;
      out.residual = residual ? residual + offset : nullptr;
      out.columns = g.out_w - ox;
      const int64_t vectors = (out.columns + kLanes - 1) / kLanes;
      const int64_t tile = vectors >= 5 || vectors == 3 ? 3 : std::min<int64_t>(vectors, 2);
      Tiles::Run(tile, row_lines + ox, offsets.data(), taps, weights, bias + f0, out);
      ox += tile * kLanes;
    }
  }
}

}  // namespace direct_conv_x86
}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)

#endif  // MXLITE_KERNELS_DIRECT_CONV_X86_H_
