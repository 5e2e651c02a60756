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
// past a line (lanes past out_w read zeros and are not stored). Rounded to
// the 16-float vectors of AVX-512, which covers AVX2's 8 as well.
int64_t LineLength(const DirectConvGeometry& g) {
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

// The tile shapes of each instruction set, for RowsVector.
struct Avx512Tiles {
  static constexpr int64_t kLanes = 16, kFilters = kTileFilters;
  static constexpr bool kGroupsOuter = false;
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

struct Avx2Tiles {
  static constexpr int64_t kLanes = 8, kFilters = kAvx2TileFilters;
  static constexpr bool kGroupsOuter = true;  // see RowsVector
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

// Output rows [row_begin, row_end): the band's input rows are gathered
// once into lines (per channel and column phase: input columns
// phase - pad_w + j * stride, zeros in the padding), which every output row
// of the band then reads: row oy's tap (c, ky, kx) is line (c, kx % stride,
// (oy - row_begin) * stride + ky) from element kx / stride. Tiles:
// Avx512Tiles or Avx2Tiles (whose functions carry their own targets; a call
// per tile of a hundred-odd taps costs nothing measurable).
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
    if (kStride == 2 && Tiles::kLanes == 8) {  // AVX2: both phases in one pass
      float* even = lines + c * kStride * band_rows * line_len;
      GatherStrideTwoAvx2(input + c * g.in_h * g.in_w, g.in_h, g.in_w,
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
      const int64_t offset = f0 * out_plane + oy * g.out_w + ox;
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

// The vector path for this machine, or null for the portable loop.
using RowsFunction = void (*)(const DirectConvGeometry&, const float*, const float*,
                              const float*, int64_t, int64_t, float*, const float*, float,
                              float);

RowsFunction VectorRows(int64_t stride) {
  static const Isa isa = SelectedIsa();
  if (stride != 1 && stride != 2) return nullptr;
  if (isa == Isa::kAvx512) {
    return stride == 1 ? RowsVector<Avx512Tiles, 1> : RowsVector<Avx512Tiles, 2>;
  }
  if (isa == Isa::kAvx2) return stride == 1 ? RowsVector<Avx2Tiles, 1> : RowsVector<Avx2Tiles, 2>;
  return nullptr;
}
#endif  // MXLITE_X86_64

}  // namespace direct_conv_cc

bool DirectConvPays(int64_t channels, int64_t groups, int64_t kernel_h, int64_t kernel_w,
                       int64_t stride_h, int64_t stride_w, int64_t dilate_h, int64_t dilate_w) {
#if defined(MXLITE_X86_64)
  static const Isa isa = SelectedIsa();
  // On AVX2 too: there the 3-channel stems ran 2.6-4.4x faster than as
  // shifted GEMMs (Zen 3, one thread).
  return (isa == Isa::kAvx512 || isa == Isa::kAvx2) && groups == 1 && channels >= 1 &&
         channels <= 4 && kernel_h <= 11 && kernel_w <= 11 && stride_h == stride_w &&
         (stride_h == 1 || stride_h == 2) && dilate_h == 1 && dilate_w == 1;
#else
  (void)channels, (void)groups, (void)kernel_h, (void)kernel_w, (void)stride_h, (void)stride_w;
  (void)dilate_h, (void)dilate_w;
  return false;
#endif  // defined(MXLITE_X86_64)
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
  if (const direct_conv_cc::RowsFunction rows = direct_conv_cc::VectorRows(g.stride)) {
    rows(g, input, packed, bias, row_begin, row_end, output, residual, lower, upper);
    return;
  }
#endif  // defined(MXLITE_X86_64)
  for (int64_t oy = row_begin; oy < row_end; ++oy) {
    direct_conv_cc::RowScalar(g, input, packed, bias, oy, output, residual, lower, upper);
  }
}

}  // namespace mxlite
