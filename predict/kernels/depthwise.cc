#include "depthwise.h"

#include <algorithm>
#include <vector>

#include "cpu_features.h"
#include "padding.h"

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

// Output columns [*lo, *hi) whose whole window is inside the image.
void InteriorColumns(const DepthwisePlaneArgs& a, int64_t* lo, int64_t* hi) {
  *lo = std::min(a.out_w, (a.pad_w + a.stride - 1) / a.stride);
  // ox*stride - pad + 2 <= in_w - 1
  const int64_t last = (a.in_w - 3 + a.pad_w);
  *hi = last < 0 ? *lo : std::max(*lo, std::min(a.out_w, last / a.stride + 1));
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
// Lanes [0, count) set.
inline __mmask16 FirstLanes(int64_t count) {
  return count <= 0 ? 0 : count >= 16 ? 0xffff : static_cast<__mmask16>((1u << count) - 1);
}

// Outputs [ox, ox + count) of one row, count <= 16, all inside the interior.
// Masked loads read only the input columns those outputs need.
// Forced inline: out of line it cost 4x the whole kernel.
MXLITE_TARGET_AVX512_INLINE __m512 InteriorSum(const DepthwisePlaneArgs& a, const __m512* w,
                                                  int64_t oy, int64_t ox, int64_t count) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512 sum = _mm512_setzero_ps();
  const int64_t x0 = ox * a.stride - a.pad_w;
  for (int64_t ky = 0; ky < 3; ++ky) {
    const int64_t iy = oy * a.stride - a.pad_h + ky;
    if (iy < 0 || iy >= a.in_h) continue;
    const float* src = a.input + iy * a.in_w + x0;
    if (a.stride == 1) {
      // Lane i reads x0 + i + kx for kx < 3.
      const __mmask16 mask = FirstLanes(count);
      sum = _mm512_fmadd_ps(w[ky * 3 + 0], _mm512_maskz_loadu_ps(mask, src), sum);
      sum = _mm512_fmadd_ps(w[ky * 3 + 1], _mm512_maskz_loadu_ps(mask, src + 1), sum);
      sum = _mm512_fmadd_ps(w[ky * 3 + 2], _mm512_maskz_loadu_ps(mask, src + 2), sum);
    } else {
      // Lane i reads x0 + 2i + kx: the even and odd lanes of the 32 inputs
      // from x0, and the even lanes of the 32 from x0 + 2. Only inputs up to
      // x0 + 2 * count are needed (and inside the row), so each load is
      // masked to those.
      const int64_t span = 2 * count + 1;  // inputs x0 .. x0 + 2*count
      const __m512 v0 = _mm512_maskz_loadu_ps(FirstLanes(span), src);
      const __m512 v1 = _mm512_maskz_loadu_ps(FirstLanes(span - 16), src + 16);
      const __m512 v2 = _mm512_maskz_loadu_ps(FirstLanes(span - 2), src + 2);
      const __m512 v3 = _mm512_maskz_loadu_ps(FirstLanes(span - 18), src + 18);
      sum = _mm512_fmadd_ps(w[ky * 3 + 0], _mm512_permutex2var_ps(v0, even, v1), sum);
      sum = _mm512_fmadd_ps(w[ky * 3 + 1], _mm512_permutex2var_ps(v0, odd, v1), sum);
      sum = _mm512_fmadd_ps(w[ky * 3 + 2], _mm512_permutex2var_ps(v2, even, v3), sum);
    }
  }
  return sum;
}

MXLITE_TARGET_AVX512 void PlaneAvx512(const DepthwisePlaneArgs& a) {
  int64_t lo = 0, hi = 0;
  InteriorColumns(a, &lo, &hi);
  const __m512 bias = _mm512_set1_ps(a.bias);
  const __m512 lower = _mm512_set1_ps(a.lower), upper = _mm512_set1_ps(a.upper);
  __m512 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm512_set1_ps(a.weights[k]);
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    float* out_row = a.output + oy * a.out_w;
    const float* res_row = a.residual ? a.residual + oy * a.out_w : nullptr;
    for (int64_t ox = 0; ox < lo; ++ox) {
      out_row[ox] = Finish(a, Window(a, oy, ox), oy * a.out_w + ox);
    }
    for (int64_t ox = lo; ox < hi; ox += 16) {
      const int64_t count = std::min<int64_t>(16, hi - ox);
      const __mmask16 mask = FirstLanes(count);
      __m512 value = _mm512_add_ps(InteriorSum(a, w, oy, ox, count), bias);
      if (res_row) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, res_row + ox));
      // The masked forms, because GCC 12 warns about the undefined source
      // operand inside _mm512_max_ps/_mm512_min_ps.
      value = _mm512_mask_max_ps(value, 0xffff, value, lower);
      value = _mm512_mask_min_ps(value, 0xffff, value, upper);
      _mm512_mask_storeu_ps(out_row + ox, mask, value);
    }
    for (int64_t ox = std::max(lo, hi); ox < a.out_w; ++ox) {
      out_row[ox] = Finish(a, Window(a, oy, ox), oy * a.out_w + ox);
    }
  }
}

// Stride 1 on an unpadded plane (every window inside): each output row is
// three input rows times three taps, sixteen outputs per vector, one
// accumulator per input row so the FMA chains are three taps long, not nine.
MXLITE_TARGET_AVX512 void InteriorPlaneStride1(const DepthwisePlaneArgs& a) {
  const __m512 bias = _mm512_set1_ps(a.bias);
  const __m512 lower = _mm512_set1_ps(a.lower), upper = _mm512_set1_ps(a.upper);
  __m512 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm512_set1_ps(a.weights[k]);
  const int64_t out_w = a.out_w, in_w = a.in_w;
  float* const output = a.output;
  const float* const residual = a.residual;
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    const float* r0 = a.input + oy * in_w;
    const float* r1 = r0 + in_w;
    const float* r2 = r1 + in_w;
    float* out_row = output + oy * out_w;
    const float* res_row = residual ? residual + oy * out_w : nullptr;
    for (int64_t ox = 0; ox < out_w; ox += 16) {
      // Input columns ox .. ox + 17 of each row; lanes past the row's end
      // are masked off (they would only feed outputs that are not stored).
      // Masks only near the row's end: masked loads are slower on some
      // processors (Zen 5) than plain ones.
      const bool full = ox + 18 <= in_w && ox + 16 <= out_w;
      const __mmask16 mask = full ? 0xffff : FirstLanes(out_w - ox);
      const __mmask16 mask1 = full ? 0xffff : FirstLanes(in_w - ox - 1);
      const __mmask16 mask2 = full ? 0xffff : FirstLanes(in_w - ox - 2);
      __m512 s0 = _mm512_mul_ps(w[0], _mm512_maskz_loadu_ps(mask, r0 + ox));
      __m512 s1 = _mm512_mul_ps(w[3], _mm512_maskz_loadu_ps(mask, r1 + ox));
      __m512 s2 = _mm512_mul_ps(w[6], _mm512_maskz_loadu_ps(mask, r2 + ox));
      s0 = _mm512_fmadd_ps(w[1], _mm512_maskz_loadu_ps(mask1, r0 + ox + 1), s0);
      s1 = _mm512_fmadd_ps(w[4], _mm512_maskz_loadu_ps(mask1, r1 + ox + 1), s1);
      s2 = _mm512_fmadd_ps(w[7], _mm512_maskz_loadu_ps(mask1, r2 + ox + 1), s2);
      s0 = _mm512_fmadd_ps(w[2], _mm512_maskz_loadu_ps(mask2, r0 + ox + 2), s0);
      s1 = _mm512_fmadd_ps(w[5], _mm512_maskz_loadu_ps(mask2, r1 + ox + 2), s1);
      s2 = _mm512_fmadd_ps(w[8], _mm512_maskz_loadu_ps(mask2, r2 + ox + 2), s2);
      __m512 value = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, bias));
      if (res_row) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, res_row + ox));
      value = _mm512_mask_max_ps(value, 0xffff, value, lower);
      value = _mm512_mask_min_ps(value, 0xffff, value, upper);
      _mm512_mask_storeu_ps(out_row + ox, mask, value);
    }
  }
}

// With padding, the outputs near the edges have windows that leave the
// image and take the scalar path; on 7x7 to 28x28 planes those are a large
// share of the work. A zero-padded copy of the plane (one pass over it, 9x
// cheaper than the convolution) makes every window interior.
MXLITE_TARGET_AVX512 void PaddedPlaneAvx512(const DepthwisePlaneArgs& a) {
  DepthwisePlaneArgs inner = a;
  if (a.pad_h != 0 || a.pad_w != 0) {
    inner.in_h = a.in_h + 2 * a.pad_h;
    inner.in_w = a.in_w + 2 * a.pad_w;
    inner.pad_h = inner.pad_w = 0;
    thread_local std::vector<float> padded;
    padded.resize(static_cast<size_t>(inner.in_h * inner.in_w));
    CopyPadded(a.input, a.in_h, a.in_w, a.pad_h, a.pad_w, 0.f, inner.in_h, inner.in_w,
               padded.data());
    inner.input = padded.data();
  }
  if (inner.stride == 1) {
    InteriorPlaneStride1(inner);
  } else {
    PlaneAvx512(inner);
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
    depthwise_cc::PaddedPlaneAvx512(args);
    return;
  }
#endif
  depthwise_cc::PlaneScalar(args);
}

}  // namespace mxlite
