/*
 * The depthwise 3x3 kernels in AVX2 + FMA: the plane kernel and the
 * channel-blocked kernel, eight channels per vector.
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
namespace depthwise_avx2 {

using depthwise_x86::BlockScratch;
using depthwise_x86::BlockWindow;
using depthwise_x86::kBlockLanes;
using depthwise_x86::kStoreBytesAhead;
using depthwise_x86::PrefetchRowsAhead;

// AVX2 + FMA: the same two paths with eight lanes, no mask registers and
// sixteen vector registers. Every output is summed in the order above, so
// the results are the AVX-512 kernels' bits.
//
// Plane kernel: row groups as above, eight columns per vector. The edge
// vectors load with vmaskmovps (masked-off lanes read nothing and give
// zero) and store with vmaskmovps. Each output row's sums are combined as
// soon as they exist (top + middle when the middle is done), which is the
// same sum, to keep fewer vectors live. At stride 2 the taps come from
// in-lane shuffles only: shufps of columns x..x+15 gives the even columns
// in the order 0 2 8 10 | 4 6 12 14 (tap 0), the odd ones likewise (tap
// 1), and the same of x+2..x+17 tap 2; the outputs are computed in that
// permuted order and put back with one vpermpd before the store.
constexpr int kAvx2Lanes = 8;

// An edge vector's load masks: stride 1 the taps at x, x + 1, x + 2;
// stride 2 the columns from x, x + 8, x + 2, x + 10.
struct EdgeVectorAvx2 {
  int64_t ox;
  __m256i loads[4];
  __m256i store;
};

struct PlaneColumnsAvx2 {
  int64_t whole_begin = 0, whole_end = 0;
  EdgeVectorAvx2 edges[4];
  int edge_count = 0;
};

template <int kStride>
MXLITE_TARGET_AVX2_INLINE PlaneColumnsAvx2 PlanColumnsAvx2(const DepthwisePlaneArgs& a) {
  // Whole: x >= 0, every load inside the row (the last column read is
  // x + 9 at stride 1, x + 17 at stride 2), all eight outputs inside the
  // output row. As with sixteen lanes, at most one edge vector comes
  // before the whole ones and two after.
  const int64_t reach = kStride == 1 ? 10 : 18;
  PlaneColumnsAvx2 c;
  c.whole_begin = a.pad_w == 0 ? 0 : kAvx2Lanes;
  c.whole_end = c.whole_begin;
  while (c.whole_end + kAvx2Lanes <= a.out_w &&
         kStride * c.whole_end - a.pad_w + reach <= a.in_w) {
    c.whole_end += kAvx2Lanes;
  }
  for (int64_t ox = 0; ox < a.out_w; ox += kAvx2Lanes) {
    if (ox >= c.whole_begin && ox < c.whole_end) continue;
    EdgeVectorAvx2& edge = c.edges[c.edge_count++];
    const int64_t x = kStride * ox - a.pad_w;
    const int64_t offsets[4] = {0, kStride == 1 ? 1 : 8, 2, kStride == 1 ? 0 : 10};
    edge.ox = ox;
    for (int k = 0; k < 4; ++k) edge.loads[k] = LanesInsideAvx2(x + offsets[k], a.in_w);
    edge.store = LanesBelowAvx2(a.out_w - ox);
  }
  return c;
}

template <bool kEdge>
MXLITE_TARGET_AVX2_INLINE __m256 LoadRowAvx2(const float* row, int64_t column,
                                             const EdgeVectorAvx2& edge, int k) {
  return kEdge ? _mm256_maskload_ps(OffsetAddress(row, column), edge.loads[k])
               : _mm256_loadu_ps(row + column);
}

template <int kStride, bool kEdge>
MXLITE_TARGET_AVX2_INLINE void LoadTapsAvx2(const float* row, int64_t x, const EdgeVectorAvx2& edge,
                                            __m256 taps[3]) {
  if (kStride == 1) {
    MXLITE_UNROLL
    for (int k = 0; k < 3; ++k) {
      taps[k] = LoadRowAvx2<kEdge>(row, x + k, edge, k);
      MXLITE_KEEP_IN_REGISTER(taps[k]);
    }
    return;
  }
  const __m256 low = LoadRowAvx2<kEdge>(row, x, edge, 0);
  const __m256 high = LoadRowAvx2<kEdge>(row, x + 8, edge, 1);
  const __m256 low2 = LoadRowAvx2<kEdge>(row, x + 2, edge, 2);
  const __m256 high2 = LoadRowAvx2<kEdge>(row, x + 10, edge, 3);
  taps[0] = _mm256_shuffle_ps(low, high, 0x88);
  taps[1] = _mm256_shuffle_ps(low, high, 0xdd);
  taps[2] = _mm256_shuffle_ps(low2, high2, 0x88);
}

template <int kStride, int kRows, bool kEdge>
MXLITE_TARGET_AVX2_INLINE void VectorAvx2(const DepthwisePlaneArgs& a, const float* const* in_rows,
                                          int64_t first_out, int64_t ox,
                                          const EdgeVectorAvx2& edge, const __m256* w, __m256 bias,
                                          __m256 lower, __m256 upper) {
  const int64_t x = kStride * ox - a.pad_w;
  float* const output = a.output;
  const float* const residual = a.residual;
  const int64_t out_w = a.out_w;
  __m256 partial[kRows];  // top, then top + middle
  MXLITE_UNROLL
  for (int r = 0; r < kStride * (kRows - 1) + 3; ++r) {
    __m256 taps[3];
    LoadTapsAvx2<kStride, kEdge>(in_rows[r], x, edge, taps);
    MXLITE_UNROLL
    for (int o = 0; o < kRows; ++o) {
      const int ky = r - kStride * o;
      if (ky < 0 || ky > 2) continue;
      __m256 sum = _mm256_mul_ps(w[3 * ky], taps[0]);
      sum = _mm256_fmadd_ps(w[3 * ky + 1], taps[1], sum);
      sum = _mm256_fmadd_ps(w[3 * ky + 2], taps[2], sum);
      if (ky == 0) {
        partial[o] = sum;
      } else if (ky == 1) {
        partial[o] = _mm256_add_ps(partial[o], sum);
      } else {
        __m256 value = _mm256_add_ps(partial[o], _mm256_add_ps(sum, bias));
        if (kStride == 2) value = _mm256_castpd_ps(_mm256_permute4x64_pd(
                              _mm256_castps_pd(value), 0xd8));  // 0 1 4 5 | 2 3 6 7 -> 0..7
        const int64_t at = (first_out + o) * out_w + ox;
        if (kEdge) {
          if (residual) {
            value = _mm256_add_ps(value, _mm256_maskload_ps(residual + at, edge.store));
          }
          _mm256_maskstore_ps(output + at, edge.store, ClampAvx2(lower, upper, value));
        } else {
          if (residual) value = _mm256_add_ps(value, _mm256_loadu_ps(residual + at));
          _mm256_storeu_ps(output + at, ClampAvx2(lower, upper, value));
        }
      }
    }
  }
}

template <int kStride, int kRows>
MXLITE_TARGET_AVX2_INLINE void RowsAvx2(const DepthwisePlaneArgs& a, const float* const* in_rows,
                                        int64_t first_out, const PlaneColumnsAvx2& columns,
                                        const __m256* w, __m256 bias, __m256 lower, __m256 upper) {
  for (int e = 0; e < columns.edge_count; ++e) {
    const EdgeVectorAvx2& edge = columns.edges[e];
    VectorAvx2<kStride, kRows, true>(a, in_rows, first_out, edge.ox, edge, w, bias, lower, upper);
  }
  for (int64_t ox = columns.whole_begin; ox < columns.whole_end; ox += kAvx2Lanes) {
    VectorAvx2<kStride, kRows, false>(a, in_rows, first_out, ox, columns.edges[0], w, bias,
                                      lower, upper);
  }
}

template <int kStride>
MXLITE_TARGET_AVX2 void PlaneAvx2(const DepthwisePlaneArgs& a) {
  constexpr int kGroupRows = kStride == 1 ? 4 : 2;
  const __m256 bias = _mm256_set1_ps(a.bias);
  const __m256 lower = _mm256_set1_ps(a.lower), upper = _mm256_set1_ps(a.upper);
  __m256 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm256_set1_ps(a.weights[k]);
  const PlaneColumnsAvx2 columns = PlanColumnsAvx2<kStride>(a);
  thread_local std::vector<float> zeros;
  if (static_cast<int64_t>(zeros.size()) < a.in_w) zeros.assign(static_cast<size_t>(a.in_w), 0.f);
  const float* const zero_row = zeros.data();
  int64_t oy = 0;
  for (; oy + kGroupRows <= a.out_h; oy += kGroupRows) {
    PrefetchRowsAhead<kStride>(a, oy, kGroupRows);
    const float* rows[kStride * (kGroupRows - 1) + 3];
    for (int r = 0; r < kStride * (kGroupRows - 1) + 3; ++r) {
      const int64_t iy = oy * kStride - a.pad_h + r;
      rows[r] = iy >= 0 && iy < a.in_h ? a.input + iy * a.in_w : zero_row;
    }
    RowsAvx2<kStride, kGroupRows>(a, rows, oy, columns, w, bias, lower, upper);
  }
  for (; oy < a.out_h; ++oy) {
    PrefetchRowsAhead<kStride>(a, oy, 1);
    const float* rows[3];
    for (int r = 0; r < 3; ++r) {
      const int64_t iy = oy * kStride - a.pad_h + r;
      rows[r] = iy >= 0 && iy < a.in_h ? a.input + iy * a.in_w : zero_row;
    }
    RowsAvx2<kStride, 1>(a, rows, oy, columns, w, bias, lower, upper);
  }
}

// Channel-blocked path: a block's sixteen channels as two halves of eight,
// each gathered into a window of eight-float pixels (the same scratch for
// both), convolved and transposed back. `a` describes one half: at most
// eight channels, its weights and bias still kDepthwiseBlockChannels apart.

// The gather's prefetch distance in each plane: twelve lines, 24 steps of
// eight pixels (AVX-512: six lines, six steps). 144 channels, 56x56,
// stride 2, the input just written and the output cold, three alternating
// runs: 179, 143, 176 us with six lines, 144, 127, 158 with twelve, 192,
// 146, 186 with 24.
constexpr int64_t kGatherBytesAheadAvx2 = 12 * 64;

// Input planes -> window, eight pixels at a time (kTail: the last,
// partial step, loaded under a mask), each stored at window + `*at`, which
// walks the window's rows (an offset, not a pointer: after the last pixel
// it points past the window). The AVX2 window has a slot for every input pixel (see
// BlockAvx2), so no pixel needs a check. Reads `a` into locals first: a
// store of a __m256 may alias anything, so fields read after one would be
// loaded again.
template <bool kTail>
MXLITE_TARGET_AVX2_INLINE void GatherStepAvx2(const DepthwiseBlockArgs& a, float* window,
                                              int64_t p0, int64_t pixels, int64_t row_skip,
                                              int64_t* at, int64_t* x) {
  const float* const input = a.input + p0;
  const int64_t channels = a.channels, in_plane = a.in_plane, in_w = a.in_w;
  const __m256i lanes = LanesBelowAvx2(pixels - p0);
  __m256 v[kAvx2Lanes];
  MXLITE_UNROLL
  for (int c = 0; c < kAvx2Lanes; ++c) {
    const float* from = input + c * in_plane;
    if (c < channels) PrefetchAhead(from, kGatherBytesAheadAvx2);
    v[c] = c >= channels ? _mm256_setzero_ps()
           : kTail       ? _mm256_maskload_ps(from, lanes)
                         : _mm256_loadu_ps(from);
  }
  Transpose8x8Avx2(v);
  int64_t offset = *at, column = *x;
  MXLITE_UNROLL
  for (int j = 0; j < kAvx2Lanes; ++j) {
    if (!kTail || p0 + j < pixels) {
      _mm256_store_ps(window + offset, v[j]);
      offset += kAvx2Lanes;
      if (++column == in_w) column = 0, offset += row_skip;
    }
  }
  *at = offset;
  *x = column;
}

MXLITE_TARGET_AVX2 void GatherWindowAvx2(const DepthwiseBlockArgs& a, const BlockWindow& win,
                                         float* window) {
  const int64_t pixels = a.in_h * a.in_w;
  const int64_t row_skip = (win.cols - a.in_w) * kAvx2Lanes;
  int64_t at = (a.pad_h * win.cols + a.pad_w) * kAvx2Lanes;
  int64_t x = 0;  // the next pixel's input column
  int64_t p0 = 0;
  for (; p0 + kAvx2Lanes <= pixels; p0 += kAvx2Lanes) {
    GatherStepAvx2<false>(a, window, p0, pixels, row_skip, &at, &x);
  }
  if (p0 < pixels) GatherStepAvx2<true>(a, window, p0, pixels, row_skip, &at, &x);
}

// Window -> output planes, kConvolveChunk output pixels at a time: first
// each pixel's eight channels (nine FMAs, in three chains of three taps as
// on the other paths) into a staging buffer, then per eight pixels a
// transpose and per channel the residual, the clamp and a store. Computing
// eight pixels straight into the transpose's registers made GCC load all
// 72 window vectors first and spill them (2x slower).
constexpr int64_t kConvolveChunk = 64;

template <int kStride>
MXLITE_TARGET_AVX2_INLINE void ConvolvePixelsAvx2(const DepthwiseBlockArgs& a,
                                                  const BlockWindow& win, const float* window,
                                                  const __m256* w, __m256 bias, int64_t count,
                                                  int64_t* oy, int64_t* ox, float* staged) {
  const int64_t row_step = win.cols * kAvx2Lanes, out_w = a.out_w;
  const float* p = window + (*oy * row_step + *ox * kAvx2Lanes) * kStride;
  for (int64_t i = 0; i < count; ++i) {
    const float* q = p + row_step;
    const float* r = q + row_step;
    __m256 top = _mm256_mul_ps(w[0], _mm256_load_ps(p));
    __m256 middle = _mm256_mul_ps(w[3], _mm256_load_ps(q));
    __m256 bottom = _mm256_mul_ps(w[6], _mm256_load_ps(r));
    top = _mm256_fmadd_ps(w[1], _mm256_load_ps(p + kAvx2Lanes), top);
    middle = _mm256_fmadd_ps(w[4], _mm256_load_ps(q + kAvx2Lanes), middle);
    bottom = _mm256_fmadd_ps(w[7], _mm256_load_ps(r + kAvx2Lanes), bottom);
    top = _mm256_fmadd_ps(w[2], _mm256_load_ps(p + 2 * kAvx2Lanes), top);
    middle = _mm256_fmadd_ps(w[5], _mm256_load_ps(q + 2 * kAvx2Lanes), middle);
    bottom = _mm256_fmadd_ps(w[8], _mm256_load_ps(r + 2 * kAvx2Lanes), bottom);
    _mm256_store_ps(staged + i * kAvx2Lanes,
                    _mm256_add_ps(_mm256_add_ps(top, middle), _mm256_add_ps(bottom, bias)));
    p += kStride * kAvx2Lanes;
    if (++*ox == out_w) {
      *ox = 0, ++*oy;
      p = window + *oy * row_step * kStride;
    }
  }
}

// Staged pixels [0, 8) -> output pixels o0.. of every channel; kTail: the
// last group, `count` < 8 pixels.
template <bool kTail>
MXLITE_TARGET_AVX2_INLINE void StoreStagedAvx2(const DepthwiseBlockArgs& a, const float* staged,
                                               int64_t o0, int64_t count, __m256 lower,
                                               __m256 upper) {
  __m256 v[kAvx2Lanes];
  MXLITE_UNROLL
  for (int j = 0; j < kAvx2Lanes; ++j) v[j] = _mm256_load_ps(staged + j * kAvx2Lanes);
  Transpose8x8Avx2(v);
  const __m256i lanes = LanesBelowAvx2(count);
  float* const output = a.output + o0;
  const float* const residuals = a.residual ? a.residual + o0 : nullptr;
  const int64_t channels = a.channels, out_plane = a.out_plane;
  MXLITE_UNROLL
  for (int c = 0; c < kAvx2Lanes; ++c) {
    if (c < channels) {
      float* to = output + c * out_plane;
      const float* residual = residuals ? residuals + c * out_plane : nullptr;
      PrefetchAheadForWrite(to, kStoreBytesAhead);
      __m256 value = v[c];
      if (kTail) {
        if (residual) value = _mm256_add_ps(value, _mm256_maskload_ps(residual, lanes));
        _mm256_maskstore_ps(to, lanes, ClampAvx2(lower, upper, value));
      } else {
        if (residual) value = _mm256_add_ps(value, _mm256_loadu_ps(residual));
        _mm256_storeu_ps(to, ClampAvx2(lower, upper, value));
      }
    }
  }
}

template <int kStride>
MXLITE_TARGET_AVX2 void ConvolveWindowAvx2(const DepthwiseBlockArgs& a, const BlockWindow& win,
                                           const float* window) {
  __m256 w[9];
  for (int tap = 0; tap < 9; ++tap) w[tap] = _mm256_loadu_ps(a.weights + tap * kBlockLanes);
  const __m256 bias = _mm256_loadu_ps(a.bias);
  const __m256 lower = _mm256_set1_ps(a.lower), upper = _mm256_set1_ps(a.upper);
  // Zeros past the last pixel, so that the last group transposes no
  // uninitialized floats (its lanes there are not stored).
  alignas(32) float staged[kConvolveChunk * kAvx2Lanes] = {};
  const int64_t pixels = a.out_h * a.out_w;
  int64_t oy = 0, ox = 0;
  for (int64_t chunk = 0; chunk < pixels; chunk += kConvolveChunk) {
    const int64_t count = std::min(kConvolveChunk, pixels - chunk);
    ConvolvePixelsAvx2<kStride>(a, win, window, w, bias, count, &oy, &ox, staged);
    int64_t j = 0;
    for (; j + kAvx2Lanes <= count; j += kAvx2Lanes) {
      StoreStagedAvx2<false>(a, staged + j * kAvx2Lanes, chunk + j, kAvx2Lanes, lower, upper);
    }
    if (j < count) {
      StoreStagedAvx2<true>(a, staged + j * kAvx2Lanes, chunk + j, count - j, lower, upper);
    }
  }
}

MXLITE_TARGET_AVX2 void BlockAvx2(const DepthwiseBlockArgs& block) {
  // The window the convolution reads, widened where it leaves out the last
  // input row or column (stride 2), so that every input pixel has a slot.
  const BlockWindow win{std::max((block.out_h - 1) * block.stride + 3, block.pad_h + block.in_h),
                        std::max((block.out_w - 1) * block.stride + 3, block.pad_w + block.in_w)};
  float* window = BlockScratch<kAvx2Lanes>(block, win);
  for (int64_t first = 0; first < block.channels; first += kAvx2Lanes) {
    DepthwiseBlockArgs half = block;
    half.input = block.input + first * block.in_plane;
    half.channels = std::min<int64_t>(kAvx2Lanes, block.channels - first);
    half.weights = block.weights + first;
    half.bias = block.bias + first;
    half.output = block.output + first * block.out_plane;
    half.residual = block.residual ? block.residual + first * block.out_plane : nullptr;
    GatherWindowAvx2(half, win, window);
    if (block.stride == 1) {
      ConvolveWindowAvx2<1>(half, win, window);
    } else {
      ConvolveWindowAvx2<2>(half, win, window);
    }
  }
}

}  // namespace depthwise_avx2

void DepthwisePlaneAvx2(const DepthwisePlaneArgs& args) {
  if (args.stride == 1) {
    depthwise_avx2::PlaneAvx2<1>(args);
  } else {
    depthwise_avx2::PlaneAvx2<2>(args);
  }
}

void DepthwiseBlockAvx2(const DepthwiseBlockArgs& args) { depthwise_avx2::BlockAvx2(args); }

}  // namespace mxlite

#endif  // MXLITE_X86_64
