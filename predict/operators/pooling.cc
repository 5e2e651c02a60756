/*
 * Pooling: max, avg, sum and lp (p = 1, 2, 3) over 1-D, 2-D and 3-D windows
 * in channel-first layouts (NCW, NCHW, NCDHW), or over the whole spatial
 * extent with global_pool.
 *
 * As in convolution.cc, every case runs in a three-spatial-dims form where
 * 1-D and 2-D pooling get unit dims in front. The arithmetic reproduces
 * MXNet's CPU kernels (src/operator/nn/pool.h) exactly:
 *   - a window starts at o*stride - pad and spans kernel taps;
 *   - max: the window clipped to the input (padding never wins), the running
 *     maximum starting from -FLT_MAX;
 *   - avg: the divisor is the window clipped to [-pad, in + pad) when
 *     count_include_pad (the default), else the window clipped to the input;
 *     each element is divided by it before it is added, as MXNet does;
 *   - sum: the plain sum over the clipped window; lp: (sum x^p)^(1/p), with
 *     x^1 = x (no absolute value), sqrt for p = 2 and cbrt for p = 3.
 * Output extents (MXNet's PoolingShape): valid 1 + floor((in + 2p - k) / s),
 * full 1 + ceil((in + 2p - k) / s), whose last window may hang past the
 * padding and is clipped; same (1-D only, pad 0) ceil(in / s); global 1.
 * The window must fit the padded input (k <= in + 2p).
 */
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "../kernels/cpu_features.h"
#include "../kernels/padding.h"
#include "../kernels/thread_pool.h"
#include "../kernels/x86_simd.h"
#include "operator.h"


namespace mxlite {
namespace pooling_op {

enum PoolType { kMax, kAvg, kSum, kLp };
enum Convention { kValid, kFull, kSame };

std::string TupleString(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + ")";
}

// All sizes in the three-spatial-dims form.
struct Geometry {
  int64_t planes = 0;  // batch * channels
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
};

// One window's clipped bounds along one axis.
struct Span {
  int64_t begin, end;      // clipped to the input
  int64_t padded_extent;   // end clipped to in + pad, minus the unclipped start
};

inline Span WindowSpan(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  const int64_t start = o * stride - pad;
  const int64_t padded_end = std::min(start + kernel, in + pad);
  Span span;
  span.padded_extent = padded_end - start;
  span.begin = std::max<int64_t>(start, 0);
  span.end = std::min(padded_end, in);
  return span;
}

// Extent along one axis of the input with its padding, grown so that every
// output's whole window lies inside ('full' windows may hang past the pad).
inline int64_t PaddedExtent(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                            int64_t pad) {
  return std::max((out - 1) * stride + kernel, pad + in);
}

#if defined(MXLITE_X86_64)
// 2-D max or average pooling of one plane with AVX-512, sixteen outputs of a
// row per vector, for stride 1 or 2; results bit-identical to the scalar
// code. Max: MaxPoolPlaneSeparable. Average: the plane is first copied into
// a scratch whose padding holds zeros (the terms are divided one by one as
// in the scalar code, so 0 / d adds nothing); every window is then whole
// and its taps run in the scalar code's order.
struct Plane2d {
  int64_t in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  bool max;
  const float* row_extent;  // average: per output row and column, the window
  const float* col_extent;  // extents whose product is the divisor
  // Average whose divisor is the same for every window (count_include_pad
  // with windows inside the padded input, as in Inception's 3x3 stride-1
  // pools), else 0.
  float uniform_divisor;
};

enum class PlaneOp { kAverage, kAveragePredivided };

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
constexpr int64_t kMaxPoolSeparableTaps = 16;  // widest kernel_w it takes

// One column block of the first pass: for every row, the maxima of sixteen
// windows whose first taps are row[first], row[first + kStride], ... (lanes
// off their masks read as -FLT_MAX; with kMasked false every lane is
// inside). kTaps > 0 fixes kernel_w at compile time, so that the taps
// unroll (2 and 3, the usual widths). With ColumnMaximum below, one
// thread, warm: 3x3/2 on 128x55x55 66 -> 56 us, on 64x112x112 128 -> 118.
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
    // crossed a cache line. One thread, warm: 128x55x55 56 -> 46 us,
    // 64x111x111 119 -> 105. Column first + 32 is lane 14 of the load tap 2
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

// The second pass for sixteen outputs: the maximum of `rows` row maxima
// (kRows > 0 fixes the count, so that the loop unrolls: a 3-step loop per
// vector was a tenth of a 3x3/2 pool's time).
template <int kRows>
MXLITE_TARGET_AVX512_INLINE __m512 ColumnMaximum(const float* maxima, int64_t stride,
                                                 int64_t rows) {
  __m512 acc = _mm512_set1_ps(-FLT_MAX);
  const int64_t count = kRows > 0 ? kRows : rows;
  MXLITE_UNROLL for (int64_t r = 0; r < count; ++r) {
    acc = _mm512_maskz_max_ps(0xffff, _mm512_loadu_ps(maxima + r * stride), acc);
  }
  return acc;
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
// `region` (those that exist) to the cache level kHint names. Pooling reads
// each input once and writes each output once; with cold caches the
// hardware prefetcher alone left both paths 2-4x slower than warm. So each
// plane, or block of planes, fetches the next one's input and output, a few
// lines per step of its own work.
// (The hint's type: an enum in GCC's headers, int in clang's.)
template <decltype(_MM_HINT_T0) kHint>
MXLITE_TARGET_AVX512_INLINE void PrefetchLines(const float* region, int64_t floats, int64_t first,
                                               int64_t count) {
  const int64_t end = std::min((floats + 15) / 16, first + count);
  for (int64_t line = first; line < end; ++line) {
    _mm_prefetch(reinterpret_cast<const char*>(region + line * 16), kHint);
  }
}

MXLITE_TARGET_AVX512 void MaxPoolPlaneSeparable(const Plane2d& p, const float* src, float* dst,
                                                bool next_plane) {
  const int64_t row_maxima_w = (p.out_w + 15) / 16 * 16;
  thread_local std::vector<float> row_maxima_buffer;
  row_maxima_buffer.resize(static_cast<size_t>(p.in_h * row_maxima_w));
  float* const row_maxima = row_maxima_buffer.data();
  const int64_t in_w = p.in_w, stride_w = p.stride_w;
  for (int64_t ow = 0; ow < p.out_w; ow += 16) {
    // Column blocks outside, rows inside: the masks depend on the column
    // only.
    const int64_t first_column = ow * stride_w - p.pad_w;
    __mmask16 low_lanes[kMaxPoolSeparableTaps], high_lanes[kMaxPoolSeparableTaps];
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      low_lanes[kw] = LanesInsideAvx512(first_column + kw, in_w);
      high_lanes[kw] = LanesInsideAvx512(first_column + kw + 16, in_w);
    }
    // Blocks whose taps all lie inside the row (most of them) load without
    // masks.
    bool inside = true;
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      inside = inside && low_lanes[kw] == 0xffff && (stride_w == 1 || high_lanes[kw] == 0xffff);
    }
    float* maxima = row_maxima + ow;
    const int64_t rows = p.in_h, taps = p.kernel_w;
    if (stride_w == 1 && inside) {
      RowMaxima<1, false>(src, first_column, in_w, rows, taps, low_lanes, high_lanes, maxima,
                          row_maxima_w);
    } else if (stride_w == 1) {
      RowMaxima<1, true>(src, first_column, in_w, rows, taps, low_lanes, high_lanes, maxima,
                         row_maxima_w);
    } else if (inside) {
      RowMaxima<2, false>(src, first_column, in_w, rows, taps, low_lanes, high_lanes, maxima,
                          row_maxima_w);
    } else {
      RowMaxima<2, true>(src, first_column, in_w, rows, taps, low_lanes, high_lanes, maxima,
                         row_maxima_w);
    }
  }
  // The next plane (it follows this one in src and dst) is prefetched to
  // L2 (it does not fit in L1 beside this one) over the output rows.
  // Caches flushed, one thread: 3x3/2 on 192x71x71 650 -> 328 us, on
  // 64x112x112 485 -> 341; warm within noise.
  const int64_t in_pixels = p.in_h * p.in_w, out_pixels = p.out_h * p.out_w;
  const int64_t in_lines_per_row = next_plane ? (in_pixels / 16 + p.out_h) / p.out_h : 0;
  const int64_t out_lines_per_row = next_plane ? (out_pixels / 16 + p.out_h) / p.out_h : 0;
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const int64_t start = oh * p.stride_h - p.pad_h;
    const int64_t first = std::max<int64_t>(start, 0);
    const int64_t last = std::min(start + p.kernel_h, p.in_h);
    float* out_row = dst + oh * p.out_w;
    if (next_plane) {
      PrefetchLines<_MM_HINT_T1>(src + in_pixels, in_pixels, oh * in_lines_per_row,
                                 in_lines_per_row);
      PrefetchLines<_MM_HINT_T1>(dst + out_pixels, out_pixels, oh * out_lines_per_row,
                                 out_lines_per_row);
    }
    const float* window_maxima = row_maxima + first * row_maxima_w;
    const bool three_rows = last - first == 3;  // the usual 3x3 window, unclipped
    for (int64_t ow = 0; ow < p.out_w; ow += 16) {
      const int64_t count = std::min<int64_t>(16, p.out_w - ow);
      const __mmask16 mask = LanesBelowAvx512(count);
      const __m512 acc =
          three_rows ? ColumnMaximum<3>(window_maxima + ow, row_maxima_w, 3)
                     : ColumnMaximum<0>(window_maxima + ow, row_maxima_w, last - first);
      _mm512_mask_storeu_ps(out_row + ow, mask, acc);
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
// (see PrefetchLines): 768x17x17 average pooling, caches flushed, 375 ->
// 100 us.
// Lane i runs the scalar code's loop over plane i: terms in row-major
// window order, each divided by the window's divisor (once, while
// transposing in, when the divisor is uniform); the padding's terms are
// exact no-ops (x + 0/d is x, and a sum started at +0 is never -0; -FLT_MAX
// never beats the running maximum that starts there). So the result is the
// scalar code's to the bit.
constexpr int64_t kPoolBlockLanes = 16;

// Planes of at most this many padded pixels take the blocked path: the
// scratch (64 bytes a pixel) then stays within L2.
constexpr int64_t kPoolBlockMaxPixels = 4096;

struct PaddedGrid {
  int64_t rows, cols;  // padded extent: every window of every output inside
};

inline PaddedGrid PaddedGridOf(const Plane2d& p) {
  return {PaddedExtent(p.in_h, p.out_h, p.kernel_h, p.stride_h, p.pad_h),
          PaddedExtent(p.in_w, p.out_w, p.kernel_w, p.stride_w, p.pad_w)};
}

// For the `lanes` output pixels from (*oh, *ow) on (the last `pixels` <=
// lanes of them real: lanes past the last pixel repeat it, in bounds and
// never stored), the offset of each window's corner in the scratch of
// `lanes` floats a pixel and, when `divisors_needed`, its divisor; then
// steps (*oh, *ow) past them. Shared by both ISAs' blocked kernels.
inline void WindowCorners(const Plane2d& p, const PaddedGrid& grid, int64_t lanes,
                          int64_t pixels, bool divisors_needed, int64_t* oh, int64_t* ow,
                          int64_t* corner, float* divisors) {
  for (int64_t j = 0; j < lanes; ++j) {
    corner[j] = (*oh * p.stride_h * grid.cols + *ow * p.stride_w) * lanes;
    if (divisors_needed) divisors[j] = p.row_extent[*oh] * p.col_extent[*ow];
    if (j + 1 < pixels && ++*ow == p.out_w) {
      *ow = 0;
      ++*oh;
    }
  }
  if (++*ow == p.out_w) {  // step past the chunk's last pixel
    *ow = 0;
    ++*oh;
  }
}

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
    PrefetchLines<_MM_HINT_T0>(next_src, next_count * in_pixels, e, 16);
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
    PrefetchLines<_MM_HINT_T0>(next_dst, next_count * out_pixels, e, 16);
    Transpose16x16Avx512(outputs);
    const __mmask16 mask = LanesBelowAvx512(pixels);
    for (int64_t i = 0; i < count; ++i) {
      _mm512_mask_storeu_ps(dst + i * out_pixels + e, mask, outputs[i]);
    }
  }
}

// The blocked kernels' per-thread scratch of `lanes` floats a pixel over the
// padded grid, aligned to `lanes` floats (so that no pixel's vector
// straddles two cache lines), its border filled with the padding's value
// once per thread and geometry: only the transposes write it, always inside
// the border.
inline float* BlockScratch(const Plane2d& p, const PaddedGrid& grid, int64_t lanes) {
  thread_local std::vector<float> scratch;
  const size_t floats = static_cast<size_t>(grid.rows * grid.cols * lanes);
  const size_t slack = static_cast<size_t>(lanes);  // room to align the start
  if (scratch.size() < floats + slack) scratch.resize(floats + slack);
  float* window = scratch.data();
  window += (lanes - reinterpret_cast<uintptr_t>(window) / sizeof(float) % lanes) % lanes;
  thread_local const float* filled_window = nullptr;
  thread_local int64_t filled_geometry[8] = {};
  const int64_t geometry[8] = {grid.rows, grid.cols, p.pad_h, p.pad_w,
                               p.in_h,    p.in_w,    p.max,   lanes};
  if (filled_window != window || !std::equal(geometry, geometry + 8, filled_geometry)) {
    std::fill(window, window + floats, p.max ? -FLT_MAX : 0.f);
    filled_window = window;
    std::copy(geometry, geometry + 8, filled_geometry);
  }
  return window;
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

MXLITE_TARGET_AVX512 void PoolPlane2dAvx512(const Plane2d& p, const float* src, float* dst,
                                            bool next_plane) {
  if (p.max) {
    MaxPoolPlaneSeparable(p, src, dst, next_plane);
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

// ---------------------------------------------------------------------------
// AVX2 + FMA versions of the kernels above, eight lanes, for machines
// without AVX-512: the same algorithms (separable max pooling, the padded
// average row path, the blocked planes, whole planes) with the same
// operations per output in the same order, so the same bits. Without mask
// registers a mask is a vector whose lanes are all ones or zeros
// (_mm256_maskload_ps / _mm256_maskstore_ps read and write nothing in the
// zero lanes); a max tap's masked-off lanes are blended to -FLT_MAX.

MXLITE_TARGET_AVX2_INLINE bool AllLanesAvx2(__m256i lanes) {
  return _mm256_movemask_ps(_mm256_castsi256_ps(lanes)) == 0xff;
}

// Masked loads and stores only at the edges: on Zen 3 a masked store costs
// several times a plain one (it was a quarter of the blocked average pool's
// time when every store was masked).
MXLITE_TARGET_AVX2_INLINE __m256 LoadFirstAvx2(const float* at, int64_t count) {
  return count >= 8 ? _mm256_loadu_ps(at) : _mm256_maskload_ps(at, LanesBelowAvx2(count));
}

MXLITE_TARGET_AVX2_INLINE void StoreFirstAvx2(float* at, int64_t count, __m256 v) {
  if (count >= 8) {
    _mm256_storeu_ps(at, v);
  } else {
    _mm256_maskstore_ps(at, LanesBelowAvx2(count), v);
  }
}

// The eight floats at `at` in `lanes`, `fill` in the others (not read).
MXLITE_TARGET_AVX2_INLINE __m256 LoadLanesOrAvx2(__m256 fill, __m256i lanes, const float* at) {
  return _mm256_blendv_ps(fill, _mm256_maskload_ps(at, lanes), _mm256_castsi256_ps(lanes));
}

// Stride 2 in eight lanes: the even (odd) columns of the sixteen in `low`,
// `high`, by one in-lane shuffle, which leaves them in the order 0 1 4 5
// 2 3 6 7 ("paired order"). The kernels keep values in that order up to
// the store, where SwapMiddlePairsAvx2 (its own inverse) restores it: one
// cross-lane permute per eight outputs instead of one per tap.
MXLITE_TARGET_AVX2_INLINE __m256 EvenColumnsAvx2(__m256 low, __m256 high) {
  return _mm256_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0));
}

MXLITE_TARGET_AVX2_INLINE __m256 OddColumnsAvx2(__m256 low, __m256 high) {
  return _mm256_shuffle_ps(low, high, _MM_SHUFFLE(3, 1, 3, 1));
}

MXLITE_TARGET_AVX2_INLINE __m256 SwapMiddlePairsAvx2(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}

// One tap's eight columns from row[at] on; kMasked: the lanes outside
// `lanes` read as -FLT_MAX (`lowest`).
template <bool kMasked>
MXLITE_TARGET_AVX2_INLINE __m256 MaxTapAvx2(const float* row, int64_t at, __m256i lanes,
                                            __m256 lowest) {
  return kMasked ? LoadLanesOrAvx2(lowest, lanes, OffsetAddress(row, at))
                 : _mm256_loadu_ps(row + at);
}

// acc's maximum with tap kw of a row's eight outputs (stride 2: in paired
// order).
template <int kStride, bool kMasked>
MXLITE_TARGET_AVX2_INLINE __m256 MaxOfTapAvx2(const float* row, int64_t first, int64_t kw,
                                              const __m256i* low_lanes, const __m256i* high_lanes,
                                              __m256 lowest, __m256 acc) {
  __m256 v = MaxTapAvx2<kMasked>(row, first + kw, low_lanes[kw], lowest);
  if (kStride == 2) {
    v = EvenColumnsAvx2(v, MaxTapAvx2<kMasked>(row, first + kw + 8, high_lanes[kw], lowest));
  }
  // max(v, acc) keeps acc when v is NaN or equal.
  return _mm256_max_ps(v, acc);
}

// RowMaximaBlock in eight lanes (stride 2: in paired order). The 3-wide
// stride-2 window takes its taps 0 and 1 from the same two loads (even
// and odd columns) and tap 2 from two loads two columns on.
template <int kStride, bool kMasked, int kTaps>
MXLITE_TARGET_AVX2_INLINE void RowMaximaBlockAvx2(const float* row, int64_t first, int64_t in_w,
                                                  int64_t rows, int64_t kernel_w,
                                                  const __m256i* low_lanes,
                                                  const __m256i* high_lanes, float* maxima,
                                                  int64_t maxima_stride) {
  const __m256 lowest = _mm256_set1_ps(-FLT_MAX);
  if (kStride == 2 && kTaps == 3) {
    for (int64_t r = 0; r < rows; ++r, row += in_w, maxima += maxima_stride) {
      const __m256 low = MaxTapAvx2<kMasked>(row, first, low_lanes[0], lowest);
      const __m256 high = MaxTapAvx2<kMasked>(row, first + 8, high_lanes[0], lowest);
      const __m256 low2 = MaxTapAvx2<kMasked>(row, first + 2, low_lanes[2], lowest);
      const __m256 high2 = MaxTapAvx2<kMasked>(row, first + 10, high_lanes[2], lowest);
      // max(v, acc) keeps acc when v is NaN or equal.
      __m256 acc = _mm256_max_ps(EvenColumnsAvx2(low, high), lowest);
      acc = _mm256_max_ps(OddColumnsAvx2(low, high), acc);
      acc = _mm256_max_ps(EvenColumnsAvx2(low2, high2), acc);
      _mm256_storeu_ps(maxima, acc);
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r, row += in_w, maxima += maxima_stride) {
    __m256 acc = lowest;
    // Unrolled only where the count is a constant: clang reports the
    // runtime-count loop as a failed unroll (-Wpass-failed).
    if constexpr (kTaps > 0) {
      MXLITE_UNROLL for (int64_t kw = 0; kw < kTaps; ++kw) {
        acc = MaxOfTapAvx2<kStride, kMasked>(row, first, kw, low_lanes, high_lanes, lowest, acc);
      }
    } else {
      for (int64_t kw = 0; kw < kernel_w; ++kw) {
        acc = MaxOfTapAvx2<kStride, kMasked>(row, first, kw, low_lanes, high_lanes, lowest, acc);
      }
    }
    _mm256_storeu_ps(maxima, acc);
  }
}

template <int kStride, bool kMasked>
MXLITE_TARGET_AVX2_INLINE void RowMaximaAvx2(const float* row, int64_t first, int64_t in_w,
                                             int64_t rows, int64_t kernel_w,
                                             const __m256i* low_lanes,
                                             const __m256i* high_lanes, float* maxima,
                                             int64_t maxima_stride) {
  if (kernel_w == 3) {
    RowMaximaBlockAvx2<kStride, kMasked, 3>(row, first, in_w, rows, kernel_w, low_lanes,
                                            high_lanes, maxima, maxima_stride);
  } else if (kernel_w == 2) {
    RowMaximaBlockAvx2<kStride, kMasked, 2>(row, first, in_w, rows, kernel_w, low_lanes,
                                            high_lanes, maxima, maxima_stride);
  } else {
    RowMaximaBlockAvx2<kStride, kMasked, 0>(row, first, in_w, rows, kernel_w, low_lanes,
                                            high_lanes, maxima, maxima_stride);
  }
}

// Per column block of eight outputs, how MaxPoolPlaneRowsAvx2 loads its
// taps: rows [0, unmasked_rows) with plain loads, the rest with the masks.
// A block whose windows use only columns inside the row loads plainly even
// where its loads run past the row's end (the lanes there feed only odd
// columns of stride 2 or outputs past out_w, never stored), as long as they
// stay inside the plane: on 17- and 35-wide planes every block reaches past
// the row, and masking them all made 3x3/2 on 768x17x17 twice as slow.
struct MaxBlockLoads {
  int64_t unmasked_rows;
  int32_t low_lanes[kMaxPoolSeparableTaps][8], high_lanes[kMaxPoolSeparableTaps][8];
};

// Fills blocks[(out_w + 7) / 8] for p (stride_w 1 or 2); once per Prepare.
MXLITE_TARGET_AVX2 void PlanMaxBlockLoadsAvx2(const Plane2d& p, MaxBlockLoads* blocks) {
  const int64_t kStride = p.stride_w;
  // A block's last load ends at column first + reach.
  const int64_t reach = (kStride == 2 ? 15 : 7) + p.kernel_w - 1;
  const int64_t in_pixels = p.in_h * p.in_w;
  for (int64_t ow = 0; ow < p.out_w; ow += 8) {
    MaxBlockLoads& block = blocks[ow / 8];
    const int64_t first_column = ow * kStride - p.pad_w;
    const int64_t last_used = (std::min<int64_t>(ow + 8, p.out_w) - 1) * kStride - p.pad_w +
                              p.kernel_w - 1;
    block.unmasked_rows = 0;
    if (first_column >= 0 && last_used < p.in_w) {
      // Rows r whose loads end inside the plane: r * in_w + first + reach < in_pixels.
      const int64_t room = in_pixels - 1 - first_column - reach;
      block.unmasked_rows = room < 0 ? 0 : std::min(p.in_h, room / p.in_w + 1);
    }
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.low_lanes[kw]),
                          LanesInsideAvx2(first_column + kw, p.in_w));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.high_lanes[kw]),
                          LanesInsideAvx2(first_column + kw + 8, p.in_w));
    }
  }
}

// The row maxima of input row r for every column block (stride 2: in
// paired order).
template <int kStride>
MXLITE_TARGET_AVX2_INLINE void RowMaximaOfRowAvx2(const Plane2d& p, const float* src, int64_t r,
                                                  const MaxBlockLoads* blocks, float* maxima) {
  const float* row = src + r * p.in_w;
  const int64_t in_w = p.in_w, taps = p.kernel_w;
  __m256i low_lanes[kMaxPoolSeparableTaps], high_lanes[kMaxPoolSeparableTaps];
  for (int64_t ow = 0; ow < p.out_w; ow += 8) {
    const MaxBlockLoads& block = blocks[ow / 8];
    const int64_t first_column = ow * kStride - p.pad_w;
    if (r < block.unmasked_rows) {
      RowMaximaAvx2<kStride, false>(row, first_column, in_w, 1, taps, low_lanes, high_lanes,
                                    maxima + ow, 0);
      continue;
    }
    for (int64_t kw = 0; kw < taps; ++kw) {
      low_lanes[kw] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.low_lanes[kw]));
      high_lanes[kw] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.high_lanes[kw]));
    }
    RowMaximaAvx2<kStride, true>(row, first_column, in_w, 1, taps, low_lanes, high_lanes,
                                 maxima + ow, 0);
  }
}

// MaxPoolPlaneSeparable in eight lanes, without its software prefetch (on
// Zen 3 the hardware prefetcher does better alone: one thread, input in L3,
// prefetch -> none: 3x3/2 on 64x112x112 279 -> 233 us, 192x71x71 378 ->
// 290, 768x17x17 191 -> 108), and output row by output row: each input
// row's maxima are made when the first window that needs them comes, into
// a ring of kernel_h rows that stays in L1, and the plane is read once in
// memory order. (Making the whole plane's row maxima first, column block by
// column block, walked the plane's rows once per block and sent 47 KB of
// row maxima through L2 on 147x147. One thread, 8 MB swept between runs,
// median of 20 interleaved, three runs: 3x3/2 on 64x147x147 955-1385 ->
// 575-720 us, 192x71x71 0.71-0.77x, 64x111x111 0.59-0.73x; 768x17x17 0.82x
// with the plain loads past the row's end, 1.4x without.)
// Planes whose row maxima take at most this many floats (8 KB, a quarter of
// L1) make them all first, as MaxPoolPlaneSeparable: the ring's per-row
// setup cost more than the rows there. One thread, 8 MB swept between
// runs, ring -> whole, median of 20: 3x3/2 on 768x17x17 0.78-0.83x, 288x35x35
// 0.92x, 128x55x55 0.89-0.91x; but 192x71x71 (11 KB) 1.21x.
constexpr int64_t kWholePlaneRowMaxima = 2048;

template <int kStride>
MXLITE_TARGET_AVX2 void MaxPoolPlaneRowsAvx2(const Plane2d& p, const MaxBlockLoads* blocks,
                                             const float* src, float* dst) {
  const int64_t row_maxima_w = (p.out_w + 7) / 8 * 8;
  const bool whole_plane = p.in_h * row_maxima_w <= kWholePlaneRowMaxima;
  // Row r's maxima at slot r & ring_mask (a power of two: a division per
  // row to find its slot cost more than the row on 17-wide planes); with
  // whole_plane, slot r.
  int64_t ring_rows = 1;
  while (ring_rows < (whole_plane ? p.in_h : p.kernel_h)) ring_rows *= 2;
  const int64_t ring_mask = ring_rows - 1;
  thread_local std::vector<float> ring_buffer;
  if (ring_buffer.size() < static_cast<size_t>(ring_rows * row_maxima_w)) {
    ring_buffer.resize(static_cast<size_t>(ring_rows * row_maxima_w));
  }
  float* const ring = ring_buffer.data();
  int64_t next_row = 0;  // the first input row whose maxima are not in the ring
  if (whole_plane) {
    // Column block by column block, each over all rows: the masks and the
    // loop set up once per block, not once per row and block.
    __m256i low_lanes[kMaxPoolSeparableTaps], high_lanes[kMaxPoolSeparableTaps];
    for (int64_t ow = 0; ow < p.out_w; ow += 8) {
      const MaxBlockLoads& block = blocks[ow / 8];
      const int64_t first_column = ow * kStride - p.pad_w, plain = block.unmasked_rows;
      RowMaximaAvx2<kStride, false>(src, first_column, p.in_w, plain, p.kernel_w, low_lanes,
                                    high_lanes, ring + ow, row_maxima_w);
      if (plain == p.in_h) continue;
      for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
        low_lanes[kw] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.low_lanes[kw]));
        high_lanes[kw] =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.high_lanes[kw]));
      }
      RowMaximaAvx2<kStride, true>(src + plain * p.in_w, first_column, p.in_w, p.in_h - plain,
                                   p.kernel_w, low_lanes, high_lanes,
                                   ring + plain * row_maxima_w + ow, row_maxima_w);
    }
    next_row = p.in_h;
  }
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const int64_t start = oh * p.stride_h - p.pad_h;
    const int64_t first = std::max<int64_t>(start, 0);
    const int64_t last = std::min(start + p.kernel_h, p.in_h);
    for (int64_t r = std::max(next_row, first); r < last; ++r) {
      RowMaximaOfRowAvx2<kStride>(p, src, r, blocks, ring + (r & ring_mask) * row_maxima_w);
    }
    next_row = std::max(next_row, last);
    float* out_row = dst + oh * p.out_w;
    if (last - first == 3) {  // the usual 3x3 window, unclipped
      const float* row0 = ring + (first & ring_mask) * row_maxima_w;
      const float* row1 = ring + ((first + 1) & ring_mask) * row_maxima_w;
      const float* row2 = ring + ((first + 2) & ring_mask) * row_maxima_w;
      for (int64_t ow = 0; ow < p.out_w; ow += 8) {
        // max(v, acc) keeps acc when v is NaN or equal.
        __m256 acc = _mm256_max_ps(_mm256_loadu_ps(row0 + ow), _mm256_set1_ps(-FLT_MAX));
        acc = _mm256_max_ps(_mm256_loadu_ps(row1 + ow), acc);
        acc = _mm256_max_ps(_mm256_loadu_ps(row2 + ow), acc);
        if (kStride == 2) acc = SwapMiddlePairsAvx2(acc);
        StoreFirstAvx2(out_row + ow, p.out_w - ow, acc);
      }
      continue;
    }
    for (int64_t ow = 0; ow < p.out_w; ow += 8) {
      __m256 acc = _mm256_set1_ps(-FLT_MAX);
      for (int64_t r = first; r < last; ++r) {
        acc = _mm256_max_ps(_mm256_loadu_ps(ring + (r & ring_mask) * row_maxima_w + ow), acc);
      }
      if (kStride == 2) acc = SwapMiddlePairsAvx2(acc);
      StoreFirstAvx2(out_row + ow, p.out_w - ow, acc);
    }
  }
}

// PoolPadded in eight lanes (stride 2: the sums in paired order, the
// divisors permuted to match).
template <PlaneOp kOp>
MXLITE_TARGET_AVX2 void PoolPaddedAvx2(const Plane2d& p, const float* scratch, int64_t scratch_w,
                                       float* dst) {
  const __m256 ones = _mm256_set1_ps(1.f);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const float* window = scratch + oh * p.stride_h * scratch_w;
    float* out_row = dst + oh * p.out_w;
    for (int64_t ow = 0; ow < p.out_w; ow += 8) {
      const __m256i mask = LanesBelowAvx2(p.out_w - ow);
      __m256 divisor = ones;
      if (kOp == PlaneOp::kAverage) {
        divisor = _mm256_mul_ps(_mm256_set1_ps(p.row_extent[oh]),
                                LoadLanesOrAvx2(ones, mask, p.col_extent + ow));
        if (p.stride_w == 2) divisor = SwapMiddlePairsAvx2(divisor);
      }
      __m256 acc = _mm256_setzero_ps();
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        const float* row = window + kh * scratch_w + ow * p.stride_w;
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          __m256 v = _mm256_loadu_ps(row + kw);
          if (p.stride_w != 1) v = EvenColumnsAvx2(v, _mm256_loadu_ps(row + kw + 8));
          if (kOp == PlaneOp::kAverage) v = _mm256_div_ps(v, divisor);
          acc = _mm256_add_ps(acc, v);
        }
      }
      if (p.stride_w != 1) acc = SwapMiddlePairsAvx2(acc);
      StoreFirstAvx2(out_row + ow, p.out_w - ow, acc);
    }
  }
}

// Average pooling with a uniform divisor d (count_include_pad windows inside
// the padded input: Inception's 3x3 stride-1 pools, DenseNet's 2x2 stride-2
// ones), plane by plane and row by row, stride 1 or 2 (stride 2: sums in
// paired order). Each input row is divided by d once into a padded row of
// a small ring (+0 in the padding), kernel_h + stride_h rows (rounded up to
// a power of two), filled one output row ahead so that the window loads,
// which straddle the fill's stores, never wait on them. Each output sums
// its taps in row-major window order from +0, as the scalar code: the
// padding's +0 terms are no-ops (a sum started at +0 is never -0) and rows
// outside the input are skipped, so the result is the scalar code's to the
// bit. Every lane of a row is busy on 8-, 16- and 32-wide rows, most on
// 17 and 35, and nothing is transposed or copied whole. One thread, 8 MB
// swept between runs, blocked (transposes) -> rows, median of 20 (noisy):
// 3x3/1 pad 1 on 288x35x35 0.77-0.86x, 192x35x35 0.75-0.89x, 768x17x17
// 0.81-0.89x; 2x2/2 on 128x56x56 0.66-0.71x, 256x28x28 0.63-0.86x.
// The sum of one window row block: eight outputs from the ring's column
// `column` on, rows [first, last) of the input.
template <int kStride, int kTaps>
MXLITE_TARGET_AVX2_INLINE __m256 WindowSumsAvx2(const float* ring, int64_t ring_mask,
                                                int64_t slot_w, int64_t first, int64_t last,
                                                int64_t column, int64_t taps) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t r = first; r < last; ++r) {
    const float* at = ring + (r & ring_mask) * slot_w + column;
    MXLITE_UNROLL for (int64_t kw = 0; kw < (kTaps > 0 ? kTaps : taps); ++kw) {
      __m256 v = _mm256_loadu_ps(at + kw);
      if (kStride == 2) v = EvenColumnsAvx2(v, _mm256_loadu_ps(at + kw + 8));
      acc = _mm256_add_ps(acc, v);
    }
  }
  return acc;
}

template <int kStride, int kTaps>
MXLITE_TARGET_AVX2 void AveragePoolPlaneRowsAvx2(const Plane2d& p, const float* src,
                                                 float* dst) {
  const int64_t in_w = p.in_w, pad_w = p.pad_w, out_w = p.out_w;
  const int64_t taps = p.kernel_w;
  const int64_t slot_w = PaddedGridOf(p).cols + 32;  // stride 2 reads 16 past a window
  // Two output rows at a time (below) and the next two's rows.
  int64_t ring_rows = 1;
  while (ring_rows < p.kernel_h + 3 * p.stride_h) ring_rows *= 2;
  const int64_t ring_mask = ring_rows - 1;
  // The ring's padding is never written after it is zeroed, so it is zeroed
  // once per thread and geometry.
  thread_local std::vector<float> ring_buffer;
  thread_local int64_t zeroed_geometry[3] = {};
  const int64_t geometry[3] = {slot_w, ring_rows, pad_w};
  const size_t floats = static_cast<size_t>(ring_rows * slot_w);
  if (ring_buffer.size() != floats || !std::equal(geometry, geometry + 3, zeroed_geometry)) {
    ring_buffer.assign(floats, 0.f);
    std::copy(geometry, geometry + 3, zeroed_geometry);
  }
  float* const ring = ring_buffer.data();
  const __m256 divisor = _mm256_set1_ps(p.uniform_divisor);
  int64_t next_row = 0;  // the first input row not yet in the ring
  const auto window_rows = [&](int64_t oh, int64_t* first, int64_t* last) {
    const int64_t start = oh * p.stride_h - p.pad_h;
    *first = std::max<int64_t>(start, 0);
    *last = std::min(start + p.kernel_h, p.in_h);
  };
  // Two output rows per pass: two independent chains of adds (one chain a
  // block ran at the adds' latency on 8-wide planes).
  for (int64_t oh = 0; oh < p.out_h; oh += 2) {
    const bool pair = oh + 1 < p.out_h;
    int64_t first0, last0, first1, last1;
    window_rows(oh, &first0, &last0);
    window_rows(pair ? oh + 1 : oh, &first1, &last1);
    // These rows' inputs and the next pair's.
    const int64_t fill_end = std::min(last1 + 2 * p.stride_h, p.in_h);
    for (; next_row < fill_end; ++next_row) {
      const float* row = src + next_row * in_w;
      float* slot = ring + (next_row & ring_mask) * slot_w + pad_w;
      // The last vector's lanes past the row load as 0 and store +0, the
      // padding's value.
      for (int64_t w = 0; w < in_w; w += 8) {
        _mm256_storeu_ps(slot + w, _mm256_div_ps(LoadFirstAvx2(row + w, in_w - w), divisor));
      }
    }
    float* out_row = dst + oh * out_w;
    for (int64_t ow = 0; ow < out_w; ow += 8) {
      __m256 sums0 = WindowSumsAvx2<kStride, kTaps>(ring, ring_mask, slot_w, first0, last0,
                                                    ow * kStride, taps);
      __m256 sums1 = WindowSumsAvx2<kStride, kTaps>(ring, ring_mask, slot_w, first1, last1,
                                                    ow * kStride, taps);
      if (kStride == 2) {
        sums0 = SwapMiddlePairsAvx2(sums0);
        sums1 = SwapMiddlePairsAvx2(sums1);
      }
      StoreFirstAvx2(out_row + ow, out_w - ow, sums0);
      if (pair) StoreFirstAvx2(out_row + out_w + ow, out_w - ow, sums1);
    }
  }
}

// AveragePoolPlaneRowsAvx2 for p's stride and kernel width.
MXLITE_TARGET_AVX2 void AveragePoolPlaneRowsAvx2(const Plane2d& p, const float* src, float* dst) {
  if (p.stride_w == 1) {
    if (p.kernel_w == 3) {
      AveragePoolPlaneRowsAvx2<1, 3>(p, src, dst);
    } else {
      AveragePoolPlaneRowsAvx2<1, 0>(p, src, dst);
    }
  } else if (p.kernel_w == 2) {
    AveragePoolPlaneRowsAvx2<2, 2>(p, src, dst);
  } else if (p.kernel_w == 3) {
    AveragePoolPlaneRowsAvx2<2, 3>(p, src, dst);
  } else {
    AveragePoolPlaneRowsAvx2<2, 0>(p, src, dst);
  }
}

// `max_blocks`: PlanMaxBlockLoadsAvx2's plan, for max pooling.
MXLITE_TARGET_AVX2 void PoolPlane2dAvx2(const Plane2d& p, const MaxBlockLoads* max_blocks,
                                        const float* src, float* dst) {
  if (p.max) {
    if (p.stride_w == 1) {
      MaxPoolPlaneRowsAvx2<1>(p, max_blocks, src, dst);
    } else {
      MaxPoolPlaneRowsAvx2<2>(p, max_blocks, src, dst);
    }
    return;
  }
  const PaddedGrid grid = PaddedGridOf(p);
  const int64_t scratch_h = grid.rows;
  // 32 columns of slack, as PoolPlane2dAvx512 (eight-lane reads need 16).
  const int64_t scratch_w = grid.cols + 32;
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<size_t>(scratch_h * scratch_w));
  CopyPadded(src, p.in_h, p.in_w, p.pad_h, p.pad_w, 0.f, scratch_h, scratch_w, scratch.data());
  if (p.uniform_divisor > 0.f) {
    // Divided once per element, as PoolPlane2dAvx512 does.
    const __m256 divisor = _mm256_set1_ps(p.uniform_divisor);
    float* values = scratch.data();
    const int64_t total = scratch_h * scratch_w;
    int64_t i = 0;
    for (; i + 8 <= total; i += 8) {
      _mm256_storeu_ps(values + i, _mm256_div_ps(_mm256_loadu_ps(values + i), divisor));
    }
    for (; i < total; ++i) values[i] /= p.uniform_divisor;
    PoolPaddedAvx2<PlaneOp::kAveragePredivided>(p, scratch.data(), scratch_w, dst);
  } else {
    PoolPaddedAvx2<PlaneOp::kAverage>(p, scratch.data(), scratch_w, dst);
  }
}

// PoolWholePlanesAvx512 for up to eight planes.
MXLITE_TARGET_AVX2 void PoolWholePlanesAvx2(bool max, float divisor, const float* src,
                                            int64_t count, int64_t size, float* dst) {
  const __m256 divisors = _mm256_set1_ps(divisor);
  __m256 acc = max ? _mm256_set1_ps(-FLT_MAX) : _mm256_setzero_ps();
  for (int64_t e = 0; e < size; e += 8) {
    const int64_t elements = std::min<int64_t>(8, size - e);
    __m256 rows[8];
    for (int64_t i = 0; i < 8; ++i) {
      rows[i] = i < count ? LoadFirstAvx2(src + i * size + e, elements) : _mm256_setzero_ps();
    }
    Transpose8x8Avx2(rows);
    for (int64_t j = 0; j < elements; ++j) {
      if (max) {
        acc = _mm256_max_ps(rows[j], acc);  // keeps acc when rows[j] is NaN
      } else {
        acc = _mm256_add_ps(acc, _mm256_div_ps(rows[j], divisors));
      }
    }
  }
  StoreFirstAvx2(dst, count, acc);
}

// PoolSixteenPlanes for eight planes, average pooling only (with eight
// lanes max pooling is faster on the row path at every width; see
// Prepare): the scratch holds eight floats a pixel, outputs go eight pixels
// at a time (eight independent chains). kPredivide (a uniform divisor) is
// a template argument here: tested at run time, its other branch's
// registers made GCC spill two of the eight sums in the tap loop (16 YMM
// registers, not 32), which doubled its time. No software prefetch, as in
// MaxPoolPlaneRowsAvx2 (input in L3, prefetch -> none: 3x3/1 on
// 768x17x17 374 -> 263 us, 2x2/2 on 256x28x28 208 -> 114).
constexpr int64_t kPoolBlockLanesAvx2 = 8;

template <bool kPredivide>
MXLITE_TARGET_AVX2 void AveragePoolEightPlanesAvx2(const Plane2d& p, const PaddedGrid& grid,
                                                   const float* src, int64_t count,
                                                   float* window, float* dst) {
  constexpr int64_t kLanes = kPoolBlockLanesAvx2;
  const int64_t in_pixels = p.in_h * p.in_w, out_pixels = p.out_h * p.out_w;
  constexpr bool predivide = kPredivide;
  const int64_t in_w = p.in_w, pad_h = p.pad_h, pad_w = p.pad_w, cols = grid.cols;
  const __m256 uniform_divisor = _mm256_set1_ps(predivide ? p.uniform_divisor : 1.f);
  for (int64_t e = 0; e < in_pixels; e += kLanes) {
    const int64_t pixels = std::min<int64_t>(kLanes, in_pixels - e);
    __m256 rows[kLanes];
    for (int64_t i = 0; i < kLanes; ++i) {
      rows[i] = i < count ? LoadFirstAvx2(src + i * in_pixels + e, pixels) : _mm256_setzero_ps();
    }
    Transpose8x8Avx2(rows);
    // A running pointer and local extents: the vector stores may alias
    // anything, so reading p's fields per pixel reloaded them each time.
    int64_t w = e % in_w;
    float* at = window + ((e / in_w + pad_h) * cols + w + pad_w) * kLanes;
    for (int64_t j = 0; j < pixels; ++j) {
      __m256 v = rows[j];
      if (predivide) v = _mm256_div_ps(v, uniform_divisor);
      _mm256_store_ps(at, v);
      at += kLanes;
      if (++w == in_w) {
        w = 0;
        at += (cols - in_w) * kLanes;
      }
    }
  }
  int64_t oh = 0, ow = 0;
  for (int64_t e = 0; e < out_pixels; e += kLanes) {
    const int64_t pixels = std::min<int64_t>(kLanes, out_pixels - e);
    int64_t corner[kLanes];
    float divisors[kLanes];
    WindowCorners(p, grid, kLanes, pixels, !predivide, &oh, &ow, corner, divisors);
    __m256 outputs[kLanes];
    MXLITE_UNROLL for (int j = 0; j < kLanes; ++j) outputs[j] = _mm256_setzero_ps();
    for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
        const float* tap = window + (kh * grid.cols + kw) * kLanes;
        MXLITE_UNROLL for (int j = 0; j < kLanes; ++j) {
          const __m256 v = _mm256_load_ps(tap + corner[j]);
          if (predivide) {
            outputs[j] = _mm256_add_ps(outputs[j], v);
          } else {
            outputs[j] =
                _mm256_add_ps(outputs[j], _mm256_div_ps(v, _mm256_set1_ps(divisors[j])));
          }
        }
      }
    }
    Transpose8x8Avx2(outputs);
    for (int64_t i = 0; i < count; ++i) {
      StoreFirstAvx2(dst + i * out_pixels + e, pixels, outputs[i]);
    }
  }
}

// PoolPlaneBlockAvx512 for up to eight planes, average pooling only.
MXLITE_TARGET_AVX2 void AveragePoolPlaneBlockAvx2(const Plane2d& p, const float* src,
                                                  int64_t count, float* dst) {
  const PaddedGrid grid = PaddedGridOf(p);
  float* const window = BlockScratch(p, grid, kPoolBlockLanesAvx2);
  if (p.uniform_divisor > 0.f) {
    AveragePoolEightPlanesAvx2<true>(p, grid, src, count, window, dst);
  } else {
    AveragePoolEightPlanesAvx2<false>(p, grid, src, count, window, dst);
  }
}
#endif  // MXLITE_X86_64

class Pooling : public Operator {
 public:
  Pooling(PoolType type, Convention convention, bool global, std::vector<int64_t> kernel,
          std::vector<int64_t> stride, std::vector<int64_t> pad, int p_value,
          bool count_include_pad, int layout_rank)
      : type_(type),
        convention_(convention),
        global_(global),
        kernel_(std::move(kernel)),
        stride_(std::move(stride)),
        pad_(std::move(pad)),
        p_value_(p_value),
        count_include_pad_(count_include_pad),
        layout_rank_(layout_rank) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    if (global_) {
      MXL_CHECK(data.ndim() >= 3 && data.ndim() <= 5, "input 'data' has shape ",
                data.ToString(), " but pooling needs 3-D, 4-D or 5-D input (batch, channel, ",
                "spatial...)");
      MXL_CHECK(layout_rank_ == 0 || layout_rank_ == data.ndim() - 2, "input 'data' has shape ",
                data.ToString(), " which does not match the ", layout_rank_, "-D layout");
      Shape oshape = data;
      for (int i = 2; i < data.ndim(); ++i) oshape[i] = 1;
      MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));
      Shape back = data;
      back[0] = (*out)[0][0];
      back[1] = (*out)[0][1];
      return AssignShape(in, 0, back, "input", InputNames());
    }
    const int nk = static_cast<int>(kernel_.size());
    MXL_CHECK(data.ndim() == nk + 2, "input 'data' has shape ", data.ToString(), " but ", nk,
              "-D pooling needs ", nk + 2, "-D input (batch, channel, ",
              nk == 1 ? "width" : nk == 2 ? "height, width" : "depth, height, width", ")");
    Shape oshape = data;
    for (int i = 0; i < nk; ++i) {
      const int64_t extent = data[2 + i];
      if (extent < 0) continue;
      const int64_t padded = extent + 2 * pad_[i];
      MXL_CHECK(kernel_[i] <= padded, "input 'data' has shape ", data.ToString(),
                ": kernel size ", kernel_[i], " exceeds spatial dim ", i, " (", extent,
                " padded to ", padded, ")");
      const int64_t span = padded - kernel_[i];
      if (convention_ == kValid) {
        oshape[2 + i] = 1 + span / stride_[i];
      } else if (convention_ == kFull) {
        oshape[2 + i] = 1 + (span + stride_[i] - 1) / stride_[i];
      } else {
        oshape[2 + i] = (padded + stride_[i] - 1) / stride_[i];
      }
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));
    Shape back = data;
    back[0] = (*out)[0][0];
    back[1] = (*out)[0][1];
    return AssignShape(in, 0, back, "input", InputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    const int nk = data.ndim() - 2;
    MXL_CHECK(nk >= 1 && nk <= 3 && oshape.ndim() == data.ndim(), "input 'data' has shape ",
              data.ToString(), " and output ", oshape.ToString(), "; pooling needs 3-D to 5-D");
    Geometry& g = geometry_;
    g = Geometry();
    g.planes = data[0] * data[1];
    for (int i = 0; i < nk; ++i) {
      const int d = 3 - nk + i;
      g.in[d] = data[2 + i];
      g.out[d] = oshape[2 + i];
      g.kernel[d] = global_ ? data[2 + i] : kernel_[i];
      g.stride[d] = global_ ? 1 : stride_[i];
      g.pad[d] = global_ ? 0 : pad_[i];
    }
    // Window bounds per output index, per axis, shared by every plane.
    for (int d = 0; d < 3; ++d) {
      spans_[d].resize(static_cast<size_t>(g.out[d]));
      for (int64_t o = 0; o < g.out[d]; ++o) {
        spans_[d][o] = WindowSpan(o, g.in[d], g.kernel[d], g.stride[d], g.pad[d]);
      }
    }
    // MXNet's 3-D sum kernel writes NaN for a window with no elements; the
    // 1-D and 2-D kernels write the empty sum.
    nan_on_empty_ = nk == 3;

    // The vector path: 2-D max or average, stride 1 or 2, every window
    // non-empty (an empty average would divide 0 by 0 there).
    vector_plane_ = false;
#if defined(MXLITE_X86_64)
    static const Isa isa = SelectedIsa();
    avx2_ = isa == Isa::kAvx2;
    const bool vector_isa = isa == Isa::kAvx512 || avx2_;
    bool windows_nonempty = true;
    row_extent_.clear();
    col_extent_.clear();
    for (int d = 1; d < 3; ++d) {
      std::vector<float>& extent = d == 1 ? row_extent_ : col_extent_;
      for (const Span& span : spans_[d]) {
        const int64_t clipped = span.end - span.begin;
        if (clipped <= 0) windows_nonempty = false;
        extent.push_back(static_cast<float>(count_include_pad_ ? span.padded_extent : clipped));
      }
    }
    // The divisor is the product of the two extents (as the scalar code's
    // pool_size), uniform when each list holds one value.
    uniform_divisor_ = 0.f;
    const auto all_equal = [](const std::vector<float>& values) {
      return std::all_of(values.begin(), values.end(),
                         [&](float v) { return v == values.front(); });
    };
    if (type_ == kAvg && !row_extent_.empty() && !col_extent_.empty() &&
        all_equal(row_extent_) && all_equal(col_extent_)) {
      uniform_divisor_ = row_extent_.front() * col_extent_.front();
    }
    // Windows that are whole planes (global pooling, or a kernel the size
    // of an unpadded input).
    bool whole_planes = true;
    for (int d = 0; d < 3; ++d) {
      whole_planes = whole_planes && g.out[d] == 1 && g.pad[d] == 0 && g.kernel[d] == g.in[d];
    }
    whole_planes_ = vector_isa && (type_ == kMax || type_ == kAvg) && whole_planes &&
                    g.in[0] * g.in[1] * g.in[2] >= 1;
    const bool kind_supported =
        type_ == kAvg || (type_ == kMax && g.kernel[2] <= kMaxPoolSeparableTaps);
    vector_plane_ = vector_isa && kind_supported && g.in[0] == 1 && g.out[0] == 1 &&
                    g.kernel[0] == 1 && g.out[2] >= 4 && windows_nonempty &&
                    (g.stride[1] == 1 || g.stride[1] == 2) &&
                    (g.stride[2] == 1 || g.stride[2] == 2);
    const int64_t padded_pixels =
        PaddedExtent(g.in[1], g.out[1], g.kernel[1], g.stride[1], g.pad[1]) *
        PaddedExtent(g.in[2], g.out[2], g.kernel[2], g.stride[2], g.pad[2]);
    // Max pooling with rows of more than 24 outputs keeps the row path: a
    // max pool reads each input about once, so the transposes cost about as
    // much as the windows. Measured, one thread, warm | caches flushed, row
    // path -> blocked: 3x3/2 on 128x55x55 67 -> 80 | 122 -> 109 us, on
    // 288x35x35 74 -> 72 | 128 -> 87, on 768x17x17 66 -> 43 | 194 -> 51;
    // the average pools 1.8x (35x35) to 4.2x (8x8) faster warm.
    // With eight lanes the row path leaves fewer idle, and max pooling keeps
    // it at every width: AVX2, one thread, warm, blocked -> row path: 3x3/2
    // on 768x17x17 84 -> 60 us, 288x35x35 142 -> 123, 256x27x27 73 -> 55
    // (the average pools stay blocked: 2-4x faster there).
    blocked_planes_ = vector_plane_ && padded_pixels <= kPoolBlockMaxPixels &&
                      (type_ == kAvg || (!avx2_ && g.out[2] <= 24));
    // AVX2 averages with a uniform divisor go row by row, except on planes
    // of at most 8 outputs a row, where the blocked path's transposes keep
    // up: one thread, 8 MB swept between runs, blocked -> rows, min of 20:
    // 3x3/1 pad 1 on 1280x8x8 138 -> 148 us, 2048x8x8 194 -> 226.
    average_rows_ = vector_plane_ && avx2_ && uniform_divisor_ > 0.f &&
                    (g.out[2] > 8 || !blocked_planes_);
    max_block_loads_.clear();
    if (vector_plane_ && avx2_ && type_ == kMax) {
      max_block_loads_.resize(static_cast<size_t>((g.out[2] + 7) / 8));
      PlanMaxBlockLoadsAvx2(PlaneOf(), max_block_loads_.data());
    }
#endif
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Geometry& g = geometry_;
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
    const std::vector<Span>* spans = spans_;
#if defined(MXLITE_X86_64)
    if (whole_planes_) {
      // The divisor as the scalar code's pool_size: the whole plane.
      const float divisor = static_cast<float>(in_plane);
      const int64_t lanes = avx2_ ? 8 : 16;
      ParallelFor(ctx.pool, (g.planes + lanes - 1) / lanes, [&](int64_t group) {
        const int64_t first = group * lanes;
        const int64_t count = std::min(lanes, g.planes - first);
        if (avx2_) {
          PoolWholePlanesAvx2(type_ == kMax, divisor, x + first * in_plane, count, in_plane,
                              y + first);
        } else {
          PoolWholePlanesAvx512(type_ == kMax, divisor, x + first * in_plane, count, in_plane,
                                y + first);
        }
      });
      return Status();
    }
    if (vector_plane_) {
      const Plane2d p = PlaneOf();
      if (average_rows_) {
        ParallelFor(ctx.pool, g.planes, [&](int64_t plane) {
          AveragePoolPlaneRowsAvx2(p, x + plane * in_plane, y + plane * out_plane);
        });
        return Status();
      }
      if (blocked_planes_) {
        const int64_t lanes = avx2_ ? kPoolBlockLanesAvx2 : kPoolBlockLanes;
        ParallelFor(ctx.pool, (g.planes + lanes - 1) / lanes, [&](int64_t block) {
          const int64_t first = block * lanes;
          const int64_t count = std::min(lanes, g.planes - first);
          const int64_t next_count = std::min(lanes, g.planes - first - count);
          if (avx2_) {
            AveragePoolPlaneBlockAvx2(p, x + first * in_plane, count, y + first * out_plane);
          } else {
            PoolPlaneBlockAvx512(p, x + first * in_plane, count, y + first * out_plane,
                                 next_count);
          }
        });
        return Status();
      }
      ParallelFor(ctx.pool, g.planes, [&](int64_t plane) {
        const bool next_plane = plane + 1 < g.planes;
        if (avx2_) {
          PoolPlane2dAvx2(p, max_block_loads_.data(), x + plane * in_plane,
                          y + plane * out_plane);
        } else {
          PoolPlane2dAvx512(p, x + plane * in_plane, y + plane * out_plane, next_plane);
        }
      });
      return Status();
    }
#endif
    // Planes are independent: split them over the threads.
    ParallelFor(ctx.pool, g.planes, [&](int64_t plane) {
      const float* src = x + plane * in_plane;
      float* dst = y + plane * out_plane;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const Span& sd = spans[0][od];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const Span& sh = spans[1][oh];
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            const Span& sw = spans[2][ow];
            *dst++ = Window(src, g, sd, sh, sw);
          }
        }
      }
    });
    return Status();
  }

 private:
#if defined(MXLITE_X86_64)
  // The vector paths' view of the geometry (2-D, in g.in[1..2]).
  Plane2d PlaneOf() const {
    const Geometry& g = geometry_;
    Plane2d p;
    p.in_h = g.in[1];
    p.in_w = g.in[2];
    p.out_h = g.out[1];
    p.out_w = g.out[2];
    p.kernel_h = g.kernel[1];
    p.kernel_w = g.kernel[2];
    p.stride_h = g.stride[1];
    p.stride_w = g.stride[2];
    p.pad_h = g.pad[1];
    p.pad_w = g.pad[2];
    p.max = type_ == kMax;
    p.row_extent = row_extent_.data();
    p.col_extent = col_extent_.data();
    p.uniform_divisor = uniform_divisor_;
    return p;
  }
#endif

  float Window(const float* src, const Geometry& g, const Span& sd, const Span& sh,
               const Span& sw) const {
    if (type_ == kMax) {
      float best = -FLT_MAX;
      for (int64_t d = sd.begin; d < sd.end; ++d) {
        for (int64_t h = sh.begin; h < sh.end; ++h) {
          const float* row = src + (d * g.in[1] + h) * g.in[2];
          for (int64_t w = sw.begin; w < sw.end; ++w) {
            if (row[w] > best) best = row[w];
          }
        }
      }
      return best;
    }
    int64_t pool_size = 1;
    if (type_ == kAvg) {
      pool_size = count_include_pad_
                      ? sd.padded_extent * sh.padded_extent * sw.padded_extent
                      : (sd.end - sd.begin) * (sh.end - sh.begin) * (sw.end - sw.begin);
    }
    if (pool_size == 0 && nan_on_empty_) return std::nanf("");
    const float divisor = static_cast<float>(pool_size);
    const int p = type_ == kLp ? p_value_ : 1;
    float sum = 0.f;
    for (int64_t d = sd.begin; d < sd.end; ++d) {
      for (int64_t h = sh.begin; h < sh.end; ++h) {
        const float* row = src + (d * g.in[1] + h) * g.in[2];
        for (int64_t w = sw.begin; w < sw.end; ++w) {
          const float v = row[w];
          const float term = p == 1 ? v : p == 2 ? v * v : v * v * v;
          sum += term / divisor;
        }
      }
    }
    if (p == 2) return std::sqrt(sum);
    if (p == 3) return std::cbrt(sum);
    return sum;
  }

  PoolType type_;
  Convention convention_;
  bool global_;
  std::vector<int64_t> kernel_, stride_, pad_;
  int p_value_;
  bool count_include_pad_;
  int layout_rank_;  // spatial rank the layout attribute names, 0 when unset
  // Set by Prepare.
  Geometry geometry_;
  bool vector_plane_ = false;  // PoolPlane2dAvx512 (or Avx2) applies
  std::vector<float> row_extent_, col_extent_;  // its divisor factors
#if defined(MXLITE_X86_64)
  float uniform_divisor_ = 0.f;  // see Plane2d (only the x86-64 path reads it)
  bool whole_planes_ = false;    // PoolWholePlanesAvx512 applies
  bool blocked_planes_ = false;  // PoolPlaneBlockAvx512 applies
  bool avx2_ = false;            // the AVX2 versions run instead of the AVX-512 ones
  bool average_rows_ = false;    // AveragePoolPlaneRowsAvx2 applies
  std::vector<MaxBlockLoads> max_block_loads_;  // AVX2 max pooling's plan, per column block
#endif
  std::vector<Span> spans_[3];
  bool nan_on_empty_ = false;
};

Status CreatePooling(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> kernel = attrs->Tuple("kernel", {});
  int type = attrs->Enum("pool_type", {"max", "avg", "sum", "lp"}, kMax);
  bool global = attrs->Bool("global_pool", false);
  int convention = attrs->Enum("pooling_convention", {"valid", "full", "same"}, kValid);
  std::vector<int64_t> stride = attrs->Tuple("stride", {});
  std::vector<int64_t> pad = attrs->Tuple("pad", {});
  std::string p_text = attrs->String("p_value", "None");
  int64_t p_value = p_text == "None" ? 0 : attrs->Int("p_value", 0);
  std::string include_text = attrs->String("count_include_pad", "None");
  bool count_include_pad = include_text == "None" ? true : attrs->Bool("count_include_pad", true);
  int layout = attrs->Enum("layout", {"None", "NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"}, 0);
  attrs->Ignore("cudnn_off");
  MXL_RETURN_IF_ERROR(attrs->Finish());

  static const char* const kLayoutNames[] = {"None", "NCW", "NCHW", "NCDHW",
                                             "NWC",  "NHWC", "NDHWC"};
  if (layout >= 4) {
    attrs->Fail("layout", StrCat("layout ", kLayoutNames[layout],
                                 " is not supported (mxlite runs NCW, NCHW and NCDHW only)"));
    return attrs->Finish();
  }
  const int layout_rank = layout;  // NCW 1, NCHW 2, NCDHW 3, unset 0
  if (type == kLp && (p_value < 1 || p_value > 3)) {
    attrs->Fail("p_value", p_value == 0 ? std::string("is required for pool_type 'lp' (1, 2 or 3)")
                                        : StrCat(p_value, " is not supported (1, 2 or 3)"));
    return attrs->Finish();
  }
  if (!global) {
    const size_t nk = kernel.size();
    if (nk < 1 || nk > 3) {
      attrs->Fail("kernel", StrCat(TupleString(kernel), ": pooling needs a 1-D, 2-D or 3-D kernel",
                                   " unless global_pool is set"));
      return attrs->Finish();
    }
    if (stride.empty()) stride.assign(nk, 1);
    if (pad.empty()) pad.assign(nk, 0);
    struct Check {
      const char* key;
      const std::vector<int64_t>* values;
      int64_t minimum;
    };
    const Check checks[] = {{"kernel", &kernel, 1}, {"stride", &stride, 1}, {"pad", &pad, 0}};
    for (const Check& check : checks) {
      // Like MXNet, entries past the kernel's rank are not used.
      if (check.values->size() < nk) {
        attrs->Fail(check.key, StrCat(TupleString(*check.values), " has ", check.values->size(),
                                      " entries but kernel ", TupleString(kernel), " has ", nk));
        return attrs->Finish();
      }
      for (int64_t value : *check.values) {
        if (value < check.minimum) {
          attrs->Fail(check.key, StrCat(TupleString(*check.values), ": entries must be >= ",
                                        check.minimum));
          return attrs->Finish();
        }
      }
    }
    if (layout_rank != 0 && layout_rank != static_cast<int>(nk)) {
      attrs->Fail("layout", StrCat("layout ", kLayoutNames[layout], " does not match the ", nk,
                                   "-D kernel ", TupleString(kernel)));
      return attrs->Finish();
    }
    if (convention == kSame) {
      if (nk != 1) {
        attrs->Fail("pooling_convention", "'same' is supported for 1-D pooling only");
        return attrs->Finish();
      }
      // MXNet 1.9.1 checks pad[0..2] here, so a working 'same' node carries
      // pad (0, 0, 0).
      for (int64_t value : pad) {
        if (value != 0) {
          attrs->Fail("pooling_convention", "'same' does not allow padding");
          return attrs->Finish();
        }
      }
    }
    stride.resize(nk);
    pad.resize(nk);
  }
  out->reset(new Pooling(static_cast<PoolType>(type), static_cast<Convention>(convention), global,
                         kernel, stride, pad, static_cast<int>(p_value), count_include_pad,
                         layout_rank));
  return Status();
}

}  // namespace pooling_op
}  // namespace mxlite
