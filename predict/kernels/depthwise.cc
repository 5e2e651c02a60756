#include "depthwise.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_features.h"

#include "x86_simd.h"

namespace mxlite {

namespace depthwise_cc {

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
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
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

// Stride 1 with one column of padding on each side (out_w == in_w): output
// o = oy * w + ox reads tap (ky, kx) at flat input index o + (ky - pad_h) * w
// + kx - 1, the same offset for every output. So the plane is computed as
// one flat array, sixteen outputs at a time, each tap one masked load at its
// offset; the masks (which lanes fall inside the image for each tap) depend
// only on the geometry and are built once per layer (DepthwiseFlatMasks). On
// narrow planes this beats walking row by row, whose per-row start-up
// dominates when a row is one or two vectors wide; from 56 columns on the
// row walk is faster (it loads each input once, not nine times).
constexpr int64_t kFlatMaxWidth = 32;

// Tap t's sixteen inputs for the outputs from `base`.
MXLITE_TARGET_AVX512_INLINE __m512 MaskedTap(const uint16_t* masks, const float* base,
                                             const int64_t* offset, int t) {
  return _mm512_maskz_loadu_ps(masks[t], OffsetAddress(base, offset[t]));
}

MXLITE_TARGET_AVX512 void FlatPlaneAvx512(const DepthwisePlaneArgs& a) {
  const uint16_t* masks = a.flat_masks;
  const __m512 bias = _mm512_set1_ps(a.bias);
  const __m512 lower = _mm512_set1_ps(a.lower), upper = _mm512_set1_ps(a.upper);
  __m512 w[9];
  int64_t offset[9];
  for (int tap = 0; tap < 9; ++tap) {
    w[tap] = _mm512_set1_ps(a.weights[tap]);
    offset[tap] = (tap / 3 - a.pad_h) * a.in_w + tap % 3 - 1;
  }
  const int64_t outputs = a.out_h * a.out_w;
  for (int64_t o = 0; o < outputs; o += 16, masks += 9) {
    const float* base = a.input + o;
    // Three chains of three taps, as in the row walker (written out: an
    // array of sums and a loop over them stayed in memory, 4x slower).
    __m512 top = _mm512_mul_ps(w[0], MaskedTap(masks, base, offset, 0));
    __m512 middle = _mm512_mul_ps(w[3], MaskedTap(masks, base, offset, 3));
    __m512 bottom = _mm512_mul_ps(w[6], MaskedTap(masks, base, offset, 6));
    top = _mm512_fmadd_ps(w[1], MaskedTap(masks, base, offset, 1), top);
    middle = _mm512_fmadd_ps(w[4], MaskedTap(masks, base, offset, 4), middle);
    bottom = _mm512_fmadd_ps(w[7], MaskedTap(masks, base, offset, 7), bottom);
    top = _mm512_fmadd_ps(w[2], MaskedTap(masks, base, offset, 2), top);
    middle = _mm512_fmadd_ps(w[5], MaskedTap(masks, base, offset, 5), middle);
    bottom = _mm512_fmadd_ps(w[8], MaskedTap(masks, base, offset, 8), bottom);
    __m512 value = _mm512_add_ps(_mm512_add_ps(top, middle), _mm512_add_ps(bottom, bias));
    const __mmask16 lanes = LanesBelowAvx512(outputs - o);
    if (a.residual) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(lanes, a.residual + o));
    _mm512_mask_storeu_ps(a.output + o, lanes, ClampAvx512(lower, upper, value));
  }
}
#endif  // MXLITE_X86_64

}  // namespace depthwise_cc

bool DepthwiseConv3x3Supported(int64_t stride_h, int64_t stride_w, int64_t dilate_h,
                               int64_t dilate_w, int64_t pad_h, int64_t pad_w) {
  return stride_h == stride_w && (stride_h == 1 || stride_h == 2) && dilate_h == 1 &&
         dilate_w == 1 && pad_h >= 0 && pad_h < 3 && pad_w >= 0 && pad_w < 3;
}

std::vector<uint16_t> DepthwiseFlatMasks(int64_t in_h, int64_t in_w, int64_t stride,
                                         int64_t pad_h, int64_t pad_w) {
  std::vector<uint16_t> masks;
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (!avx512 || stride != 1 || pad_w != 1 || in_w > depthwise_cc::kFlatMaxWidth) return masks;
  const int64_t out_h = in_h + 2 * pad_h - 2, out_w = in_w;
  const int64_t outputs = std::max<int64_t>(0, out_h * out_w);
  masks.assign(static_cast<size_t>((outputs + 15) / 16 * 9), 0);
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t oy = o / out_w, ox = o % out_w;
    for (int tap = 0; tap < 9; ++tap) {
      const int64_t iy = oy - pad_h + tap / 3, ix = ox - 1 + tap % 3;
      if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
        masks[static_cast<size_t>(o / 16 * 9 + tap)] |= static_cast<uint16_t>(1u << (o % 16));
      }
    }
  }
#else
  (void)in_h, (void)in_w, (void)stride, (void)pad_h, (void)pad_w;
#endif
  return masks;
}

void DepthwiseConv3x3Plane(const DepthwisePlaneArgs& args) {
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (avx512) {
    if (args.flat_masks) {
      depthwise_cc::FlatPlaneAvx512(args);
    } else if (args.stride == 1) {
      depthwise_cc::PlaneAvx512<1>(args);
    } else {
      depthwise_cc::PlaneAvx512<2>(args);
    }
    return;
  }
#endif
  depthwise_cc::PlaneScalar(args);
}

}  // namespace mxlite
