/*
 * The depthwise 3x3 kernels in AVX-512: the plane kernel and the
 * channel-blocked kernel (sixteen channels per vector).
 * Chosen once by the family's table in depthwise.cc.
 */
#include "depthwise.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "depthwise_x86.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace depthwise_avx512 {

using depthwise_x86::BlockScratch;
using depthwise_x86::BlockWindow;
using depthwise_x86::kBlockLanes;
using depthwise_x86::kStoreBytesAhead;
using depthwise_x86::PrefetchRowsAhead;

// The plane kernel. A group of kRows output rows (4 at stride 1, 2 at
// stride 2) is computed sixteen columns at a time. Each input row the
// group reads is loaded once, its three taps formed, and fed to every
// output row of the group that reads it: 6 input rows for 4 outputs at
// stride 1, 5 for 2 at stride 2, where one row at a time reads 3 per
// output.
//
// Taps of an input row for the outputs at column ox (x = stride*ox - pad_w):
//   stride 1: columns x, x + 1, x + 2: three unaligned loads. On this class
//             of core a 64-byte load that crosses a cache line costs about
//             two, and the shuffles that would avoid the crossings (valignd
//             on aligned loads) cost more;
//   stride 2: the even and odd lanes of the 32 columns from x (two loads,
//             two permutes), and the even lanes shifted by one with column
//             x + 32 in the top lane (one broadcast load, one valignd).
// The row walk this replaced (one output row at a time, taps built from
// the previous vector) took, for 8 planes of 112x112, warm, one thread,
// 24-33 us at stride 1 (14-19 cycles per output vector) and 19.4 at stride
// 2 (37); this takes 17.8 (10) and 11.5 (22). At 56x56: 9-13 -> 5.2 and
// 6.7 -> 3.3.
//
// Each output's arithmetic is in the row walk's order: per input row
// w0*t0, then + w1*t1, + w2*t2 (fused), then (top + middle) + (bottom +
// bias), so the channel-blocked path gives the same bits.
//
// Vectors whose loads reach outside the input row or whose outputs run
// past the output row (the first, when pad_w > 0, and the last one or two)
// take masked loads and a masked store. Their masks depend only on ox, so
// they are worked out once per plane (EdgeVector).
struct EdgeVector {
  int64_t ox;
  __mmask16 loads[3];  // stride 1: the three taps; stride 2: x, x + 16, x + 32
  __mmask16 store;
};

// Sixteen columns of a row from `column`; on an edge vector, masked by its
// k-th load mask.
template <bool kEdge>
MXLITE_TARGET_AVX512_INLINE __m512 LoadRow(const float* row, int64_t column,
                                           const EdgeVector& edge, int k) {
  return kEdge ? _mm512_maskz_loadu_ps(edge.loads[k], OffsetAddress(row, column))
               : _mm512_loadu_ps(row + column);
}

template <int kStride, bool kEdge>
MXLITE_TARGET_AVX512_INLINE void LoadTaps(const float* row, int64_t x, const EdgeVector& edge,
                                          __m512 taps[3]) {
  if (kStride == 1) {
    MXLITE_UNROLL
    for (int k = 0; k < 3; ++k) {
      taps[k] = LoadRow<kEdge>(row, x + k, edge, k);
      MXLITE_KEEP_IN_REGISTER(taps[k]);
    }
    return;
  }
  const __m512 low = LoadRow<kEdge>(row, x, edge, 0), high = LoadRow<kEdge>(row, x + 16, edge, 1);
  const __m512 next = kEdge ? _mm512_maskz_loadu_ps(edge.loads[2], OffsetAddress(row, x + 32))
                            : _mm512_set1_ps(row[x + 32]);
  StrideTwoTapsAvx512(low, high, next, taps);
}

template <int kStride, int kRows, bool kEdge>
MXLITE_TARGET_AVX512_INLINE void VectorAvx512(const DepthwisePlaneArgs& a,
                                              const float* const* in_rows, int64_t first_out,
                                              int64_t ox, const EdgeVector& edge,
                                              const __m512* w, __m512 bias, __m512 lower,
                                              __m512 upper) {
  const int64_t x = kStride * ox - a.pad_w;
  __m512 sums[kRows][3];
  MXLITE_UNROLL
  for (int r = 0; r < kStride * (kRows - 1) + 3; ++r) {
    __m512 taps[3];
    LoadTaps<kStride, kEdge>(in_rows[r], x, edge, taps);
    MXLITE_UNROLL
    for (int o = 0; o < kRows; ++o) {
      const int ky = r - kStride * o;  // input row r is tap row ky of output row o
      if (ky < 0 || ky > 2) continue;
      __m512 sum = _mm512_mul_ps(w[3 * ky], taps[0]);
      sum = _mm512_fmadd_ps(w[3 * ky + 1], taps[1], sum);
      sums[o][ky] = _mm512_fmadd_ps(w[3 * ky + 2], taps[2], sum);
    }
  }
  // Read once: the stores below could alias `a` as far as the compiler knows.
  float* const output = a.output;
  const float* const residual = a.residual;
  const int64_t out_w = a.out_w;
  MXLITE_UNROLL
  for (int o = 0; o < kRows; ++o) {
    __m512 value = _mm512_add_ps(_mm512_add_ps(sums[o][0], sums[o][1]),
                                 _mm512_add_ps(sums[o][2], bias));
    const int64_t at = (first_out + o) * out_w + ox;
    if (kEdge) {
      if (residual) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(edge.store, residual + at));
      _mm512_mask_storeu_ps(output + at, edge.store, ClampAvx512(lower, upper, value));
    } else {
      if (residual) value = _mm512_add_ps(value, _mm512_loadu_ps(residual + at));
      _mm512_storeu_ps(output + at, ClampAvx512(lower, upper, value));
    }
  }
}

// The plane's vectors: whole ones in [whole_begin, whole_end), and the
// edge vectors with their masks (at most one before and two after).
struct PlaneColumns {
  int64_t whole_begin = 0, whole_end = 0;
  EdgeVector edges[4];
  int edge_count = 0;
};

template <int kStride>
MXLITE_TARGET_AVX512_INLINE PlaneColumns PlanColumns(const DepthwisePlaneArgs& a) {
  // Whole: x = kStride * ox - pad_w >= 0, every load inside the row (the
  // last column read is x + 2 at stride 1, x + 32 at stride 2), and all
  // sixteen outputs inside the output row.
  const int64_t reach = kStride == 1 ? 18 : 33;
  PlaneColumns c;
  c.whole_begin = a.pad_w == 0 ? 0 : 16;
  c.whole_end = c.whole_begin;
  while (c.whole_end + 16 <= a.out_w && kStride * c.whole_end - a.pad_w + reach <= a.in_w) {
    c.whole_end += 16;
  }
  for (int64_t ox = 0; ox < a.out_w; ox += 16) {
    if (ox >= c.whole_begin && ox < c.whole_end) continue;
    EdgeVector& edge = c.edges[c.edge_count++];
    const int64_t x = kStride * ox - a.pad_w;
    edge.ox = ox;
    for (int k = 0; k < 3; ++k) {
      edge.loads[k] = kStride == 1 ? LanesInsideAvx512(x + k, a.in_w)
                                   : LanesInsideAvx512(x + 16 * k, a.in_w);
    }
    if (kStride == 2) edge.loads[2] &= 1;  // only column x + 32
    edge.store = LanesBelowAvx512(a.out_w - ox);
  }
  return c;
}

template <int kStride, int kRows>
MXLITE_TARGET_AVX512_INLINE void RowsAvx512(const DepthwisePlaneArgs& a,
                                            const float* const* in_rows, int64_t first_out,
                                            const PlaneColumns& columns, const __m512* w,
                                            __m512 bias, __m512 lower, __m512 upper) {
  for (int e = 0; e < columns.edge_count; ++e) {
    const EdgeVector& edge = columns.edges[e];
    VectorAvx512<kStride, kRows, true>(a, in_rows, first_out, edge.ox, edge, w, bias, lower,
                                       upper);
  }
  for (int64_t ox = columns.whole_begin; ox < columns.whole_end; ox += 16) {
    VectorAvx512<kStride, kRows, false>(a, in_rows, first_out, ox, columns.edges[0], w, bias,
                                        lower, upper);
  }
}

template <int kStride>
MXLITE_TARGET_AVX512 void PlaneAvx512(const DepthwisePlaneArgs& a) {
  constexpr int kGroupRows = kStride == 1 ? 4 : 2;
  const __m512 bias = _mm512_set1_ps(a.bias);
  const __m512 lower = _mm512_set1_ps(a.lower), upper = _mm512_set1_ps(a.upper);
  __m512 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm512_set1_ps(a.weights[k]);
  const PlaneColumns columns = PlanColumns<kStride>(a);
  // Input rows outside the image (the top and bottom padding) read a row
  // of zeros.
  thread_local std::vector<float> zeros;
  if (static_cast<int64_t>(zeros.size()) < a.in_w) zeros.assign(static_cast<size_t>(a.in_w), 0.f);
  const auto input_row = [&](int64_t iy) {
    return iy >= 0 && iy < a.in_h ? a.input + iy * a.in_w : zeros.data();
  };
  int64_t oy = 0;
  for (; oy + kGroupRows <= a.out_h; oy += kGroupRows) {
    PrefetchRowsAhead<kStride>(a, oy, kGroupRows);
    const float* rows[kStride * (kGroupRows - 1) + 3];
    for (int r = 0; r < kStride * (kGroupRows - 1) + 3; ++r) {
      rows[r] = input_row(oy * kStride - a.pad_h + r);
    }
    RowsAvx512<kStride, kGroupRows>(a, rows, oy, columns, w, bias, lower, upper);
  }
  for (; oy < a.out_h; ++oy) {
    PrefetchRowsAhead<kStride>(a, oy, 1);
    const float* rows[3];
    for (int r = 0; r < 3; ++r) rows[r] = input_row(oy * kStride - a.pad_h + r);
    RowsAvx512<kStride, 1>(a, rows, oy, columns, w, bias, lower, upper);
  }
}

// How far ahead the gather prefetches (see depthwise_x86.h).
constexpr int64_t kGatherBytesAhead = 6 * 64;


// Input planes -> window: sixteen pixels at a time, one masked load per
// channel, a 16x16 transpose, then one store per pixel.
MXLITE_TARGET_AVX512 void GatherWindow(const DepthwiseBlockArgs& a, const BlockWindow& win,
                                       float* window) {
  const int64_t pixels = a.in_h * a.in_w;
  int64_t y = a.pad_h, x = a.pad_w;  // the next pixel's place in the window
  for (int64_t p0 = 0; p0 < pixels; p0 += kBlockLanes) {
    const __mmask16 lanes = LanesBelowAvx512(pixels - p0);
    __m512 v[kBlockLanes];
    MXLITE_UNROLL
    for (int c = 0; c < kBlockLanes; ++c) {
      if (c < a.channels) PrefetchAhead(a.input + c * a.in_plane + p0, kGatherBytesAhead);
      v[c] = c < a.channels ? _mm512_maskz_loadu_ps(lanes, a.input + c * a.in_plane + p0)
                            : _mm512_setzero_ps();
    }
    Transpose16x16Avx512(v);
    MXLITE_UNROLL
    for (int j = 0; j < kBlockLanes; ++j) {
      if (p0 + j < pixels) {
        if (y < win.rows && x < win.cols) {
          _mm512_storeu_ps(window + (y * win.cols + x) * kBlockLanes, v[j]);
        }
        if (++x == a.pad_w + a.in_w) x = a.pad_w, ++y;
      }
    }
  }
}

// Window -> output planes: sixteen output pixels (nine FMAs each, in three
// chains of three taps as on the other paths), a transpose, then per
// channel the residual, the clamp and one masked store.
template <int kStride>
MXLITE_TARGET_AVX512 void ConvolveWindow(const DepthwiseBlockArgs& a, const BlockWindow& win,
                                         const float* window) {
  __m512 w[9];
  for (int tap = 0; tap < 9; ++tap) w[tap] = _mm512_loadu_ps(a.weights + tap * kBlockLanes);
  const __m512 bias = _mm512_loadu_ps(a.bias);
  const __m512 lower = _mm512_set1_ps(a.lower), upper = _mm512_set1_ps(a.upper);
  const int64_t row_step = win.cols * kBlockLanes;
  const int64_t pixels = a.out_h * a.out_w;
  int64_t oy = 0, ox = 0;
  for (int64_t o0 = 0; o0 < pixels; o0 += kBlockLanes) {
    __m512 v[kBlockLanes];
    MXLITE_UNROLL
    for (int j = 0; j < kBlockLanes; ++j) {
      if (o0 + j < pixels) {
        const float* p = window + (oy * row_step + ox * kBlockLanes) * kStride;
        const float* q = p + row_step;
        const float* r = q + row_step;
        __m512 top = _mm512_mul_ps(w[0], _mm512_loadu_ps(p));
        __m512 middle = _mm512_mul_ps(w[3], _mm512_loadu_ps(q));
        __m512 bottom = _mm512_mul_ps(w[6], _mm512_loadu_ps(r));
        top = _mm512_fmadd_ps(w[1], _mm512_loadu_ps(p + kBlockLanes), top);
        middle = _mm512_fmadd_ps(w[4], _mm512_loadu_ps(q + kBlockLanes), middle);
        bottom = _mm512_fmadd_ps(w[7], _mm512_loadu_ps(r + kBlockLanes), bottom);
        top = _mm512_fmadd_ps(w[2], _mm512_loadu_ps(p + 2 * kBlockLanes), top);
        middle = _mm512_fmadd_ps(w[5], _mm512_loadu_ps(q + 2 * kBlockLanes), middle);
        bottom = _mm512_fmadd_ps(w[8], _mm512_loadu_ps(r + 2 * kBlockLanes), bottom);
        v[j] = _mm512_add_ps(_mm512_add_ps(top, middle), _mm512_add_ps(bottom, bias));
        if (++ox == a.out_w) ox = 0, ++oy;
      } else {
        v[j] = _mm512_setzero_ps();
      }
    }
    Transpose16x16Avx512(v);
    const __mmask16 lanes = LanesBelowAvx512(pixels - o0);
    MXLITE_UNROLL
    for (int c = 0; c < kBlockLanes; ++c) {
      if (c < a.channels) {
        PrefetchAheadForWrite(a.output + c * a.out_plane + o0, kStoreBytesAhead);
        __m512 value = v[c];
        if (a.residual) {
          value = _mm512_add_ps(value,
                                _mm512_maskz_loadu_ps(lanes, a.residual + c * a.out_plane + o0));
        }
        _mm512_mask_storeu_ps(a.output + c * a.out_plane + o0, lanes,
                              ClampAvx512(lower, upper, value));
      }
    }
  }
}

MXLITE_TARGET_AVX512 void BlockAvx512(const DepthwiseBlockArgs& a) {
  const BlockWindow win{(a.out_h - 1) * a.stride + 3, (a.out_w - 1) * a.stride + 3};
  float* window = BlockScratch<kBlockLanes>(a, win);
  GatherWindow(a, win, window);
  if (a.stride == 1) {
    ConvolveWindow<1>(a, win, window);
  } else {
    ConvolveWindow<2>(a, win, window);
  }
}

}  // namespace depthwise_avx512

void DepthwisePlaneAvx512(const DepthwisePlaneArgs& args) {
  if (args.stride == 1) {
    depthwise_avx512::PlaneAvx512<1>(args);
  } else {
    depthwise_avx512::PlaneAvx512<2>(args);
  }
}

void DepthwiseBlockAvx512(const DepthwiseBlockArgs& args) { depthwise_avx512::BlockAvx512(args); }

}  // namespace mxlite

#endif  // MXLITE_X86_64
