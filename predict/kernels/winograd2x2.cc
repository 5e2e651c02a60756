#include "winograd2x2.h"

#include "cpu_features.h"
#include "winograd.h"
#include "x86_simd.h"

#include <algorithm>
#include <limits>

namespace mxlite {
namespace winograd2x2_cc {

constexpr int kLanes = 16;

// G (4x3) of F(2x2, 3x3) with interpolation points 0, 1, -1, infinity.
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

#if defined(MXLITE_X86_64)

// Fewest channels in and filters out (see Winograd2x2Pays).
constexpr int64_t kMinChannels = 32;
constexpr int64_t kMinFilters = 32;

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

// A group is group_rows consecutive tile rows (Winograd2x2Geometry::
// GroupRows): lane l holds tile (group_row0 + l / tiles_w, l % tiles_w).
// A tile row of at most 7 tiles (kWinograd2x2MaxSide) reads columns -pad_w ...
// 2 tiles_w + 1 - pad_w of its window rows: sixteen floats at most.

// V[xi][c][group's tiles] for one channel plane. Per window row i and pair
// of tile rows, one masked load per tile row reads the plane row from
// column -pad_w (the mask supplies the zero padding; rows outside the plane
// are zero vectors), and per window column j one two-source permute puts
// column 2 tx + j of both rows into the pair's lanes (pair_index[p][j]),
// merged in by the pair's lane mask. Then B^T down the window's columns,
// B along its rows; the group's tiles' lanes are stored.
MXLITE_TARGET_AVX512 void TransformInput(const Winograd2x2Geometry& g, const float* plane,
                                         int64_t group_row0, int64_t group_rows,
                                         const int32_t* pair_index, const uint16_t* pair_lanes,
                                         float* v, int64_t xi_stride) {
  const int64_t tiles_w = g.TilesW();
  const __mmask16 inside = LanesInsideAvx512(-g.pad_w, g.in_w);
  const __mmask16 live = LanesBelowAvx512(group_rows * tiles_w);
  __m512 d[4][4];
  MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
    MXLITE_UNROLL for (int j = 0; j < 4; ++j) d[i][j] = _mm512_setzero_ps();
  }
  MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
    for (int64_t pair = 0; 2 * pair < group_rows; ++pair) {
      __m512 rows[2];
      MXLITE_UNROLL for (int k = 0; k < 2; ++k) {
        const int64_t tile_row = 2 * pair + k;
        const int64_t y = 2 * (group_row0 + tile_row) - g.pad_h + i;
        rows[k] = tile_row < group_rows && y >= 0 && y < g.in_h
                      ? _mm512_maskz_loadu_ps(inside, OffsetAddress(plane + y * g.in_w, -g.pad_w))
                      : _mm512_setzero_ps();
      }
      MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
        const __m512i index = _mm512_loadu_si512(pair_index + (pair * 4 + j) * kLanes);
        const __m512 columns = _mm512_permutex2var_ps(rows[0], index, rows[1]);
        d[i][j] = _mm512_mask_mov_ps(d[i][j], pair_lanes[pair], columns);
      }
    }
  }
  __m512 t[4][4];  // t[i][j] = (B^T d)[i][j]
  MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
    const __m512 column[4] = {d[0][j], d[1][j], d[2][j], d[3][j]};
    __m512 out[4];
    InputTransform4(column, out);
    MXLITE_UNROLL for (int i = 0; i < 4; ++i) t[i][j] = out[i];
  }
  MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
    __m512 out[4];
    InputTransform4(t[i], out);
    MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
      _mm512_mask_storeu_ps(v + (i * 4 + j) * xi_stride, live, out[j]);
    }
  }
}

// Output pixels of one filter for a group's tiles from M[xi][f][tiles]:
// A^T . A, then per tile row and output row one two-source permute
// interleaves the row's outputs (a, 0) and (a, 1) into output columns
// 0 ... 2 tiles_w - 1; + bias, + residual, clamp, and a masked store of
// out_w columns.
MXLITE_TARGET_AVX512 void TransformOutput(const Winograd2x2Geometry& g, const float* m,
                                          const float* m_half, int64_t xi_stride,
                                          int64_t group_row0,
                                          int64_t group_rows, float bias,
                                          const float* residual, bool clamp, float lower,
                                          float upper, float* out) {
  const int64_t tiles_w = g.TilesW();
  const __mmask16 live = LanesBelowAvx512(group_rows * tiles_w);
  __m512 rows[4][2];  // A^T applied along each row of the 4x4 product
  MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
    __m512 values[4];
    MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
      values[j] = _mm512_maskz_loadu_ps(live, m + (i * 4 + j) * xi_stride);
      if (m_half) {
        // The second half's sum added last, as a whole-depth GEMM does.
        values[j] = _mm512_add_ps(_mm512_maskz_loadu_ps(live, m_half + (i * 4 + j) * xi_stride),
                                  values[j]);
      }
    }
    OutputTransform4(values, rows[i]);
  }
  __m512 y[2][2];  // y[a][b]: output pixel (a, b) of each lane's tile
  MXLITE_UNROLL for (int b = 0; b < 2; ++b) {
    const __m512 column[4] = {rows[0][b], rows[1][b], rows[2][b], rows[3][b]};
    __m512 pixels[2];
    OutputTransform4(column, pixels);
    y[0][b] = pixels[0];
    y[1][b] = pixels[1];
  }
  const __m512 bias_v = _mm512_set1_ps(bias);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
  // Output column x of tile row k: pixel (a, x % 2) of lane k tiles_w + x / 2.
  const __m512i interleave =
      _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __mmask16 columns = LanesBelowAvx512(g.out_w);
  for (int64_t k = 0; k < group_rows; ++k) {
    const __m512i index =
        _mm512_add_epi32(interleave, _mm512_set1_epi32(static_cast<int>(k * tiles_w)));
    MXLITE_UNROLL for (int a = 0; a < 2; ++a) {
      const int64_t row = 2 * (group_row0 + k) + a;
      if (row >= g.out_h) break;
      __m512 value = _mm512_add_ps(_mm512_permutex2var_ps(y[a][0], index, y[a][1]), bias_v);
      if (residual) {
        value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(columns, residual + row * g.out_w));
      }
      if (clamp) value = ClampAvx512(lo, hi, value);
      _mm512_mask_storeu_ps(out + row * g.out_w, columns, value);
    }
  }
}

#endif  // MXLITE_X86_64

}  // namespace winograd2x2_cc

bool Winograd2x2Geometry::SplitsDepth() const { return WinogradSplitsDepth(channels, filters); }

bool Winograd2x2Pays(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                        int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                        int64_t filters, int64_t out_h, int64_t out_w) {
#if defined(MXLITE_X86_64)
  using namespace winograd2x2_cc;
  return WinogradKernels().small_tiles && kernel_h == 3 && kernel_w == 3 && stride_h == 1 &&
         stride_w == 1 && dilate_h == 1 && dilate_w == 1 && groups == 1 &&
         out_h <= kWinograd2x2MaxSide && out_w <= kWinograd2x2MaxSide && channels >= kMinChannels &&
         filters >= kMinFilters;
#else
  (void)kernel_h, (void)kernel_w, (void)stride_h, (void)stride_w, (void)dilate_h,
      (void)dilate_w, (void)groups, (void)channels, (void)filters, (void)out_h, (void)out_w;
  return false;
#endif  // defined(MXLITE_X86_64)
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
                                         g.filters, g.channels, false, nullptr,
                                         g.SplitsDepth() ? g.channels / 2 : 0));
  }
  // The input permutes' indices and lane masks, per pair of tile rows in a
  // group (see TransformInput).
  const int64_t tiles_w = g.TilesW();
  const int64_t pairs = (g.GroupRows() + 1) / 2;
  pair_index_.assign(static_cast<size_t>(pairs * 4 * kLanes), 0);
  pair_lanes_.assign(static_cast<size_t>(pairs), 0);
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const int64_t lane_end = std::min<int64_t>(kLanes, 2 * (pair + 1) * tiles_w);
    for (int64_t lane = 2 * pair * tiles_w; lane < lane_end; ++lane) {
      const int64_t local = lane - 2 * pair * tiles_w;
      const int64_t row_in_pair = local / tiles_w, tx = local % tiles_w;
      for (int j = 0; j < 4; ++j) {
        pair_index_[static_cast<size_t>((pair * 4 + j) * kLanes + lane)] =
            static_cast<int32_t>(row_in_pair * kLanes + 2 * tx + j);
      }
      pair_lanes_[static_cast<size_t>(pair)] =
          static_cast<uint16_t>(pair_lanes_[static_cast<size_t>(pair)] | (1u << lane));
    }
  }
  return Status();
}

int64_t Winograd2x2Plan::ImagesPerPass(int64_t batch) const {
  const int64_t by_columns = kWinograd2x2PassColumns / std::max<int64_t>(1, geometry_.Tiles());
  const int64_t by_bytes =
      kWinograd2x2PassBytes / std::max<int64_t>(1, static_cast<int64_t>(WorkspaceBytes(1)));
  return std::max<int64_t>(1, std::min({batch, by_columns, by_bytes}));
}

void Winograd2x2Plan::Convolve(int64_t images, const float* input, const float* bias,
                               const float* residual, float lower, float upper, float* output,
                               float* workspace, ThreadPool* pool) const {
#if defined(MXLITE_X86_64)
  const Winograd2x2Geometry& g = geometry_;
  const int64_t tiles = g.Tiles(), tiles_w = g.TilesW();
  const int64_t group_rows = g.GroupRows();
  const int64_t groups = (g.TilesH() + group_rows - 1) / group_rows;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const int64_t in_image = g.channels * in_plane, out_image = g.filters * out_plane;
  // A row of V and M: every image's tiles, image after image.
  const int64_t columns = images * tiles;
  float* v = workspace;                             // [16][channels][columns]
  float* m = workspace + 16 * g.channels * columns;  // [16][filters][columns]
  const int64_t v_stride = g.channels * columns, m_stride = g.filters * columns;
  const bool clamp = ClampIsSet(lower, upper);
  // Tile rows [row0, row0 + rows) of group `group`.
  auto group_span = [&](int64_t group, int64_t* row0, int64_t* rows) {
    *row0 = group * group_rows;
    *rows = std::min(group_rows, g.TilesH() - *row0);
  };
  auto transform_input = [&](int64_t c) {
    for (int64_t image = 0; image < images; ++image) {
      for (int64_t group = 0; group < groups; ++group) {
        int64_t row0 = 0, rows = 0;
        group_span(group, &row0, &rows);
        winograd2x2_cc::TransformInput(g, input + image * in_image + c * in_plane, row0, rows,
                                       pair_index_.data(), pair_lanes_.data(),
                                       v + c * columns + image * tiles + row0 * tiles_w,
                                       v_stride);
      }
    }
  };
  // With the depth split on two threads (see WinogradSplitsDepth), each
  // transforms half the channels and multiplies them into its own M; the
  // second half's is m_half.
  float* m_half = nullptr;
  if (WinogradRunsSplit(g.SplitsDepth(), pool)) {
    m_half = m + 16 * m_stride;
    ParallelFor(pool, 2, [&](int64_t half) {
      for (int64_t c = half * g.channels / 2; c < (half + 1) * g.channels / 2; ++c) {
        transform_input(c);
      }
      float* m_out = half == 0 ? m : m_half;
      for (int64_t xi = 0; xi < 16; ++xi) {
        GemmPackedSegments(packed_[xi], half, half + 1, v + xi * v_stride, columns, columns,
                           m_out + xi * m_stride, columns, GemmEpilogue(), nullptr);
      }
    });
  } else {
    ParallelFor(pool, g.channels, transform_input);
    ParallelFor(pool, 16, [&](int64_t xi) {
      GemmPacked(packed_[xi], v + xi * v_stride, columns, columns, m + xi * m_stride, columns,
                 GemmEpilogue(), nullptr);
    });
  }
  ParallelFor(pool, g.filters, [&](int64_t f) {
    for (int64_t image = 0; image < images; ++image) {
      for (int64_t group = 0; group < groups; ++group) {
        int64_t row0 = 0, rows = 0;
        group_span(group, &row0, &rows);
        const int64_t at = f * columns + image * tiles + row0 * tiles_w;
        const int64_t out_at = image * out_image + f * out_plane;
        winograd2x2_cc::TransformOutput(g, m + at, m_half ? m_half + at : nullptr, m_stride,
                                        row0, rows, bias ? bias[f] : 0.f,
                                        residual ? residual + out_at : nullptr, clamp, lower,
                                        upper, output + out_at);
      }
    }
  });
#else
  // Winograd2x2Pays is false without AVX-512: never called.
  (void)images, (void)input, (void)bias, (void)residual, (void)lower, (void)upper,
      (void)output, (void)workspace, (void)pool;
#endif  // defined(MXLITE_X86_64)
}

}  // namespace mxlite
