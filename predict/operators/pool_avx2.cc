/*
 * AVX2 + FMA pooling kernels, eight lanes, for machines without AVX-512 (the
 * table's entries "whole planes avx2", "average rows avx2", "blocked planes
 * avx2" and "rows avx2"): the algorithms of pool_avx512.cc (separable max
 * pooling, the padded average row path, the blocked planes, whole planes)
 * with the same operations per output in the same order, so the same bits,
 * and a row-by-row average for uniform divisors. Without mask registers a
 * mask is a vector whose lanes are all ones or zeros (_mm256_maskload_ps /
 * _mm256_maskstore_ps read and write nothing in the zero lanes); a max
 * tap's masked-off lanes are blended to -FLT_MAX.
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
namespace pool_avx2 {

using namespace pool_x86;

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
// taps: rows [0, unmasked_rows) with plain loads (UnmaskedBlockRows), the
// rest with the masks.
struct MaxBlockLoads {
  int64_t unmasked_rows;
  int32_t low_lanes[kMaxPoolSeparableTaps][8], high_lanes[kMaxPoolSeparableTaps][8];
};

// Fills blocks[(out_w + 7) / 8] for p (stride_w 1 or 2); once per Prepare.
MXLITE_TARGET_AVX2 void PlanMaxBlockLoadsAvx2(const Plane2d& p, MaxBlockLoads* blocks) {
  for (int64_t ow = 0; ow < p.out_w; ow += 8) {
    MaxBlockLoads& block = blocks[ow / 8];
    const int64_t first_column = ow * p.stride_w - p.pad_w;
    block.unmasked_rows = UnmaskedBlockRows(p, ow, 8);
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

// pool_avx512.cc's MaxPoolPlaneRows in eight lanes: output row by output
// row, each input row's maxima made into a ring of kernel_h rows when the
// first window that needs them comes; small planes' row maxima all first
// (kWholePlaneRowMaxima). No software prefetch either (on Zen 3 the
// hardware prefetcher did better alone).
template <int kStride>
MXLITE_TARGET_AVX2 void MaxPoolPlaneRowsAvx2(const Plane2d& p, const MaxBlockLoads* blocks,
                                             const float* src, float* dst) {
  const int64_t row_maxima_w = (p.out_w + 7) / 8 * 8;
  const bool whole_plane = p.in_h * row_maxima_w <= kWholePlaneRowMaxima;
  int64_t ring_mask = 0;
  float* const ring = RowMaximaRing(whole_plane ? p.in_h : p.kernel_h, row_maxima_w, &ring_mask);
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
// 17 and 35, and nothing is transposed or copied whole.
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
// pool_algorithms.cc): the scratch holds eight floats a pixel, outputs go eight pixels
// at a time (eight independent chains). kPredivide (a uniform divisor) is
// a template argument here: tested at run time, its other branch's
// registers made GCC spill two of the eight sums in the tap loop (16 YMM
// registers, not 32), which doubled its time. No software prefetch, as in
// MaxPoolPlaneRowsAvx2.
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

class WholePlanesKernel : public PoolKernel {
 public:
  explicit WholePlanesKernel(const PoolGeometry& g) : g_(g) {}

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane();
    // The divisor as the scalar code's pool_size: the whole plane.
    const float divisor = static_cast<float>(in_plane);
    const bool max = g_.type == PoolType::kMax;
    ParallelFor(pool, (g_.planes + 7) / 8, [&](int64_t group) {
      const int64_t first = group * 8;
      const int64_t count = std::min<int64_t>(8, g_.planes - first);
      PoolWholePlanesAvx2(max, divisor, x + first * in_plane, count, in_plane, y + first);
    });
  }

 private:
  const PoolGeometry g_;
};

class AverageRowsKernel : public PlaneKernel {
 public:
  using PlaneKernel::PlaneKernel;

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane(), out_plane = g_.OutPlane();
    ParallelFor(pool, g_.planes, [&](int64_t plane) {
      AveragePoolPlaneRowsAvx2(plane_, x + plane * in_plane, y + plane * out_plane);
    });
  }
};

class BlockedPlanesKernel : public PlaneKernel {
 public:
  using PlaneKernel::PlaneKernel;

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane(), out_plane = g_.OutPlane();
    const int64_t lanes = kPoolBlockLanesAvx2;
    ParallelFor(pool, (g_.planes + lanes - 1) / lanes, [&](int64_t block) {
      const int64_t first = block * lanes;
      const int64_t count = std::min(lanes, g_.planes - first);
      AveragePoolPlaneBlockAvx2(plane_, x + first * in_plane, count, y + first * out_plane);
    });
  }
};

class RowsKernel : public PlaneKernel {
 public:
  explicit RowsKernel(const PoolGeometry& g) : PlaneKernel(g) {
    if (plane_.max) {
      max_block_loads_.resize(static_cast<size_t>((plane_.out_w + 7) / 8));
      PlanMaxBlockLoadsAvx2(plane_, max_block_loads_.data());
    }
  }

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const int64_t in_plane = g_.InPlane(), out_plane = g_.OutPlane();
    ParallelFor(pool, g_.planes, [&](int64_t plane) {
      PoolPlane2dAvx2(plane_, max_block_loads_.data(), x + plane * in_plane,
                      y + plane * out_plane);
    });
  }

 private:
  std::vector<MaxBlockLoads> max_block_loads_;  // max pooling's plan, per column block
};

Status PrepareWholePlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new WholePlanesKernel(g));
  return Status();
}

Status PrepareAverageRows(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new AverageRowsKernel(g));
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

}  // namespace pool_avx2
}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
