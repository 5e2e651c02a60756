#include "direct_conv.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_features.h"
#include "lane_pack.h"
#include "strided_copy.h"

#include "x86_simd.h"

namespace mxlite {

namespace direct_conv_cc {

constexpr int64_t kTileFilters = 8;  // filters per tile (one broadcast weight each)

int64_t Taps(const DirectConvGeometry& g) { return g.channels * g.kernel_h * g.kernel_w; }

// Portable reference: the same sums in the same order, without FMA.
void RowScalar(const DirectConvGeometry& g, const float* input, const float* packed,
               const float* bias, int64_t oy, float* output, const float* residual, float lower,
               float upper) {
  const int64_t out_plane = g.out_h * g.out_w, taps = Taps(g);
  for (int64_t f = 0; f < g.filters; ++f) {
    const float* w = packed + (f / kTileFilters) * taps * kTileFilters + f % kTileFilters;
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      float sum = 0.f;
      int64_t tap = 0;
      for (int64_t c = 0; c < g.channels; ++c) {
        for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
          const int64_t iy = oy * g.stride + ky - g.pad_h;
          for (int64_t kx = 0; kx < g.kernel_w; ++kx, ++tap) {
            const int64_t ix = ox * g.stride + kx - g.pad_w;
            if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w) {
              sum += w[tap * kTileFilters] * input[(c * g.in_h + iy) * g.in_w + ix];
            }
          }
        }
      }
      const int64_t index = f * out_plane + oy * g.out_w + ox;
      float value = sum + bias[f];
      if (residual) value += residual[index];
      output[index] = std::min(std::max(value, lower), upper);
    }
  }
}

#if defined(MXLITE_X86_64)
// Floats per line: every column a whole-vector tile reads, so no load runs
// past a line (lanes past out_w read zeros and are not stored).
int64_t LineLength(const DirectConvGeometry& g) {
  return (g.out_w + 15) / 16 * 16 + (g.kernel_w - 1) / g.stride;
}

struct TileOutput {
  float* output;           // filter 0's plane, at the tile's row and first column
  const float* residual;   // likewise, or null
  int64_t plane;           // floats between filters' planes
  int64_t columns;         // output columns left from the tile's first
  int64_t filters;         // filters in this tile (1..8)
  float lower, upper;      // clamp
};

// kTileFilters x kVecs vectors of one output row: tap t reads the lines at
// lines + offsets[t] (lines: at the tile's first column), weights: one
// filter group's, packed.
template <int kVecs>
MXLITE_TARGET_AVX512 void Tile(const float* lines, const int64_t* offsets, int64_t taps,
                               const float* weights, const float* bias, const TileOutput& out) {
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
  MXLITE_UNROLL
  for (int f = 0; f < kTileFilters; ++f) {
    if (f >= out.filters) break;
    const __m512 b = _mm512_set1_ps(bias[f]);
    MXLITE_UNROLL
    for (int v = 0; v < kVecs; ++v) {
      __m512 value = _mm512_add_ps(acc[f][v], b);
      float* dst = out.output + f * out.plane + 16 * v;
      const __mmask16 lanes = LanesBelowAvx512(out.columns - 16 * v);
      if (out.residual) {
        value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(lanes, out.residual + f * out.plane +
                                                                      16 * v));
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

// Output rows [row_begin, row_end): the band's input rows are gathered
// once into lines (per channel and column phase: input columns
// phase - pad_w + j * stride, zeros in the padding), which every output row
// of the band then reads: row oy's tap (c, ky, kx) is line (c, kx % stride,
// (oy - row_begin) * stride + ky) from element kx / stride.
template <int kStride>
MXLITE_TARGET_AVX512 void RowsAvx512(const DirectConvGeometry& g, const float* input,
                                     const float* packed, const float* bias, int64_t row_begin,
                                     int64_t row_end, float* output, const float* residual,
                                     float lower, float upper) {
  const int64_t line_len = LineLength(g);
  const int64_t band_rows = (row_end - row_begin - 1) * kStride + g.kernel_h;
  thread_local std::vector<float> storage;
  const size_t floats = static_cast<size_t>(g.channels * kStride * band_rows * line_len);
  if (storage.size() < floats) storage.resize(floats);
  float* lines = storage.data();
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t phase = 0; phase < kStride; ++phase) {
      GatherRowsZeroPadded(input + c * g.in_h * g.in_w, g.in_h, g.in_w,
                           row_begin * kStride - g.pad_h, 1, band_rows, phase - g.pad_w,
                           kStride, line_len,
                           lines + (c * kStride + phase) * band_rows * line_len);
    }
  }
  const int64_t out_plane = g.out_h * g.out_w, taps = Taps(g);
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
  for (int64_t oy = row_begin; oy < row_end; ++oy) {
    const float* row_lines = lines + (oy - row_begin) * kStride * line_len;
    for (int64_t f0 = 0; f0 < g.filters; f0 += kTileFilters) {
      const float* weights = packed + f0 * taps;
      TileOutput out;
      out.plane = out_plane;
      out.filters = std::min(kTileFilters, g.filters - f0);
      out.lower = lower;
      out.upper = upper;
      // Tiles of three vectors, but two and two for the last four (a
      // one-vector tile is bound by its eight broadcast loads).
      int64_t ox = 0;
      while (ox < g.out_w) {
        const int64_t offset = f0 * out_plane + oy * g.out_w + ox;
        out.output = output + offset;
        out.residual = residual ? residual + offset : nullptr;
        out.columns = g.out_w - ox;
        const float* at = row_lines + ox;
        const int64_t vectors = (out.columns + 15) / 16;
        if (vectors >= 5 || vectors == 3) {
          Tile<3>(at, offsets.data(), taps, weights, bias + f0, out);
          ox += 48;
        } else if (vectors >= 2) {
          Tile<2>(at, offsets.data(), taps, weights, bias + f0, out);
          ox += 32;
        } else {
          Tile<1>(at, offsets.data(), taps, weights, bias + f0, out);
          ox += 16;
        }
      }
    }
  }
}
#endif  // MXLITE_X86_64

}  // namespace direct_conv_cc

bool DirectConvApplies(int64_t channels, int64_t groups, int64_t kernel_h, int64_t kernel_w,
                       int64_t stride_h, int64_t stride_w, int64_t dilate_h, int64_t dilate_w) {
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  return avx512 && groups == 1 && channels >= 1 && channels <= 4 && kernel_h <= 11 &&
         kernel_w <= 11 && stride_h == stride_w && (stride_h == 1 || stride_h == 2) &&
         dilate_h == 1 && dilate_w == 1;
#else
  (void)channels, (void)groups, (void)kernel_h, (void)kernel_w, (void)stride_h, (void)stride_w;
  (void)dilate_h, (void)dilate_w;
  return false;
#endif
}

void PackDirectConvWeights(const float* weights, const DirectConvGeometry& g,
                           std::vector<float>* packed) {
  PackRowsInLanes(weights, g.filters, direct_conv_cc::Taps(g), direct_conv_cc::kTileFilters,
                  packed);
}

void DirectConvRows(const DirectConvGeometry& g, const float* input, const float* packed,
                    const float* bias, int64_t row_begin, int64_t row_end, float* output,
                    const float* residual, float lower, float upper) {
  if (row_begin >= row_end) return;
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (avx512 && (g.stride == 1 || g.stride == 2)) {
    if (g.stride == 1) {
      direct_conv_cc::RowsAvx512<1>(g, input, packed, bias, row_begin, row_end, output, residual,
                                    lower, upper);
    } else {
      direct_conv_cc::RowsAvx512<2>(g, input, packed, bias, row_begin, row_end, output, residual,
                                    lower, upper);
    }
    return;
  }
#endif
  for (int64_t oy = row_begin; oy < row_end; ++oy) {
    direct_conv_cc::RowScalar(g, input, packed, bias, oy, output, residual, lower, upper);
  }
}

}  // namespace mxlite
