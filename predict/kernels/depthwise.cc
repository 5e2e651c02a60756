#include "depthwise.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_features.h"
#include "lane_pack.h"

#include "x86_simd.h"

namespace mxlite {

namespace depthwise_cc {

constexpr int kBlockLanes = static_cast<int>(kDepthwiseBlockChannels);

// One output element, padding read as zero.
inline float Window(const DepthwisePlaneArgs& a, int64_t oy, int64_t ox) {
  float sum = 0.f;
  for (int64_t ky = 0; ky < 3; ++ky) {
    const int64_t iy = oy * a.stride - a.pad_h + ky;
    if (iy < 0 || iy >= a.in_h) continue;
    const float* row = a.input + iy * a.in_w;
    for (int64_t kx = 0; kx < 3; ++kx) {
      const int64_t ix = ox * a.stride - a.pad_w + kx;
      if (ix >= 0 && ix < a.in_w) sum += a.weights[ky * 3 + kx] * row[ix];
    }
  }
  return sum;
}

inline float Finish(const DepthwisePlaneArgs& a, float sum, int64_t index) {
  float value = sum + a.bias;
  if (a.residual) value += a.residual[index];
  return std::min(std::max(value, a.lower), a.upper);
}

void PlaneScalar(const DepthwisePlaneArgs& a) {
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    for (int64_t ox = 0; ox < a.out_w; ++ox) {
      const int64_t index = oy * a.out_w + ox;
      a.output[index] = Finish(a, Window(a, oy, ox), index);
    }
  }
}

#if defined(MXLITE_X86_64)
// The plane kernel prefetches the input rows it will read
// kPrefetchRowsAhead rows ahead, and the output rows it will write
// kPrefetchOutputRowsAhead ahead. Planes are contiguous, so near the bottom
// of one plane this runs into the next, usually the same thread's next
// task (past the last plane it prefetches nothing useful, and a prefetch
// never faults). The row groups below read six input rows and write four
// output rows side by side, more streams than the hardware prefetcher
// follows. 32 channels at 112x112, stride 1, one thread: input cold 139-140
// -> 85-90 us, output cold 126-146 -> 81-85, warm unchanged (62-75). In
// mobilenet1.0 (per node, 8 rounds alternating) that layer 154 -> 112 us.
// The input prefetch at stride 2 predates the row groups (the row walk
// before them: 96 channels at 112x112, caches flushed, 274-358 -> 179-215
// us).
constexpr int64_t kPrefetchRowsAhead = 10;
constexpr int64_t kPrefetchOutputRowsAhead = 8;

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

// The input rows output rows [oy, oy + rows) move past, and those output
// rows, further on (see kPrefetchRowsAhead).
template <int kStride>
MXLITE_ANY_ISA_INLINE void PrefetchRowsAhead(const DepthwisePlaneArgs& a, int64_t oy,
                                             int64_t rows) {
  const int64_t in_bytes = a.in_w * int64_t{sizeof(float)};
  const int64_t in_ahead = (oy * kStride + kPrefetchRowsAhead) * in_bytes;
  for (int64_t b = 0; b < kStride * rows * in_bytes; b += 64) {
    PrefetchAhead(a.input, in_ahead + b);
  }
  const int64_t out_bytes = a.out_w * int64_t{sizeof(float)};
  const int64_t out_ahead = (oy + kPrefetchOutputRowsAhead) * out_bytes;
  for (int64_t b = 0; b < rows * out_bytes; b += 64) PrefetchAhead(a.output, out_ahead + b);
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

// Channel-blocked path. The scratch holds the padded input window (rows x
// cols pixels, rows = (out_h - 1) * stride + 3, likewise cols), one 16-float
// vector of channels per pixel, zeros in the padding; input pixels the
// window never reads are left out.
struct BlockWindow {
  int64_t rows, cols;
};

// Zeroes the window's padding: kLanes floats per pixel.
template <int kLanes>
void ZeroBorder(const DepthwiseBlockArgs& a, const BlockWindow& win, float* window) {
  const int64_t top = std::min(a.pad_h, win.rows);
  const int64_t bottom = std::min(win.rows, a.pad_h + a.in_h);
  const int64_t left = std::min(a.pad_w, win.cols);
  const int64_t right = std::min(win.cols, a.pad_w + a.in_w);
  for (int64_t y = 0; y < win.rows; ++y) {
    float* row = window + y * win.cols * kLanes;
    if (y < top || y >= bottom) {
      std::fill(row, row + win.cols * kLanes, 0.f);
    } else {
      std::fill(row, row + left * kLanes, 0.f);
      std::fill(row + right * kLanes, row + win.cols * kLanes, 0.f);
    }
  }
}

// This thread's window for kLanes channels per pixel, aligned to kLanes
// floats so that no pixel's vector straddles two cache lines, its border
// zero. Only the gathers write the scratch, always inside the border, so
// the border stays zero while this thread sees layers of one geometry.
template <int kLanes>
float* BlockScratch(const DepthwiseBlockArgs& a, const BlockWindow& win) {
  thread_local std::vector<float> scratch;
  const size_t floats = static_cast<size_t>(win.rows * win.cols * kLanes);
  if (scratch.size() < floats + kLanes) scratch.resize(floats + kLanes);
  float* window = scratch.data();
  window += (kLanes - reinterpret_cast<uintptr_t>(window) / sizeof(float) % kLanes) % kLanes;
  thread_local const float* zeroed_window = nullptr;
  thread_local int64_t zeroed_geometry[6] = {};
  const int64_t geometry[6] = {win.rows, win.cols, a.pad_h, a.pad_w, a.in_h, a.in_w};
  if (zeroed_window != window || !std::equal(geometry, geometry + 6, zeroed_geometry)) {
    ZeroBorder<kLanes>(a, win, window);
    zeroed_window = window;
    std::copy(geometry, geometry + 6, zeroed_geometry);
  }
  return window;
}

// The blocked path reads sixteen input planes side by side and writes
// sixteen output planes side by side, a line of each per step: more streams
// than the hardware prefetcher follows, so with cold caches each step
// waited on sixteen misses. Each step now prefetches, in every plane, the
// line 6 lines ahead of its reads and 4 ahead of its writes. One thread,
// 128 channels at 56x56, caches flushed (warm): stride 1 343 -> 126-130 us
// (98 -> 100), stride 2 255 -> 74-82 (52 -> 51-54). Near a plane's end
// the address runs into the next plane, and past the last one it fetches
// nothing useful (see PrefetchAhead in x86_simd.h).
constexpr int64_t kGatherBytesAhead = 6 * 64;
constexpr int64_t kStoreBytesAhead = 4 * 64;

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
        PrefetchAhead(a.output + c * a.out_plane + o0, kStoreBytesAhead);
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
      PrefetchAhead(to, kStoreBytesAhead);
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
#endif  // MXLITE_X86_64

}  // namespace depthwise_cc

bool DepthwiseConv3x3Supported(int64_t stride_h, int64_t stride_w, int64_t dilate_h,
                               int64_t dilate_w, int64_t pad_h, int64_t pad_w) {
  return stride_h == stride_w && (stride_h == 1 || stride_h == 2) && dilate_h == 1 &&
         dilate_w == 1 && pad_h >= 0 && pad_h < 3 && pad_w >= 0 && pad_w < 3;
}

void DepthwiseConv3x3Plane(const DepthwisePlaneArgs& args) {
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (avx512) {
    if (args.stride == 1) {
      depthwise_cc::PlaneAvx512<1>(args);
    } else {
      depthwise_cc::PlaneAvx512<2>(args);
    }
    return;
  }
  static const bool avx2 = SelectedIsa() == Isa::kAvx2;
  if (avx2) {
    if (args.stride == 1) {
      depthwise_cc::PlaneAvx2<1>(args);
    } else {
      depthwise_cc::PlaneAvx2<2>(args);
    }
    return;
  }
#endif  // defined(MXLITE_X86_64)
  depthwise_cc::PlaneScalar(args);
}

bool DepthwiseBlockedPays(int64_t in_w) {
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  // Up to 64 input columns (MobileNets' 56x56 layers and smaller). Against
  // the plane kernel's row groups, one thread, warm: at 28x28 48 us against
  // 59 (256 channels, stride 1), at 14x14 31 against 47, at 7x7 15 against
  // 63; at 56x56 the two are even (128 channels: 96 against 91 warm, 138
  // against 155 with caches flushed; at stride 2 49 against 42 and 85
  // against 69). At 112 columns the plane kernel is faster: it has no
  // transposes, and wide rows keep its lanes busy. AVX2 on Zen 3 (one
  // thread, min of alternating runs, a noisy shared machine): at 56x56 the
  // blocked path 193 us against the plane kernel's 232 (144 channels,
  // stride 1; with the input just written and the output cold 290 against
  // 324), at 28x28 87 against 110 (192 channels), at 14x14 48 against 92
  // (384), at 7x7 38 against 92 (960); at 112 columns the plane kernel
  // again (32 channels, stride 1: 178 against 228; 96, stride 2: 267
  // against 360).
  static const bool avx2 = SelectedIsa() == Isa::kAvx2;
  return (avx512 || avx2) && in_w <= 64;
#else
  (void)in_w;
  return false;
#endif  // defined(MXLITE_X86_64)
}

void PackDepthwiseBlockWeights(const float* weights, const float* bias, int64_t channels,
                               std::vector<float>* block_weights, std::vector<float>* block_bias) {
  PackRowsInLanes(weights, channels, 9, kDepthwiseBlockChannels, block_weights);
  PackRowsInLanes(bias, channels, 1, kDepthwiseBlockChannels, block_bias);
}

void DepthwiseConv3x3Block(const DepthwiseBlockArgs& args) {
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (avx512) {
    depthwise_cc::BlockAvx512(args);
    return;
  }
  static const bool avx2 = SelectedIsa() == Isa::kAvx2;
  if (avx2) {
    depthwise_cc::BlockAvx2(args);
    return;
  }
#endif  // defined(MXLITE_X86_64)
  // Elsewhere one plane at a time (DepthwiseBlockedPays keeps layers off
  // this path there; it serves tests and callers that take it anyway).
  const int64_t lanes = depthwise_cc::kBlockLanes;
  for (int64_t c = 0; c < args.channels; ++c) {
    float weights[9];
    for (int64_t tap = 0; tap < 9; ++tap) weights[tap] = args.weights[tap * lanes + c];
    DepthwisePlaneArgs plane;
    plane.input = args.input + c * args.in_plane;
    plane.in_h = args.in_h;
    plane.in_w = args.in_w;
    plane.weights = weights;
    plane.bias = args.bias[c];
    plane.output = args.output + c * args.out_plane;
    plane.out_h = args.out_h;
    plane.out_w = args.out_w;
    plane.stride = args.stride;
    plane.pad_h = args.pad_h;
    plane.pad_w = args.pad_w;
    plane.residual = args.residual ? args.residual + c * args.out_plane : nullptr;
    plane.lower = args.lower;
    plane.upper = args.upper;
    DepthwiseConv3x3Plane(plane);
  }
}

}  // namespace mxlite
