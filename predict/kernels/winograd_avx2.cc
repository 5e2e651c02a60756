/*
 * AVX2 transforms for Winograd F(4x4, 3x3) (see winograd.h for the
 * method): the eight-lane counterpart of winograd_avx512.cc, with the same
 * three phases (input transform written in the GEMM's packed-B layout, 36
 * independent GEMMs split between threads, output transform with the
 * epilogue in registers). Eight tiles travel together, one per lane.
 *
 * AVX2 has no two-source permute, so the stride-4 (de)interleaves between
 * columns of the plane and tiles in lanes are 4x4 transposes inside the
 * 128-bit halves: when a register holds tile i in its low half and tile
 * i + 4 in its high half (one 16-byte load and one 16-byte insert), the
 * transpose of four such registers gives column k of tiles 0..7 in natural
 * order. That is why the input side applies B before B^T (V = B^T (d B),
 * equal in exact arithmetic): the rows of a window are loaded in that
 * paired form and transposed first, so the transform down the rows can run
 * on whole registers of eight tiles, with no scratch round trip in between.
 */
#include "winograd.h"

#include "padding.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

#include <algorithm>
#include <limits>

namespace mxlite {
namespace winograd_avx2 {

constexpr int kLanes = 8;


// Tile i in the low half and tile i + 4 in the high half: four floats at
// `at` and four at at + 16.
MXLITE_TARGET_AVX2_INLINE __m256 LoadPaired(const float* at) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(at)), _mm_loadu_ps(at + 16), 1);
}

// The six outputs of B^T applied to six inputs (one row or column).
MXLITE_TARGET_AVX2_INLINE void InputTransform6(const __m256 d[6], __m256 t[6]) {
  const __m256 four = _mm256_set1_ps(4.f), five = _mm256_set1_ps(5.f), two = _mm256_set1_ps(2.f);
  // t0 = 4 d0 - 5 d2 + d4;  t5 = 4 d1 - 5 d3 + d5
  t[0] = _mm256_fmadd_ps(four, d[0], _mm256_fnmadd_ps(five, d[2], d[4]));
  t[5] = _mm256_fmadd_ps(four, d[1], _mm256_fnmadd_ps(five, d[3], d[5]));
  // t1 = -4 (d1 + d2) + (d3 + d4);  t2 = 4 (d1 - d2) + (d4 - d3)
  const __m256 d34 = _mm256_add_ps(d[3], d[4]);
  t[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d[1], d[2]), d34);
  t[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
  // t3 = 2 (d3 - d1) + (d4 - d2);  t4 = 2 (d1 - d3) + (d4 - d2)
  const __m256 d31 = _mm256_sub_ps(d[3], d[1]), d42 = _mm256_sub_ps(d[4], d[2]);
  t[3] = _mm256_fmadd_ps(two, d31, d42);
  t[4] = _mm256_fnmadd_ps(two, d31, d42);
}

// The four outputs of A^T applied to six inputs.
MXLITE_TARGET_AVX2_INLINE void OutputTransform6(const __m256 m[6], __m256 y[4]) {
  const __m256 two = _mm256_set1_ps(2.f), four = _mm256_set1_ps(4.f), eight = _mm256_set1_ps(8.f);
  const __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
  const __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
  y[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  y[1] = _mm256_fmadd_ps(two, d34, d12);
  y[2] = _mm256_fmadd_ps(four, s34, s12);
  y[3] = _mm256_add_ps(_mm256_fmadd_ps(eight, d34, d12), m[5]);
}

// Columns 0..5 of eight tiles whose windows start at row[0], row[4], ...,
// row[28]: column k of tile i in lane i of columns[k].
MXLITE_TARGET_AVX2_INLINE void WindowColumns(const float* row, __m256 columns[6]) {
  // q[i]: tiles i and i + 4 (q[4]: tiles 4 and 8, whose first two columns
  // are columns 4 and 5 of tiles 3 and 7).
  __m256 q[5];
  MXLITE_UNROLL for (int i = 0; i < 5; ++i) q[i] = LoadPaired(row + 4 * i);
  const __m256 lo01 = _mm256_unpacklo_ps(q[0], q[1]), hi01 = _mm256_unpackhi_ps(q[0], q[1]);
  const __m256 lo23 = _mm256_unpacklo_ps(q[2], q[3]), hi23 = _mm256_unpackhi_ps(q[2], q[3]);
  columns[0] = _mm256_shuffle_ps(lo01, lo23, 0x44);
  columns[1] = _mm256_shuffle_ps(lo01, lo23, 0xee);
  columns[2] = _mm256_shuffle_ps(hi01, hi23, 0x44);
  columns[3] = _mm256_shuffle_ps(hi01, hi23, 0xee);
  const __m256 lo12 = _mm256_unpacklo_ps(q[1], q[2]), lo34 = _mm256_unpacklo_ps(q[3], q[4]);
  columns[4] = _mm256_shuffle_ps(lo12, lo34, 0x44);
  columns[5] = _mm256_shuffle_ps(lo12, lo34, 0xee);
}

// V for channel c of the chunk, in packed-B layout:
// v[((xi * strips + strip) * channels + c) * nr + lane_in_strip].
//
// Two passes. First, per tile row, eight tiles at a time, each of the six
// window rows is transposed into columns (WindowColumns) and B runs along
// them; the results go to 36 lines, lines[(r * 6 + k) * stride + t] =
// (d B)[r][k] of chunk tile t, where t runs across tile rows. Second, eight
// consecutive tiles at a time, B^T runs down r and the 36 results are
// stored into the packed strips (nr is a multiple of eight).
MXLITE_TARGET_AVX2 void TransformInputChannel(const WinogradGeometry& g, int64_t tile0,
                                              int64_t count, const float* scratch,
                                              int64_t scratch_w, float* lines, int64_t channels,
                                              int64_t strips, int nr, int64_t c, float* v,
                                              int64_t v_stride) {
  const int64_t tiles_w = g.TilesW();
  const int64_t first_row = tile0 / tiles_w, last_row = (tile0 + count - 1) / tiles_w;
  // The stores below write whole vectors: up to seven lanes past a tile
  // row, rewritten by the next row, and past the chunk's last tile, which
  // the extra kLanes floats per line keep off the next line.
  const int64_t line_stride = strips * nr + kLanes;
  // Lanes past the last tile stay zero or finite, so the GEMM reads finite
  // values there.
  for (int line = 0; line < 36; ++line) {
    std::fill(lines + line * line_stride + count, lines + (line + 1) * line_stride, 0.f);
  }
  for (int64_t ty = first_row; ty <= last_row; ++ty) {
    const float* window = scratch + (ty - first_row) * 4 * scratch_w;
    const int64_t tx_begin = ty == first_row ? tile0 % tiles_w : 0;
    const int64_t tx_end = ty == last_row ? (tile0 + count - 1) % tiles_w + 1 : tiles_w;
    for (int64_t tx0 = tx_begin; tx0 < tx_end; tx0 += kLanes) {
      const int64_t t = ty * tiles_w + tx0 - tile0;
      // Eight tiles read columns 4*tx0 ... 4*tx0 + 35 of six rows.
      const float* base = window + 4 * tx0;
      MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
        __m256 columns[6], out[6];
        WindowColumns(base + r * scratch_w, columns);
        InputTransform6(columns, out);
        MXLITE_UNROLL for (int k = 0; k < 6; ++k) {
          _mm256_storeu_ps(lines + (r * 6 + k) * line_stride + t, out[k]);
        }
      }
    }
  }
  for (int64_t first_tile = 0; first_tile < strips * nr; first_tile += kLanes) {
    float* dst = v + ((first_tile / nr) * channels + c) * nr + first_tile % nr;
    MXLITE_UNROLL for (int k = 0; k < 6; ++k) {
      __m256 d[6], out[6];
      MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
        d[r] = _mm256_loadu_ps(lines + (r * 6 + k) * line_stride + first_tile);
      }
      InputTransform6(d, out);
      MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
        _mm256_storeu_ps(dst + (r * 6 + k) * v_stride, out[r]);
      }
    }
  }
}

// Output plane of filter f from M[xi][f][tile] (row stride count), with the
// epilogue: + bias, + residual plane (or null), clamp.
//
// The mirror of TransformInputChannel. First, eight consecutive tiles at a
// time, A^T . A turns the 36 values of each tile into its 4x4 outputs, kept
// as 16 lines, lines[(r * 4 + k) * stride + t] = output (r, k) of chunk tile
// t. Then, per tile row and output row, a 4x4 transpose inside the 128-bit
// halves of the lines k = 0..3 of eight tiles gives tiles i and i + 4 in one
// register, and two cross-half permutes put them in output order: 32
// consecutive output columns, which get the epilogue (contiguous residual
// loads) and masked stores at the right edge.
MXLITE_TARGET_AVX2 void TransformOutputFilter(const WinogradGeometry& g, int64_t tile0,
                                              int64_t count, const float* m, int64_t m_stride,
                                              int64_t line_stride, float* lines, int64_t f,
                                              float bias, const float* residual, bool clamp,
                                              float lower, float upper, float* out) {
  const float* src = m + f * count;
  for (int64_t t0 = 0; t0 < count; t0 += kLanes) {
    const int64_t n = std::min<int64_t>(kLanes, count - t0);
    const __m256i live = LanesBelowAvx2(n);
    __m256 rows[6][4];  // A^T applied along each row of the 6x6 product
    MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
      __m256 values[6];
      MXLITE_UNROLL for (int k = 0; k < 6; ++k) {
        const float* at = src + (r * 6 + k) * m_stride + t0;
        values[k] = n == kLanes ? _mm256_loadu_ps(at) : _mm256_maskload_ps(at, live);
      }
      OutputTransform6(values, rows[r]);
    }
    MXLITE_UNROLL for (int k = 0; k < 4; ++k) {
      const __m256 column[6] = {rows[0][k], rows[1][k], rows[2][k],
                                rows[3][k], rows[4][k], rows[5][k]};
      __m256 y[4];
      OutputTransform6(column, y);
      MXLITE_UNROLL for (int r = 0; r < 4; ++r) {
        _mm256_storeu_ps(lines + (r * 4 + k) * line_stride + t0, y[r]);
      }
    }
  }

  const __m256 bias_v = _mm256_set1_ps(bias);
  const __m256 lo = _mm256_set1_ps(lower), hi = _mm256_set1_ps(upper);
  const int64_t tiles_w = g.TilesW();
  const int64_t first_row = tile0 / tiles_w, last_row = (tile0 + count - 1) / tiles_w;
  for (int64_t ty = first_row; ty <= last_row; ++ty) {
    const int64_t tx_begin = ty == first_row ? tile0 % tiles_w : 0;
    const int64_t tx_end = ty == last_row ? (tile0 + count - 1) % tiles_w + 1 : tiles_w;
    for (int64_t tx0 = tx_begin; tx0 < tx_end; tx0 += kLanes) {
      const int64_t n = std::min<int64_t>(kLanes, tx_end - tx0);
      const int64_t t = ty * tiles_w + tx0 - tile0;
      const int64_t x0 = tx0 * 4;
      // Output columns [x0, x_end) belong to these tiles and the plane.
      const int64_t x_end = std::min(g.out_w, x0 + 4 * n);
      MXLITE_UNROLL for (int r = 0; r < 4; ++r) {
        const int64_t y = ty * 4 + r;
        if (y >= g.out_h) break;
        const float* line = lines + r * 4 * line_stride + t;
        const __m256 l0 = _mm256_loadu_ps(line), l1 = _mm256_loadu_ps(line + line_stride);
        const __m256 l2 = _mm256_loadu_ps(line + 2 * line_stride);
        const __m256 l3 = _mm256_loadu_ps(line + 3 * line_stride);
        // tiles[i]: the four outputs of tile i (low half) and tile i + 4.
        const __m256 lo01 = _mm256_unpacklo_ps(l0, l1), hi01 = _mm256_unpackhi_ps(l0, l1);
        const __m256 lo23 = _mm256_unpacklo_ps(l2, l3), hi23 = _mm256_unpackhi_ps(l2, l3);
        const __m256 tiles[4] = {_mm256_shuffle_ps(lo01, lo23, 0x44),
                                 _mm256_shuffle_ps(lo01, lo23, 0xee),
                                 _mm256_shuffle_ps(hi01, hi23, 0x44),
                                 _mm256_shuffle_ps(hi01, hi23, 0xee)};
        const __m256 octets[4] = {_mm256_permute2f128_ps(tiles[0], tiles[1], 0x20),
                                  _mm256_permute2f128_ps(tiles[2], tiles[3], 0x20),
                                  _mm256_permute2f128_ps(tiles[0], tiles[1], 0x31),
                                  _mm256_permute2f128_ps(tiles[2], tiles[3], 0x31)};
        float* out_row = out + y * g.out_w;
        const float* res_row = residual ? residual + y * g.out_w : nullptr;
        MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
          const int64_t x = x0 + 8 * j;
          if (x >= x_end) break;
          const int64_t valid = std::min<int64_t>(kLanes, x_end - x);
          __m256 value = _mm256_add_ps(octets[j], bias_v);
          if (valid == kLanes) {
            if (res_row) value = _mm256_add_ps(value, _mm256_loadu_ps(res_row + x));
            // max(lower, x), then min(upper, .): a NaN in x passes through.
            if (clamp) value = ClampAvx2(lo, hi, value);
            _mm256_storeu_ps(out_row + x, value);
          } else {
            const __m256i mask = LanesBelowAvx2(valid);
            if (res_row) value = _mm256_add_ps(value, _mm256_maskload_ps(res_row + x, mask));
            if (clamp) value = ClampAvx2(lo, hi, value);
            _mm256_maskstore_ps(out_row + x, mask, value);
          }
        }
      }
    }
  }
}

// The transforms for WinogradConvolveVector (winograd.h).
struct Transforms {
  static constexpr int64_t kLanes = winograd_avx2::kLanes;
  static constexpr bool kReadsPlane = false;
  static constexpr auto Input = &TransformInputChannel;
  static constexpr auto Output = &TransformOutputFilter;
};

void Convolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
              const float* input, const float* bias, const float* residual, float lower,
              float upper, float* output, float* workspace, ThreadPool* pool) {
  WinogradConvolveVector<Transforms>(g, packed, input, bias, residual, lower, upper, output,
                                     workspace, pool);
}

}  // namespace winograd_avx2
}  // namespace mxlite

#endif  // x86-64
