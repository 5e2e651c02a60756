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
// Input columns [x, x + 16) of a row of `width`; columns outside the row
// (the padding) read as zeros.
MXLITE_TARGET_AVX512_INLINE __m512 LoadColumns(const float* row, int64_t x, int64_t width) {
  if (x >= 0 && x + 16 <= width) return _mm512_loadu_ps(row + x);
  return _mm512_maskz_loadu_ps(LanesInsideAvx512(x, width), OffsetAddress(row, x));
}

// One input row's contribution to sixteen outputs, walking along the row.
// Each step loads only the input columns it has not seen (16 at stride 1,
// 32 at stride 2) and builds the shifted windows from registers:
//   stride 1: lane i needs x0 + i + kx: the last block and the new one,
//             shifted by kx lanes (valignd);
//   stride 2: lane i needs x0 + 2i + kx: the even and odd lanes of the 32
//             columns from x0, and the even lanes shifted by one with the
//             first column of the next block in the top lane.
template <int kStride>
class RowWalker {
 public:
  // weights: the row's three taps, broadcast.
  MXLITE_TARGET_AVX512_INLINE RowWalker(const float* row, int64_t x0, int64_t width,
                                        const __m512* weights)
      : row_(row), width_(width), x_(x0 + 16), w_(weights) {
    last_ = LoadColumns(row, x0, width);
  }

  // The taps' sum for the next sixteen outputs.
  MXLITE_TARGET_AVX512_INLINE __m512 Next() {
    if (kStride == 1) {
      const __m512 next = LoadColumns(row_, x_, width_);
      x_ += 16;
      const __m512i shifted1 = _mm512_maskz_alignr_epi32(0xffff, _mm512_castps_si512(next),
                                                   _mm512_castps_si512(last_), 1);
      const __m512i shifted2 = _mm512_maskz_alignr_epi32(0xffff, _mm512_castps_si512(next),
                                                   _mm512_castps_si512(last_), 2);
      __m512 sum = _mm512_mul_ps(w_[0], last_);
      sum = _mm512_fmadd_ps(w_[1], _mm512_castsi512_ps(shifted1), sum);
      sum = _mm512_fmadd_ps(w_[2], _mm512_castsi512_ps(shifted2), sum);
      last_ = next;
      return sum;
    }
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd =
        _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512 middle = LoadColumns(row_, x_, width_);
    const __m512 next = LoadColumns(row_, x_ + 16, width_);
    x_ += 32;
    const __m512 evens = _mm512_permutex2var_ps(last_, even, middle);
    const __m512 odds = _mm512_permutex2var_ps(last_, odd, middle);
    const __m512i evens_next = _mm512_maskz_alignr_epi32(0xffff, _mm512_castps_si512(next),
                                                   _mm512_castps_si512(evens), 1);
    __m512 sum = _mm512_mul_ps(w_[0], evens);
    sum = _mm512_fmadd_ps(w_[1], odds, sum);
    sum = _mm512_fmadd_ps(w_[2], _mm512_castsi512_ps(evens_next), sum);
    last_ = next;
    return sum;
  }

 private:
  const float* row_;
  int64_t width_, x_;
  const __m512* w_;
  __m512 last_;  // the 16 columns from the current outputs' first window
};

// Input rows the stride-2 plane walk prefetches ahead of the rows it reads.
// Planes are contiguous, so near the bottom of one plane this runs into the
// next, usually the same thread's next task (past the last plane it
// prefetches nothing useful, and a prefetch never faults). At stride 2 the
// walk consumes two rows per output row and the hardware prefetcher alone
// left it waiting on memory: 96 channels at 112x112, caches flushed:
// 274-358 -> 179-215 us (warm: 153-157 -> 155-157); in mobilenetv2_1.0 (one
// thread, per node, 6 rounds alternating) that layer's median 412 -> 322
// us, min 287 -> 227; mobilenet1.0's stride-2 layer min 138 -> 128. At
// stride 1 it made 32 channels at 112x112 20% slower warm, so it stays off.
constexpr int64_t kPrefetchRowsAhead = 10;

// A whole plane, row by row, sixteen outputs per step with one walker per
// input row (three FMA chains of three taps, not one of nine). Input rows
// outside the image (the top and bottom padding) read a row of zeros;
// columns outside it are masked off in LoadColumns, so the padding costs
// no padded copy of the plane.
template <int kStride>
MXLITE_TARGET_AVX512 void PlaneAvx512(const DepthwisePlaneArgs& a) {
  const __m512 bias = _mm512_set1_ps(a.bias);
  const __m512 lower = _mm512_set1_ps(a.lower), upper = _mm512_set1_ps(a.upper);
  __m512 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm512_set1_ps(a.weights[k]);
  const int64_t in_h = a.in_h, in_w = a.in_w, out_w = a.out_w;
  thread_local std::vector<float> zeros;
  if (static_cast<int64_t>(zeros.size()) < in_w) zeros.assign(static_cast<size_t>(in_w), 0.f);
  const int64_t row_bytes = in_w * int64_t{sizeof(float)};
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    if (kStride == 2) {
      // The two input rows this output row moves past, further on.
      const int64_t ahead = (oy * kStride + kPrefetchRowsAhead) * row_bytes;
      for (int64_t b = 0; b < kStride * row_bytes; b += 64) PrefetchAhead(a.input, ahead + b);
    }
    const float* rows[3];
    for (int64_t ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * kStride - a.pad_h + ky;
      rows[ky] = iy >= 0 && iy < in_h ? a.input + iy * in_w : zeros.data();
    }
    const int64_t x0 = -a.pad_w;
    RowWalker<kStride> top(rows[0], x0, in_w, w);
    RowWalker<kStride> middle(rows[1], x0, in_w, w + 3);
    RowWalker<kStride> bottom(rows[2], x0, in_w, w + 6);
    float* out_row = a.output + oy * out_w;
    const float* res_row = a.residual ? a.residual + oy * out_w : nullptr;
    for (int64_t ox = 0; ox < out_w; ox += 16) {
      const __m512 s0 = top.Next(), s1 = middle.Next(), s2 = bottom.Next();
      __m512 value = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, bias));
      if (ox + 16 <= out_w) {
        if (res_row) value = _mm512_add_ps(value, _mm512_loadu_ps(res_row + ox));
        _mm512_storeu_ps(out_row + ox, ClampAvx512(lower, upper, value));
      } else {
        const __mmask16 mask = LanesBelowAvx512(out_w - ox);
        if (res_row) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, res_row + ox));
        _mm512_mask_storeu_ps(out_row + ox, mask, ClampAvx512(lower, upper, value));
      }
    }
  }
}

// Channel-blocked path. The scratch holds the padded input window (rows x
// cols pixels, rows = (out_h - 1) * stride + 3, likewise cols), one 16-float
// vector of channels per pixel, zeros in the padding; input pixels the
// window never reads are left out.
struct BlockWindow {
  int64_t rows, cols;
};

MXLITE_TARGET_AVX512_INLINE void ZeroPixels(float* row, int64_t x_begin, int64_t x_end) {
  for (int64_t x = x_begin; x < x_end; ++x) {
    _mm512_store_ps(row + x * kBlockLanes, _mm512_setzero_ps());
  }
}

MXLITE_TARGET_AVX512 void ZeroBorder(const DepthwiseBlockArgs& a, const BlockWindow& win,
                                     float* window) {
  const int64_t top = std::min(a.pad_h, win.rows);
  const int64_t bottom = std::min(win.rows, a.pad_h + a.in_h);
  const int64_t left = std::min(a.pad_w, win.cols);
  const int64_t right = std::min(win.cols, a.pad_w + a.in_w);
  for (int64_t y = 0; y < win.rows; ++y) {
    float* row = window + y * win.cols * kBlockLanes;
    if (y < top || y >= bottom) {
      ZeroPixels(row, 0, win.cols);
    } else {
      ZeroPixels(row, 0, left);
      ZeroPixels(row, right, win.cols);
    }
  }
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
  // Aligned to a cache line, so that no pixel's vector straddles two.
  thread_local std::vector<float> scratch;
  const size_t floats = static_cast<size_t>(win.rows * win.cols * kBlockLanes);
  if (scratch.size() < floats + kBlockLanes) scratch.resize(floats + kBlockLanes);
  float* window = scratch.data();
  window += (kBlockLanes - reinterpret_cast<uintptr_t>(window) / sizeof(float) % kBlockLanes) %
            kBlockLanes;
  // Only GatherWindow writes the scratch, always inside the border, so the
  // border stays zero while this thread sees layers of one geometry.
  thread_local const float* zeroed_window = nullptr;
  thread_local int64_t zeroed_geometry[6] = {};
  const int64_t geometry[6] = {win.rows, win.cols, a.pad_h, a.pad_w, a.in_h, a.in_w};
  if (zeroed_window != window || !std::equal(geometry, geometry + 6, zeroed_geometry)) {
    ZeroBorder(a, win, window);
    zeroed_window = window;
    std::copy(geometry, geometry + 6, zeroed_geometry);
  }
  GatherWindow(a, win, window);
  if (a.stride == 1) {
    ConvolveWindow<1>(a, win, window);
  } else {
    ConvolveWindow<2>(a, win, window);
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
#endif
  depthwise_cc::PlaneScalar(args);
}

bool DepthwiseBlockedApplies(int64_t in_w) {
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  // Up to 64 input columns (MobileNets' 56x56 layers and smaller) it beats
  // the row walk: 1.4x at 56x56, 1.7x at 28x28, 1.8-4.3x at 14x14 and 7x7
  // (warm, one thread, stride 2 gaining most). At 112 columns the row walk
  // is 5-15% faster: it has no transposes, and wide rows keep its lanes busy.
  return avx512 && in_w <= 64;
#else
  (void)in_w;
  return false;
#endif
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
#endif
  // Elsewhere one plane at a time (DepthwiseBlockedApplies keeps layers off
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
