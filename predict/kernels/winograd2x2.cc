#include "winograd2x2.h"

#include "cpu_features.h"
#include "x86_simd.h"

#include <algorithm>
#include <limits>

namespace mxlite {
namespace winograd2x2_cc {

constexpr int kLanes = 16;

// G (4x3) of F(2x2, 3x3) with interpolation points 0, 1, -1, infinity.
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

#if defined(MXLITE_X86_64)

// Largest output side (14: 49 tiles) and fewest channels in and filters
// out (see Winograd2x2Applies).
constexpr int64_t kMaxSide = 14;
constexpr int64_t kMinChannels = 32;
constexpr int64_t kMinFilters = 64;

// t = B^T d for one column of four values; the same row of B^T applied
// along a row gives d B.
MXLITE_TARGET_AVX512_INLINE void InputTransform4(const __m512 d[4], __m512 t[4]) {
  t[0] = _mm512_sub_ps(d[0], d[2]);
  t[1] = _mm512_add_ps(d[1], d[2]);
  t[2] = _mm512_sub_ps(d[2], d[1]);
  t[3] = _mm512_sub_ps(d[1], d[3]);
}

// y = A^T m for one column of four values.
MXLITE_TARGET_AVX512_INLINE void OutputTransform4(const __m512 m[4], __m512 y[2]) {
  y[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
  y[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
}

// V[xi][c][group's tiles] for one channel plane: sixteen gathers (zeros
// outside the plane), B^T down the window's columns, B along its rows;
// lanes [0, live_tiles) are stored.
MXLITE_TARGET_AVX512 void TransformInput(const float* plane, const int32_t* offsets,
                                         const uint16_t* lanes, int64_t live_tiles, float* v,
                                         int64_t xi_stride) {
  const __mmask16 live = LanesBelowAvx512(live_tiles);
  __m512 d[4][4];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const int k = i * 4 + j;
      const __m512i index = _mm512_loadu_si512(offsets + k * kLanes);
      d[i][j] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes[k], index, plane, 4);
    }
  }
  __m512 t[4][4];  // t[i][j] = (B^T d)[i][j]
  for (int j = 0; j < 4; ++j) {
    const __m512 column[4] = {d[0][j], d[1][j], d[2][j], d[3][j]};
    __m512 out[4];
    InputTransform4(column, out);
    for (int i = 0; i < 4; ++i) t[i][j] = out[i];
  }
  for (int i = 0; i < 4; ++i) {
    __m512 out[4];
    InputTransform4(t[i], out);
    for (int j = 0; j < 4; ++j) _mm512_mask_storeu_ps(v + (i * 4 + j) * xi_stride, live, out[j]);
  }
}

// Output pixels of one filter for a group's tiles from M[xi][f][tiles]:
// A^T . A, then + bias, + residual, clamp, scattered into the plane.
MXLITE_TARGET_AVX512 void TransformOutput(const float* m, int64_t xi_stride,
                                          int64_t live_tiles, const int32_t* offsets,
                                          const uint16_t* lanes, float bias,
                                          const float* residual, bool clamp, float lower,
                                          float upper, float* out) {
  const __mmask16 live = LanesBelowAvx512(live_tiles);
  __m512 rows[4][2];  // A^T applied along each row of the 4x4 product
  for (int i = 0; i < 4; ++i) {
    __m512 values[4];
    for (int j = 0; j < 4; ++j) {
      values[j] = _mm512_maskz_loadu_ps(live, m + (i * 4 + j) * xi_stride);
    }
    OutputTransform4(values, rows[i]);
  }
  const __m512 bias_v = _mm512_set1_ps(bias);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
  for (int b = 0; b < 2; ++b) {
    const __m512 column[4] = {rows[0][b], rows[1][b], rows[2][b], rows[3][b]};
    __m512 y[2];
    OutputTransform4(column, y);
    for (int a = 0; a < 2; ++a) {
      const int k = a * 2 + b;  // output pixel (a, b) of the tile
      const __m512i index = _mm512_loadu_si512(offsets + k * kLanes);
      __m512 value = _mm512_add_ps(y[a], bias_v);
      if (residual) {
        value = _mm512_add_ps(
            value, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes[k], index, residual, 4));
      }
      if (clamp) value = ClampAvx512(lo, hi, value);
      _mm512_mask_i32scatter_ps(out, lanes[k], index, value, 4);
    }
  }
}

#endif  // MXLITE_X86_64

}  // namespace winograd2x2_cc

bool Winograd2x2Applies(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                        int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                        int64_t filters, int64_t out_h, int64_t out_w) {
#if defined(MXLITE_X86_64)
  using namespace winograd2x2_cc;
  return SelectedIsa() == Isa::kAvx512 && kernel_h == 3 && kernel_w == 3 && stride_h == 1 &&
         stride_w == 1 && dilate_h == 1 && dilate_w == 1 && groups == 1 &&
         out_h <= kMaxSide && out_w <= kMaxSide && channels >= kMinChannels &&
         filters >= kMinFilters;
#else
  (void)kernel_h, (void)kernel_w, (void)stride_h, (void)stride_w, (void)dilate_h,
      (void)dilate_w, (void)groups, (void)channels, (void)filters, (void)out_h, (void)out_w;
  return false;
#endif
}

Status Winograd2x2Plan::Prepare(const Winograd2x2Geometry& g, const float* weights) {
  using winograd2x2_cc::kG;
  using winograd2x2_cc::kLanes;
  geometry_ = g;
  // U[xi][f][c] = (G g G^T)[xi], in double and rounded once.
  std::vector<float> u(static_cast<size_t>(16 * g.filters * g.channels));
  for (int64_t f = 0; f < g.filters; ++f) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const float* w = weights + (f * g.channels + c) * 9;
      double t[4][3];  // G g
      for (int r = 0; r < 4; ++r) {
        for (int k = 0; k < 3; ++k) {
          t[r][k] = kG[r][0] * w[k] + kG[r][1] * w[3 + k] + kG[r][2] * w[6 + k];
        }
      }
      for (int r = 0; r < 4; ++r) {
        for (int k = 0; k < 4; ++k) {
          const double value = t[r][0] * kG[k][0] + t[r][1] * kG[k][1] + t[r][2] * kG[k][2];
          u[((r * 4 + k) * g.filters + f) * g.channels + c] = static_cast<float>(value);
        }
      }
    }
  }
  packed_.resize(16);
  for (int xi = 0; xi < 16; ++xi) {
    MXL_RETURN_IF_ERROR(packed_[xi].Pack(u.data() + xi * g.filters * g.channels, g.channels,
                                         g.filters, g.channels));
  }
  // Gather and scatter indices, 16 window and 4 output positions a group.
  const int64_t tiles = g.Tiles(), tiles_w = g.TilesW();
  const int64_t groups = (tiles + kLanes - 1) / kLanes;
  input_offsets_.assign(static_cast<size_t>(groups * 16 * kLanes), 0);
  input_lanes_.assign(static_cast<size_t>(groups * 16), 0);
  output_offsets_.assign(static_cast<size_t>(groups * 4 * kLanes), 0);
  output_lanes_.assign(static_cast<size_t>(groups * 4), 0);
  for (int64_t group = 0; group < groups; ++group) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const int64_t tile = group * kLanes + lane;
      if (tile >= tiles) break;
      const int64_t ty = tile / tiles_w, tx = tile % tiles_w;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const int64_t y = 2 * ty - g.pad_h + i, x = 2 * tx - g.pad_w + j;
          if (y < 0 || y >= g.in_h || x < 0 || x >= g.in_w) continue;
          const int64_t k = group * 16 + i * 4 + j;
          input_offsets_[k * kLanes + lane] = static_cast<int32_t>(y * g.in_w + x);
          input_lanes_[k] = static_cast<uint16_t>(input_lanes_[k] | (1u << lane));
        }
      }
      for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) {
          const int64_t y = 2 * ty + a, x = 2 * tx + b;
          if (y >= g.out_h || x >= g.out_w) continue;
          const int64_t k = group * 4 + a * 2 + b;
          output_offsets_[k * kLanes + lane] = static_cast<int32_t>(y * g.out_w + x);
          output_lanes_[k] = static_cast<uint16_t>(output_lanes_[k] | (1u << lane));
        }
      }
    }
  }
  return Status();
}

void Winograd2x2Plan::Convolve(const float* input, const float* bias, const float* residual,
                               float lower, float upper, float* output, float* workspace,
                               ThreadPool* pool) const {
#if defined(MXLITE_X86_64)
  using winograd2x2_cc::kLanes;
  const Winograd2x2Geometry& g = geometry_;
  const int64_t tiles = g.Tiles();
  const int64_t groups = (tiles + kLanes - 1) / kLanes;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  float* v = workspace;                           // [16][channels][tiles]
  float* m = workspace + 16 * g.channels * tiles;  // [16][filters][tiles]
  const int64_t v_stride = g.channels * tiles, m_stride = g.filters * tiles;
  const bool clamp = lower != -std::numeric_limits<float>::infinity() ||
                     upper != std::numeric_limits<float>::infinity();
  ParallelFor(pool, g.channels, [&](int64_t c) {
    for (int64_t group = 0; group < groups; ++group) {
      winograd2x2_cc::TransformInput(input + c * in_plane,
                                     input_offsets_.data() + group * 16 * kLanes,
                                     input_lanes_.data() + group * 16, tiles - group * kLanes,
                                     v + c * tiles + group * kLanes, v_stride);
    }
  });
  ParallelFor(pool, 16, [&](int64_t xi) {
    GemmPacked(packed_[xi], v + xi * v_stride, tiles, tiles, m + xi * m_stride, tiles,
               GemmEpilogue(), nullptr);
  });
  ParallelFor(pool, g.filters, [&](int64_t f) {
    for (int64_t group = 0; group < groups; ++group) {
      winograd2x2_cc::TransformOutput(m + f * tiles + group * kLanes, m_stride,
                                      tiles - group * kLanes,
                                      output_offsets_.data() + group * 4 * kLanes,
                                      output_lanes_.data() + group * 4, bias ? bias[f] : 0.f,
                                      residual ? residual + f * out_plane : nullptr, clamp,
                                      lower, upper, output + f * out_plane);
    }
  });
#else
  // Winograd2x2Applies is false without AVX-512: never called.
  (void)input, (void)bias, (void)residual, (void)lower, (void)upper, (void)output,
      (void)workspace, (void)pool;
#endif
}

}  // namespace mxlite
