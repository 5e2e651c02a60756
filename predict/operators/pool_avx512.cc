/*
 * AVX-512 pooling kernels, sixteen lanes (the table's entries "whole planes
 * avx512", "blocked planes avx512" and "rows avx512"; see pool_x86.h for
 * what they share and why they match the scalar reference to the bit):
 *   - whole planes: max or average over whole planes (global pooling),
 *     sixteen planes per vector;
 *   - blocked planes: 2-D max or average over sixteen planes at once,
 *     pixel-major, through a transposed scratch;
 *   - rows: 2-D max or average of one plane, sixteen outputs of a row per
 *     vector, stride 1 or 2. Max: MaxPoolPlaneRows. Average: the plane
 *     is first copied into a scratch whose padding holds zeros (the terms
 *     are divided one by one as in the scalar code, so 0 / d adds nothing);
 *     every window is then whole and its taps run in the scalar code's
 *     order.
 */
#include <algorithm>
#include <cfloat>
#include <memory>
#include <vector>

#include "../kernels/padding.h"
#include "../kernels/thread_pool.h"
#include "../kernels/x86_simd.h"
#include "pool_x86.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace pool_avx512 {

using namespace pool_x86;

// The taps of every window, in the scalar code's order.
template <PlaneOp kOp>
MXLITE_TARGET_AVX512 void PoolPadded(const Plane2d& p, const float* scratch, int64_t scratch_w,
                                     float* dst) {
  const __m512i even =
      _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const float* window = scratch + oh * p.stride_h * scratch_w;
    float* out_row = dst + oh * p.out_w;
    for (int64_t ow = 0; ow < p.out_w; ow += 16) {
      const int64_t count = std::min<int64_t>(16, p.out_w - ow);
      const __mmask16 mask = LanesBelowAvx512(count);
      __m512 divisor = _mm512_set1_ps(1.f);
      if (kOp == PlaneOp::kAverage) {
        divisor = _mm512_mul_ps(_mm512_set1_ps(p.row_extent[oh]),
                                _mm512_mask_loadu_ps(divisor, mask, p.col_extent + ow));
      }
      __m512 acc = _mm512_setzero_ps();
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        const float* row = window + kh * scratch_w + ow * p.stride_w;
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          __m512 v;
          if (p.stride_w == 1) {
            v = _mm512_loadu_ps(row + kw);
          } else {
            v = _mm512_permutex2var_ps(_mm512_loadu_ps(row + kw), even,
                                       _mm512_loadu_ps(row + kw + 16));
          }
          // The masked form because GCC 12 warns inside the plain one.
          if (kOp == PlaneOp::kAverage) {
            acc = _mm512_add_ps(acc, _mm512_maskz_div_ps(0xffff, v, divisor));
          } else {
            acc = _mm512_add_ps(acc, v);
          }
        }
      }
      _mm512_mask_storeu_ps(out_row + ow, mask, acc);
    }
  }
}

// Max pooling of one plane as two one-dimensional passes: the maximum of
// each row's windows (row_maxima[r][ow] over kernel_w taps), then of
// kernel_h such row maxima. A 3x3 window costs 3 + 3 maxima per output
// instead of 9. The input is read in place: a tap's lanes outside the row
// (padding, or past the end) are masked off in the load and read as
// -FLT_MAX. (Copying each row into a padded buffer first made every vector
// load wait on the copy's stores still in flight: 3x slower.)
// The result is bit-identical to the row-major scalar loop: both return, for
// every window, its first element in row-major order that equals the
// maximum (the first row holding the maximum, and in it the first column);
// that choice matters only between +0 and -0. NaN never wins in either
// (max(v, acc) keeps acc), and rows outside the input are skipped (each
// window holds an input row).

// One column block of the first pass: for every row, the maxima of sixteen
// windows whose first taps are row[first], row[first + kStride], ... (lanes
// off their masks read as -FLT_MAX; with kMasked false every lane is
// inside). kTaps > 0 fixes kernel_w at compile time, so that the taps
// unroll (2 and 3, the usual widths).
template <int kStride, bool kMasked, int kTaps>
MXLITE_TARGET_AVX512_INLINE void RowMaximaBlock(const float* row, int64_t first, int64_t in_w,
                                                int64_t rows,
                                                int64_t kernel_w, const __mmask16* low_lanes,
                                                const __mmask16* high_lanes, float* maxima,
                                                int64_t maxima_stride) {
  const __m512i even =
      _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512 lowest = _mm512_set1_ps(-FLT_MAX);
  const int64_t taps = kTaps > 0 ? kTaps : kernel_w;
  if (kStride == 2 && kTaps == 3) {
    // Stride 2, three taps (the usual 3x3/2): the 32 columns from `first`
    // loaded once and the taps built from them (StrideTwoTapsAvx512): the
    // same vectors as the loop below builds from six loads, three of which
    // crossed a cache line. Column first + 32 is lane 14 of the load tap 2
    // would make at first + 18, so its mask is that lane of high_lanes[2].
    const __mmask16 top = kMasked ? static_cast<__mmask16>((high_lanes[2] >> 14) & 1) : 1;
    for (int64_t r = 0; r < rows; ++r, row += in_w, maxima += maxima_stride) {
      const __m512 low = kMasked ? _mm512_mask_loadu_ps(lowest, low_lanes[0],
                                                        OffsetAddress(row, first))
                                 : _mm512_loadu_ps(row + first);
      const __m512 high = kMasked ? _mm512_mask_loadu_ps(lowest, high_lanes[0],
                                                         OffsetAddress(row, first + 16))
                                  : _mm512_loadu_ps(row + first + 16);
      const __m512 next = kMasked
                              ? _mm512_mask_loadu_ps(lowest, top, OffsetAddress(row, first + 32))
                              : _mm512_set1_ps(row[first + 32]);
      __m512 taps[3];
      StrideTwoTapsAvx512(low, high, next, taps);
      __m512 acc = _mm512_maskz_max_ps(0xffff, taps[0], lowest);
      acc = _mm512_maskz_max_ps(0xffff, taps[1], acc);
      acc = _mm512_maskz_max_ps(0xffff, taps[2], acc);
      _mm512_storeu_ps(maxima, acc);
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r, row += in_w, maxima += maxima_stride) {
    __m512 acc = lowest;
    MXLITE_UNROLL for (int64_t kw = 0; kw < taps; ++kw) {
      // Masked windows may start before the row or end past the plane.
      const __m512 low =
          kMasked ? _mm512_mask_loadu_ps(lowest, low_lanes[kw], OffsetAddress(row, first + kw))
                  : _mm512_loadu_ps(row + first + kw);
      __m512 v = low;
      if (kStride == 2) {
        const __m512 high =
            kMasked ? _mm512_mask_loadu_ps(lowest, high_lanes[kw],
                                           OffsetAddress(row, first + kw + 16))
                    : _mm512_loadu_ps(row + first + kw + 16);
        v = _mm512_permutex2var_ps(low, even, high);
      }
      // max(v, acc) keeps acc when v is NaN or equal; the masked form
      // because GCC 12 warns inside the plain one.
      acc = _mm512_maskz_max_ps(0xffff, v, acc);
    }
    _mm512_storeu_ps(maxima, acc);
  }
}

// RowMaximaBlock with the tap count fixed where it is 2 or 3.
template <int kStride, bool kMasked>
MXLITE_TARGET_AVX512_INLINE void RowMaxima(const float* row, int64_t first, int64_t in_w,
                                           int64_t rows, int64_t kernel_w,
                                           const __mmask16* low_lanes,
                                           const __mmask16* high_lanes, float* maxima,
                                           int64_t maxima_stride) {
  if (kernel_w == 3) {
    RowMaximaBlock<kStride, kMasked, 3>(row, first, in_w, rows, kernel_w, low_lanes, high_lanes,
                                        maxima, maxima_stride);
  } else if (kernel_w == 2) {
    RowMaximaBlock<kStride, kMasked, 2>(row, first, in_w, rows, kernel_w, low_lanes, high_lanes,
                                        maxima, maxima_stride);
  } else {
    RowMaximaBlock<kStride, kMasked, 0>(row, first, in_w, rows, kernel_w, low_lanes, high_lanes,
                                        maxima, maxima_stride);
  }
}

// Prefetches lines [first, first + count) of the `floats` floats at
// `region` (those that exist) to L1. Pooling reads each input once and
// writes each output once; with cold caches the hardware prefetcher alone
// left the blocked path 2-4x slower than warm. So each block of planes
// fetches the next block's input and output, a few lines per step of its
// own work. (The max row path reads each plane in memory order and does
// without: MaxPoolPlaneRows.)
MXLITE_TARGET_AVX512_INLINE void PrefetchLines(const float* region, int64_t floats, int64_t first,
                                               int64_t count) {
  const int64_t end = std::min((floats + 15) / 16, first + count);
  for (int64_t line = first; line < end; ++line) {
    _mm_prefetch(reinterpret_cast<const char*>(region + line * 16), _MM_HINT_T0);
  }
}

// Per column block of sixteen outputs, how MaxPoolPlaneRows loads its
// taps: rows [0, unmasked_rows) with plain loads (UnmaskedBlockRows), the
// rest with the masks of each tap's two vectors.
struct MaxBlockMasks {
  int64_t unmasked_rows;
  __mmask16 low_lanes[kMaxPoolSeparableTaps], high_lanes[kMaxPoolSeparableTaps];
};

// Fills blocks[(out_w + 15) / 16] for p (stride_w 1 or 2); once per Prepare.
MXLITE_TARGET_AVX512 void PlanMaxBlockMasks(const Plane2d& p, MaxBlockMasks* blocks) {
  for (int64_t ow = 0; ow < p.out_w; ow += 16) {
    MaxBlockMasks& block = blocks[ow / 16];
    const int64_t first_column = ow * p.stride_w - p.pad_w;
    block.unmasked_rows = UnmaskedBlockRows(p, ow, 16);
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      block.low_lanes[kw] = LanesInsideAvx512(first_column + kw, p.in_w);
      block.high_lanes[kw] = LanesInsideAvx512(first_column + kw + 16, p.in_w);
    }
  }
}

// The row maxima of input row r for every column block.
template <int kStride>
MXLITE_TARGET_AVX512_INLINE void RowMaximaOfRow(const Plane2d& p, const float* src, int64_t r,
                                                const MaxBlockMasks* blocks, float* maxima) {
  const float* row = src + r * p.in_w;
  for (int64_t ow = 0; ow < p.out_w; ow += 16) {
    const MaxBlockMasks& block = blocks[ow / 16];
    const int64_t first_column = ow * kStride - p.pad_w;
    if (r < block.unmasked_rows) {
      RowMaxima<kStride, false>(row, first_column, p.in_w, 1, p.kernel_w, block.low_lanes,
                                block.high_lanes, maxima + ow, 0);
    } else {
      RowMaxima<kStride, true>(row, first_column, p.in_w, 1, p.kernel_w, block.low_lanes,
                               block.high_lanes, maxima + ow, 0);
    }
  }
}

// Max pooling of one plane, output row by output row: each input row's
// maxima are made when the first window that needs them comes, into a
// ring of kernel_h rows that stays in L1, so the plane is read once, in
// memory order. (Making the whole plane's row maxima first, column block
// by column block, walked the plane's rows once per block and sent the
// row maxima through L2 on the stems' 111- and 112-wide planes; see
// BENCHMARKS.md.) Planes whose row maxima take at most kWholePlaneRowMaxima
// floats make them all first, block by block, where the ring's per-row
// setup would cost more than the rows. No software prefetch: read in
// memory order, the planes stream well without it, and where the input
// already sits in L2 (the fused stems' bands) prefetching the next plane
// only cost time.
template <int kStride>
MXLITE_TARGET_AVX512 void MaxPoolPlaneRows(const Plane2d& p, const MaxBlockMasks* blocks,
                                           const float* src, float* dst) {
  const int64_t row_maxima_w = (p.out_w + 15) / 16 * 16;
  const bool whole_plane = p.in_h * row_maxima_w <= kWholePlaneRowMaxima;
  int64_t ring_mask = 0;
  float* const ring = RowMaximaRing(whole_plane ? p.in_h : p.kernel_h, row_maxima_w, &ring_mask);
  int64_t next_row = 0;  // the first input row whose maxima are not in the ring
  if (whole_plane) {
    for (int64_t ow = 0; ow < p.out_w; ow += 16) {
      const MaxBlockMasks& block = blocks[ow / 16];
      const int64_t first_column = ow * kStride - p.pad_w, plain = block.unmasked_rows;
      RowMaxima<kStride, false>(src, first_column, p.in_w, plain, p.kernel_w, block.low_lanes,
                                block.high_lanes, ring + ow, row_maxima_w);
      RowMaxima<kStride, true>(src + plain * p.in_w, first_column, p.in_w, p.in_h - plain,
                               p.kernel_w, block.low_lanes, block.high_lanes,
                               ring + plain * row_maxima_w + ow, row_maxima_w);
    }
    next_row = p.in_h;
  }
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const int64_t start = oh * p.stride_h - p.pad_h;
    const int64_t first = std::max<int64_t>(start, 0);
    const int64_t last = std::min(start + p.kernel_h, p.in_h);
    for (int64_t r = std::max(next_row, first); r < last; ++r) {
      RowMaximaOfRow<kStride>(p, src, r, blocks, ring + (r & ring_mask) * row_maxima_w);
    }
    next_row = std::max(next_row, last);
    float* out_row = dst + oh * p.out_w;
    const __m512 lowest = _mm512_set1_ps(-FLT_MAX);
    if (last - first == 3) {  // the usual 3x3 window, unclipped
      const float* row0 = ring + (first & ring_mask) * row_maxima_w;
      const float* row1 = ring + ((first + 1) & ring_mask) * row_maxima_w;
      const float* row2 = ring + ((first + 2) & ring_mask) * row_maxima_w;
      for (int64_t ow = 0; ow < p.out_w; ow += 16) {
        // max(v, acc) keeps acc when v is NaN or equal; the masked form
        // because GCC 12 warns inside the plain one.
        __m512 acc = _mm512_maskz_max_ps(0xffff, _mm512_loadu_ps(row0 + ow), lowest);
        acc = _mm512_maskz_max_ps(0xffff, _mm512_loadu_ps(row1 + ow), acc);
        acc = _mm512_maskz_max_ps(0xffff, _mm512_loadu_ps(row2 + ow), acc);
        _mm512_mask_storeu_ps(out_row + ow, LanesBelowAvx512(p.out_w - ow), acc);
      }
      continue;
    }
    for (int64_t ow = 0; ow < p.out_w; ow += 16) {
      __m512 acc = lowest;
      for (int64_t r = first; r < last; ++r) {
        const float* maxima = ring + (r & ring_mask) * row_maxima_w + ow;
        acc = _mm512_maskz_max_ps(0xffff, _mm512_loadu_ps(maxima), acc);
      }
      _mm512_mask_storeu_ps(out_row + ow, LanesBelowAvx512(p.out_w - ow), acc);
    }
  }
}

// Max or average over whole planes (global pooling), sixteen planes per
// vector: each plane's next sixteen elements are loaded as a row, a 16x16
// transpose turns them into sixteen vectors of one element of every plane,
// and those are folded in order. Lane i thus runs the scalar code's loop
// over plane i (running maximum from -FLT_MAX; sum of x / divisor from 0)
// and the results are bit-identical to it. `count` <= 16 consecutive planes
// of `size` floats each.
MXLITE_TARGET_AVX512 void PoolWholePlanesAvx512(bool max, float divisor, const float* src,
                                                int64_t count, int64_t size, float* dst) {
  const __m512 divisors = _mm512_set1_ps(divisor);
  __m512 acc = max ? _mm512_set1_ps(-FLT_MAX) : _mm512_setzero_ps();
  for (int64_t e = 0; e < size; e += 16) {
    const int64_t elements = std::min<int64_t>(16, size - e);
    const __mmask16 mask = LanesBelowAvx512(elements);
    __m512 rows[16];
    for (int64_t i = 0; i < 16; ++i) {
      rows[i] = i < count ? _mm512_maskz_loadu_ps(mask, src + i * size + e) : _mm512_setzero_ps();
    }
    Transpose16x16Avx512(rows);
    for (int64_t j = 0; j < elements; ++j) {
      if (max) {
        acc = _mm512_maskz_max_ps(0xffff, rows[j], acc);  // keeps acc when rows[j] is NaN
      } else {
        acc = _mm512_add_ps(acc, _mm512_maskz_div_ps(0xffff, rows[j], divisors));
      }
    }
  }
  _mm512_mask_storeu_ps(dst, LanesBelowAvx512(count), acc);
}

// 2-D pooling of up to sixteen planes at once, pixel-major: the planes are
// transposed (16x16 in registers) into a scratch holding one vector of
// sixteen planes per pixel, inside a border of the padding's value (-FLT_MAX
// for max, 0 for average). Every tap of every window is then one aligned,
// unmasked vector load, and every lane is busy whatever the plane's width:
// the row-vector path leaves most lanes idle on 17- and 8-wide planes and
// copies each plane into a padded buffer, which made Inception's 3x3
// stride-1 average pools its slowest layers per element. Outputs are
// transposed back sixteen pixels at a time. The next block is prefetched
// (see PrefetchLines).
// Lane i runs the scalar code's loop over plane i: terms in row-major
// window order, each divided by the window's divisor (once, while
// transposing in, when the divisor is uniform); the padding's terms are
// exact no-ops (x + 0/d is x, and a sum started at +0 is never -0; -FLT_MAX
// never beats the running maximum that starts there). So the result is the
// scalar code's to the bit.
template <bool kMax>
MXLITE_TARGET_AVX512 void PoolSixteenPlanes(const Plane2d& p, const PaddedGrid& grid,
                                            const float* src, int64_t count, float* window,
                                            float* dst, const float* next_src,
                                            const float* next_dst, int64_t next_count) {
  const int64_t in_pixels = p.in_h * p.in_w, out_pixels = p.out_h * p.out_w;
  const bool predivide = !kMax && p.uniform_divisor > 0.f;
  const __m512 uniform_divisor = _mm512_set1_ps(predivide ? p.uniform_divisor : 1.f);
  // Transpose in: pixels e ... e + 15 of every plane become sixteen vectors.
  for (int64_t e = 0; e < in_pixels; e += 16) {
    const int64_t pixels = std::min<int64_t>(16, in_pixels - e);
    const __mmask16 mask = LanesBelowAvx512(pixels);
    __m512 rows[16];
    for (int64_t i = 0; i < 16; ++i) {
      rows[i] = i < count ? _mm512_maskz_loadu_ps(mask, src + i * in_pixels + e)
                          : _mm512_setzero_ps();
    }
    PrefetchLines(next_src, next_count * in_pixels, e, 16);
    Transpose16x16Avx512(rows);
    int64_t h = e / p.in_w, w = e % p.in_w;
    for (int64_t j = 0; j < pixels; ++j) {
      __m512 v = rows[j];
      if (predivide) v = _mm512_maskz_div_ps(0xffff, v, uniform_divisor);
      _mm512_store_ps(window + ((h + p.pad_h) * grid.cols + w + p.pad_w) * kPoolBlockLanes, v);
      if (++w == p.in_w) {
        w = 0;
        ++h;
      }
    }
  }
  // Windows, sixteen output pixels at a time, then transposed out. The taps
  // are the outer loop, so the sixteen sums are independent chains (one
  // window at a time ran at the latency of its chain of adds).
  const __m512 start = kMax ? _mm512_set1_ps(-FLT_MAX) : _mm512_setzero_ps();
  int64_t oh = 0, ow = 0;
  for (int64_t e = 0; e < out_pixels; e += 16) {
    const int64_t pixels = std::min<int64_t>(16, out_pixels - e);
    int64_t corner[16];
    float divisors[16];
    WindowCorners(p, grid, kPoolBlockLanes, pixels, !kMax && !predivide, &oh, &ow, corner,
                  divisors);
    __m512 outputs[16];
    MXLITE_UNROLL for (int j = 0; j < 16; ++j) outputs[j] = start;
    for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
        const float* tap = window + (kh * grid.cols + kw) * kPoolBlockLanes;
        MXLITE_UNROLL for (int j = 0; j < 16; ++j) {
          const __m512 v = _mm512_load_ps(tap + corner[j]);
          // max(v, acc) keeps acc when v is NaN or equal; masked forms
          // because GCC 12 warns inside the plain ones.
          if (kMax) {
            outputs[j] = _mm512_maskz_max_ps(0xffff, v, outputs[j]);
          } else if (predivide) {
            outputs[j] = _mm512_add_ps(outputs[j], v);
          } else {
            outputs[j] = _mm512_add_ps(
                outputs[j], _mm512_maskz_div_ps(0xffff, v, _mm512_set1_ps(divisors[j])));
          }
        }
      }
    }
    PrefetchLines(next_dst, next_count * out_pixels, e, 16);
    Transpose16x16Avx512(outputs);
    const __mmask16 mask = LanesBelowAvx512(pixels);
    for (int64_t i = 0; i < count; ++i) {
      _mm512_mask_storeu_ps(dst + i * out_pixels + e, mask, outputs[i]);
    }
  }
}

// Pools planes [0, count) (count <= 16) of src into dst through a per-thread
// scratch whose border is filled once per thread and geometry; the next
// next_count planes (0 if none) follow them in src and dst.
MXLITE_TARGET_AVX512 void PoolPlaneBlockAvx512(const Plane2d& p, const float* src,
                                               int64_t count, float* dst, int64_t next_count) {
  const PaddedGrid grid = PaddedGridOf(p);
  float* const window = BlockScratch(p, grid, kPoolBlockLanes);
  // The next block starts right after this one (next_count == 0: nothing
  // is prefetched, and the addresses are never formed).
  const float* next_src = next_count > 0 ? src + count * p.in_h * p.in_w : src;
  const float* next_dst = next_count > 0 ? dst + count * p.out_h * p.out_w : dst;
  if (p.max) {
    PoolSixteenPlanes<true>(p, grid, src, count, window, dst, next_src, next_dst, next_count);
  } else {
    PoolSixteenPlanes<false>(p, grid, src, count, window, dst, next_src, next_dst, next_count);
  }
}

MXLITE_TARGET_AVX512 void PoolPlane2dAvx512(const Plane2d& p, const MaxBlockMasks* max_blocks,
                                            const float* src, float* dst) {
  if (p.max) {
    if (p.stride_w == 1) {
      MaxPoolPlaneRows<1>(p, max_blocks, src, dst);
    } else {
      MaxPoolPlaneRows<2>(p, max_blocks, src, dst);
    }
    return;
  }
  const PaddedGrid grid = PaddedGridOf(p);
  const int64_t scratch_h = grid.rows;
  // 32 columns of slack: the stride-2 path reads two vectors per tap.
  const int64_t scratch_w = grid.cols + 32;
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<size_t>(scratch_h * scratch_w));
  CopyPadded(src, p.in_h, p.in_w, p.pad_h, p.pad_w, 0.f, scratch_h, scratch_w, scratch.data());
  if (p.uniform_divisor > 0.f) {
    // Every term is divided by the same value, so each element is divided
    // once here instead of once per window it falls in (nine times for a
    // 3x3 stride-1 window): the same quotients, summed in the same order,
    // so the same bits, at a ninth of the divisions.
    const __m512 divisor = _mm512_set1_ps(p.uniform_divisor);
    float* values = scratch.data();
    const int64_t total = scratch_h * scratch_w;
    int64_t i = 0;
    for (; i + 16 <= total; i += 16) {
      const __m512 quotient = _mm512_maskz_div_ps(0xffff, _mm512_loadu_ps(values + i), divisor);
      _mm512_storeu_ps(values + i, quotient);
    }
    for (; i < total; ++i) values[i] /= p.uniform_divisor;
    PoolPadded<PlaneOp::kAveragePredivided>(p, scratch.data(), scratch_w, dst);
  } else {
    PoolPadded<PlaneOp::kAverage>(p, scratch.data(), scratch_w, dst);
  }
}

class WholePlanesKernel : public PoolKernel {
 public:
  explicit WholePlanesKernel(const PoolGeometry& g) : g_(g) {}

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane();
    // The divisor as the scalar code's pool_size: the whole plane.
    const float divisor = static_cast<float>(in_plane);
    const bool max = g_.type == PoolType::kMax;
    ParallelFor(pool, (g_.planes + 15) / 16, [&](int64_t group) {
      const int64_t first = group * 16;
      const int64_t count = std::min<int64_t>(16, g_.planes - first);
      PoolWholePlanesAvx512(max, divisor, x + first * in_plane, count, in_plane, y + first);
    });
  }

 private:
  const PoolGeometry g_;
};

class BlockedPlanesKernel : public PlaneKernel {
 public:
  using PlaneKernel::PlaneKernel;

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane(), out_plane = g_.OutPlane();
    const int64_t lanes = kPoolBlockLanes;
    ParallelFor(pool, (g_.planes + lanes - 1) / lanes, [&](int64_t block) {
      const int64_t first = block * lanes;
      const int64_t count = std::min(lanes, g_.planes - first);
      const int64_t next_count = std::min(lanes, g_.planes - first - count);
      PoolPlaneBlockAvx512(plane_, x + first * in_plane, count, y + first * out_plane,
                           next_count);
    });
  }
};

class RowsKernel : public PlaneKernel {
 public:
  explicit RowsKernel(const PoolGeometry& g) : PlaneKernel(g) {
    if (plane_.max) {
      max_block_masks_.resize(static_cast<size_t>((plane_.out_w + 15) / 16));
      PlanMaxBlockMasks(plane_, max_block_masks_.data());
    }
  }

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane(), out_plane = g_.OutPlane();
    ParallelFor(pool, g_.planes, [&](int64_t plane) {
      PoolPlane2dAvx512(plane_, max_block_masks_.data(), x + plane * in_plane,
                        y + plane * out_plane);
    });
  }

 private:
  std::vector<MaxBlockMasks> max_block_masks_;  // max pooling's plan, per column block
};

Status PrepareWholePlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new WholePlanesKernel(g));
  return Status();
}

Status PrepareBlockedPlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new BlockedPlanesKernel(g));
  return Status();
}

Status PrepareRows(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new RowsKernel(g));
  return Status();
}

}  // namespace pool_avx512
}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
