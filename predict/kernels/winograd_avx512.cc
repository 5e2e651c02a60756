/*
 * AVX-512 transforms for Winograd F(4x4, 3x3) (see winograd.h for the
 * method). Sixteen tiles travel together, one per vector lane, so every
 * transform step is one vector instruction for sixteen tiles:
 *
 *   - input: for each channel, B^T runs down the window rows, read from
 *     the plane with masked loads that supply the zero padding, a permute
 *     deinterleave sorts the results by column within the tile, and B runs
 *     across sixteen tiles at once (see TransformInputChannel). The result
 *     goes straight into the GEMM's packed-B layout (strips of NR tiles, one
 *     row per channel), so the 36 GEMMs need no packing pass of their own;
 *   - GEMMs: the 36 products M[xi] = U[xi] V[xi] are independent, so the
 *     thread pool splits them between threads instead of splitting each one;
 *   - output: for each filter, the 36 values of sixteen tiles are sixteen-
 *     wide loads from M; the transform yields the 4x4 outputs of sixteen
 *     tiles, and permutes interleave them back into output rows, which get
 *     the bias, the residual and the clamp in registers (see
 *     TransformOutputFilter).
 *
 * A first version gathered the input windows and scattered the outputs; the
 * permutes are about twice as fast on Zen 5.
 */
#include "winograd.h"

#include "x86_simd.h"

#if defined(MXLITE_X86_64)

#include <algorithm>
#include <limits>

namespace mxlite {
namespace winograd_avx512 {

constexpr int kLanes = 16;


// The six outputs of B^T applied to six inputs (one row or column).
MXLITE_TARGET_AVX512 inline void InputTransform6(const __m512 d[6], __m512 t[6]) {
  const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f), two = _mm512_set1_ps(2.f);
  // t0 = 4 d0 - 5 d2 + d4;  t5 = 4 d1 - 5 d3 + d5
  t[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
  t[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
  // t1 = -4 (d1 + d2) + (d3 + d4);  t2 = 4 (d1 - d2) + (d4 - d3)
  const __m512 d34 = _mm512_add_ps(d[3], d[4]);
  t[1] = _mm512_fnmadd_ps(four, _mm512_add_ps(d[1], d[2]), d34);
  t[2] = _mm512_fmadd_ps(four, _mm512_sub_ps(d[1], d[2]), _mm512_sub_ps(d[4], d[3]));
  // t3 = 2 (d3 - d1) + (d4 - d2);  t4 = 2 (d1 - d3) + (d4 - d2)
  const __m512 d31 = _mm512_sub_ps(d[3], d[1]), d42 = _mm512_sub_ps(d[4], d[2]);
  t[3] = _mm512_fmadd_ps(two, d31, d42);
  t[4] = _mm512_fnmadd_ps(two, d31, d42);
}

// The four outputs of A^T applied to six inputs.
MXLITE_TARGET_AVX512 inline void OutputTransform6(const __m512 m[6], __m512 y[4]) {
  const __m512 two = _mm512_set1_ps(2.f), four = _mm512_set1_ps(4.f), eight = _mm512_set1_ps(8.f);
  const __m512 s12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
  const __m512 s34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
  y[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
  y[1] = _mm512_fmadd_ps(two, d34, d12);
  y[2] = _mm512_fmadd_ps(four, s34, s12);
  y[3] = _mm512_add_ps(_mm512_fmadd_ps(eight, d34, d12), m[5]);
}

// Stores lanes [0, n) of `value`, chunk tiles t ... t + n - 1, into one V
// matrix (xi's) of the packed-B layout, channel c: tile t sits in strip
// t / nr at lane t % nr, so a run of sixteen tiles may start in one strip
// and end in the next (two masked stores).
MXLITE_TARGET_AVX512_INLINE void StoreTileRun(float* v_xi, int64_t channels, int nr, int64_t c,
                                              int64_t t, int64_t n, __m512 value) {
  const int64_t strip = t / nr, lane = t % nr;
  float* dst = v_xi + (strip * channels + c) * nr + lane;
  const int64_t first = std::min<int64_t>(n, nr - lane);
  _mm512_mask_storeu_ps(dst, LanesBelowAvx512(first), value);
  if (first < n) {
    // Lanes [first, n) go to the start of the next strip.
    float* next = v_xi + ((strip + 1) * channels + c) * nr - first;
    _mm512_mask_storeu_ps(next, static_cast<__mmask16>(LanesBelowAvx512(n) &
                                                       ~LanesBelowAvx512(first)),
                          value);
  }
}

// V for channel c of the chunk, in packed-B layout:
// v[xi * v_stride + (strip * channels + c) * nr + lane_in_strip], read
// straight from the input plane.
//
// Per tile row, sixteen tiles at a time (lanes are tiles): B^T runs down
// the six window rows in blocks of sixteen columns, read with masked loads
// that supply the zero padding (rows outside the plane are zero vectors), so
// the plane needs no padded copy; the six results go to a small stack
// buffer. Then per result row r, permutes deinterleave the row by column
// position within the tile (column k of tile i is element 4 i + k), B runs
// along k in registers, and the six outputs are stored into the packed
// strips directly. No gathers: Zen 4/5 gathers cost several times more per
// element than these permutes. (An earlier version copied each channel into
// a padded scratch and sorted the columns into 36 chunk-wide lines first:
// three more passes over the data.)
MXLITE_TARGET_AVX512 void TransformInputChannel(const WinogradGeometry& g, int64_t tile0,
                                                  int64_t count, const float* plane,
                                                  int64_t channels, int64_t strips, int nr,
                                                  int64_t c, float* v, int64_t v_stride) {
  const int64_t tiles_w = g.TilesW();
  const int64_t first_row = tile0 / tiles_w, last_row = (tile0 + count - 1) / tiles_w;
  // The last strip's lanes past the chunk's last tile hold zeros, so the
  // GEMM reads finite values there.
  if (count < strips * nr) {
    const int64_t lane = count % nr;
    for (int xi = 0; xi < 36; ++xi) {
      float* dst = v + xi * v_stride + ((strips - 1) * channels + c) * nr;
      for (int64_t at = lane; at < nr; at += kLanes) {
        _mm512_mask_storeu_ps(dst + at, LanesBelowAvx512(nr - at), _mm512_setzero_ps());
      }
    }
  }
  // idx[q]: elements q, q+4, ..., q+28 of a register pair in lanes 0..7.
  // next[k]: lanes 1..15 of one vector, then lane k of another (column 4
  // or 5 of tile i is column 0 or 1 of tile i + 1).
  __m512i idx[4];
  MXLITE_UNROLL for (int q = 0; q < 4; ++q) {
    idx[q] = _mm512_add_epi32(
        _mm512_set_epi32(60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0),
        _mm512_set1_epi32(q));
  }
  const __m512i next[2] = {
      _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1),
      _mm512_set_epi32(17, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)};
  // Zeroed once: the lanes past a short run read whatever an earlier run
  // left, which must at least have been written.
  alignas(64) float vertical[6][80] = {};
  const int64_t next_plane_bytes = g.in_h * g.in_w * int64_t{sizeof(float)};
  for (int64_t ty = first_row; ty <= last_row; ++ty) {
    const int64_t y0 = ty * 4 - g.pad_h;
    const int64_t tx_begin = ty == first_row ? tile0 % tiles_w : 0;
    const int64_t tx_end = ty == last_row ? (tile0 + count - 1) % tiles_w + 1 : tiles_w;
    for (int64_t tx0 = tx_begin; tx0 < tx_end; tx0 += kLanes) {
      const int64_t n = std::min<int64_t>(kLanes, tx_end - tx0);
      const int64_t t = ty * tiles_w + tx0 - tile0;
      // Sixteen tiles read columns x0 ... x0 + 65 of rows y0 ... y0 + 5.
      const int64_t x0 = tx0 * 4 - g.pad_w;
      // The same columns of the next channel's first four rows (the next
      // tile row reads the other two), fetched while this one computes: a
      // chunk reads a short run of rows per channel, too short for the
      // hardware prefetcher to pick up at each new plane.
      const int64_t x_first = std::max<int64_t>(x0, 0);
      const int64_t width = std::min<int64_t>(g.in_w, x0 + 4 * n + 2) - x_first;
      for (int64_t y = std::max<int64_t>(y0, 0); y < std::min(g.in_h, y0 + 4); ++y) {
        PrefetchRowAhead(plane + y * g.in_w + x_first, width, next_plane_bytes);
      }
      // Only the blocks that hold columns of these n tiles (a row's last
      // run is often short); the deinterleave below reads the other blocks
      // into lanes past n, which are never stored.
      const int blocks = static_cast<int>((4 * n + 2 + 15) / 16);
      for (int j = 0; j < blocks; ++j) {
        const int64_t x = x0 + 16 * j;
        const __mmask16 inside = LanesInsideAvx512(x, g.in_w);
        __m512 d[6], out[6];
        MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
          const int64_t y = y0 + r;
          d[r] = y >= 0 && y < g.in_h
                     ? _mm512_maskz_loadu_ps(inside, OffsetAddress(plane + y * g.in_w, x))
                     : _mm512_setzero_ps();
        }
        InputTransform6(d, out);
        MXLITE_UNROLL for (int r = 0; r < 6; ++r) _mm512_store_ps(vertical[r] + 16 * j, out[r]);
      }
      MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
        const float* row = vertical[r];
        const __m512 b0 = _mm512_load_ps(row), b1 = _mm512_load_ps(row + 16);
        const __m512 b2 = _mm512_load_ps(row + 32), b3 = _mm512_load_ps(row + 48);
        const __m512 b4 = _mm512_load_ps(row + 64);
        __m512 columns[6], out[6];
        MXLITE_UNROLL for (int q = 0; q < 4; ++q) {
          // Lanes 0..7 from b0/b1, lanes 8..15 from b2/b3 (the masked form
          // of the shuffle: GCC 12 warns about an undefined operand in the
          // plain one).
          const __m512 low = _mm512_permutex2var_ps(b0, idx[q], b1);
          const __m512 high = _mm512_permutex2var_ps(b2, idx[q], b3);
          columns[q] = _mm512_maskz_shuffle_f32x4(0xffff, low, high, 0x44);
        }
        columns[4] = _mm512_permutex2var_ps(columns[0], next[0], b4);
        columns[5] = _mm512_permutex2var_ps(columns[1], next[1], b4);
        InputTransform6(columns, out);
        MXLITE_UNROLL for (int k = 0; k < 6; ++k) {
          StoreTileRun(v + (r * 6 + k) * v_stride, channels, nr, c, t, n, out[k]);
        }
      }
    }
  }
}

// Output plane of filter f from M[xi][f][tile] (row stride count), with the
// epilogue: + bias, + residual plane (or null), clamp.
//
// The mirror of TransformInputChannel. First, sixteen consecutive tiles at a
// time, A^T . A turns the 36 values of each tile into its 4x4 outputs, kept
// as 16 lines, lines[(r * 4 + k) * stride + t] = output (r, k) of chunk tile
// t. Then, per tile row and output row, permutes interleave the four lines
// k = 0..3 of sixteen tiles into 64 consecutive output columns, which get the
// epilogue (contiguous residual loads) and masked stores at the edges.
MXLITE_TARGET_AVX512 void TransformOutputFilter(const WinogradGeometry& g, int64_t tile0,
                                                  int64_t count, const float* m,
                                                  const float* m_half, int64_t m_stride,
                                                  int64_t line_stride,
                                                  float* lines, int64_t f,
                                                  float bias, const float* residual,
                                                  bool clamp, float lower, float upper,
                                                  float* out) {
  const float* src = m + f * count;
  const float* src_half = m_half ? m_half + f * count : nullptr;
  for (int64_t t0 = 0; t0 < count; t0 += kLanes) {
    const int64_t n = std::min<int64_t>(kLanes, count - t0);
    const __mmask16 live = static_cast<__mmask16>((1u << n) - 1);
    __m512 rows[6][4];  // A^T applied along each row of the 6x6 product
    MXLITE_UNROLL for (int r = 0; r < 6; ++r) {
      __m512 values[6];
      MXLITE_UNROLL for (int k = 0; k < 6; ++k) {
        values[k] = _mm512_maskz_loadu_ps(live, src + (r * 6 + k) * m_stride + t0);
        if (src_half) {
          // The second half's sum added last, as a whole-depth GEMM does.
          values[k] = _mm512_add_ps(
              _mm512_maskz_loadu_ps(live, src_half + (r * 6 + k) * m_stride + t0), values[k]);
        }
      }
      OutputTransform6(values, rows[r]);
    }
    MXLITE_UNROLL for (int k = 0; k < 4; ++k) {
      const __m512 column[6] = {rows[0][k], rows[1][k], rows[2][k],
                                rows[3][k], rows[4][k], rows[5][k]};
      __m512 y[4];
      OutputTransform6(column, y);
      MXLITE_UNROLL for (int r = 0; r < 4; ++r) {
        _mm512_storeu_ps(lines + (r * 4 + k) * line_stride + t0, y[r]);
      }
    }
  }

  // Interleave indices: pairs (a[i], b[i]) for i in 0..7 and 8..15, then
  // 64-bit pairs of those for tiles 0..3 / 4..7 of each half.
  const __m512i pair_lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i pair_hi =
      _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  const __m512i quad_lo =
      _mm512_set_epi32(23, 22, 7, 6, 21, 20, 5, 4, 19, 18, 3, 2, 17, 16, 1, 0);
  const __m512i quad_hi =
      _mm512_set_epi32(31, 30, 15, 14, 29, 28, 13, 12, 27, 26, 11, 10, 25, 24, 9, 8);
  const __m512 bias_v = _mm512_set1_ps(bias);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
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
        const __m512 l0 = _mm512_loadu_ps(line), l1 = _mm512_loadu_ps(line + line_stride);
        const __m512 l2 = _mm512_loadu_ps(line + 2 * line_stride);
        const __m512 l3 = _mm512_loadu_ps(line + 3 * line_stride);
        const __m512 a_lo = _mm512_permutex2var_ps(l0, pair_lo, l1);
        const __m512 a_hi = _mm512_permutex2var_ps(l0, pair_hi, l1);
        const __m512 b_lo = _mm512_permutex2var_ps(l2, pair_lo, l3);
        const __m512 b_hi = _mm512_permutex2var_ps(l2, pair_hi, l3);
        const __m512 quads[4] = {_mm512_permutex2var_ps(a_lo, quad_lo, b_lo),
                                 _mm512_permutex2var_ps(a_lo, quad_hi, b_lo),
                                 _mm512_permutex2var_ps(a_hi, quad_lo, b_hi),
                                 _mm512_permutex2var_ps(a_hi, quad_hi, b_hi)};
        float* out_row = out + y * g.out_w;
        const float* res_row = residual ? residual + y * g.out_w : nullptr;
        MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
          const int64_t x = x0 + 16 * j;
          if (x >= x_end) break;
          const int64_t valid = std::min<int64_t>(16, x_end - x);
          const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
          __m512 value = _mm512_add_ps(quads[j], bias_v);
          if (res_row) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, res_row + x));
          if (clamp) value = ClampAvx512(lo, hi, value);
          _mm512_mask_storeu_ps(out_row + x, mask, value);
        }
      }
    }
  }
}

// The transforms for WinogradConvolveVector (winograd.h).
struct Transforms {
  static constexpr int64_t kLanes = winograd_avx512::kLanes;
  static constexpr bool kReadsPlane = true;
  static constexpr auto Input = &TransformInputChannel;
  static constexpr auto Output = &TransformOutputFilter;
};

void Convolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
              const float* input, const float* bias, const float* residual, float lower,
              float upper, float* output, float* workspace, ThreadPool* pool) {
  WinogradConvolveVector<Transforms>(g, packed, input, bias, residual, lower, upper, output,
                                     workspace, pool);
}

}  // namespace winograd_avx512
}  // namespace mxlite

#endif  // x86-64
