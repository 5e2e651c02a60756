/*
 * AVX-512 transforms for Winograd F(4x4, 3x3) (see winograd.h for the
 * method). Sixteen tiles travel together, one per vector lane, so every
 * transform step is one vector instruction for sixteen tiles:
 *
 *   - input: for each channel, the rows the chunk's tiles read are first
 *     copied into a zero-padded scratch, so windows need no bounds checks;
 *     B^T runs down whole rows, a permute deinterleave sorts the results by
 *     column within the tile, and B runs across sixteen tiles at once (see
 *     TransformInputChannel). The result goes straight into the GEMM's
 *     packed-B layout (strips of NR tiles, one row per channel), so the 36
 *     GEMMs need no packing pass of their own;
 *   - GEMMs: the 36 products M[xi] = U[xi] V[xi] are independent, so the
 *     thread pool splits them between threads instead of splitting each one;
 *   - output: for each filter, the 36 values of sixteen tiles are sixteen-
 *     wide loads from M; the transform yields the 4x4 outputs of sixteen
 *     tiles, which get the bias, the residual (a masked gather) and the clamp
 *     in registers and leave with masked scatters (masks drop the positions
 *     past the output's edge).
 *
 * Scatters are slower per element than plain stores, but each output is
 * written once, while the GEMMs do O(C) work per output.
 */
#include "winograd.h"

#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__GNUC__) || defined(__clang__)
#define MXLITE_WINOGRAD_AVX512 __attribute__((target("avx512f")))
#else
#define MXLITE_WINOGRAD_AVX512
#endif

namespace mxlite {
namespace winograd_avx512 {

constexpr int kLanes = 16;

// Floats between the V (or M) matrices of two consecutive xi. The 36 stores
// of one tile group go to the 36 matrices; were their distance a multiple of
// 4 KiB, all would map to one L1 set and evict each other, so the stride is
// padded by one cache line.
inline int64_t XiStride(int64_t floats) { return floats + 16; }

// Where the sixteen tiles of one group put their output: offsets of their
// 4x4 blocks in the output plane, and per output position (r, k) which
// lanes lie inside the output.
struct TileGroup {
  alignas(64) int32_t out_offset[kLanes];
  __mmask16 live;             // lanes that are tiles of the chunk
  __mmask16 position[4][4];   // live lanes whose output (r, k) is inside the plane
};

// The six outputs of B^T applied to six inputs (one row or column).
MXLITE_WINOGRAD_AVX512 inline void InputTransform6(const __m512 d[6], __m512 t[6]) {
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
MXLITE_WINOGRAD_AVX512 inline void OutputTransform6(const __m512 m[6], __m512 y[4]) {
  const __m512 two = _mm512_set1_ps(2.f), four = _mm512_set1_ps(4.f), eight = _mm512_set1_ps(8.f);
  const __m512 s12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
  const __m512 s34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
  y[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
  y[1] = _mm512_fmadd_ps(two, d34, d12);
  y[2] = _mm512_fmadd_ps(four, s34, s12);
  y[3] = _mm512_add_ps(_mm512_fmadd_ps(eight, d34, d12), m[5]);
}

// Groups for `lanes` lane slots starting at tile0, of which the first
// `count` are tiles.
MXLITE_WINOGRAD_AVX512 void BuildGroups(const WinogradGeometry& g, int64_t tile0, int64_t lanes,
                                        int64_t count, std::vector<TileGroup>* groups) {
  const int64_t tiles_w = g.TilesW();
  groups->resize(static_cast<size_t>((lanes + kLanes - 1) / kLanes));
  for (size_t index = 0; index < groups->size(); ++index) {
    TileGroup& group = (*groups)[index];
    group.live = 0;
    for (int r = 0; r < 4; ++r) {
      for (int k = 0; k < 4; ++k) group.position[r][k] = 0;
    }
    for (int lane = 0; lane < kLanes; ++lane) {
      const int64_t i = static_cast<int64_t>(index) * kLanes + lane;
      if (i >= count) {
        group.out_offset[lane] = 0;
        continue;
      }
      const int64_t tile = tile0 + i;
      const int64_t ty = tile / tiles_w, tx = tile % tiles_w;
      group.out_offset[lane] = static_cast<int32_t>(ty * 4 * g.out_w + tx * 4);
      const __mmask16 bit = static_cast<__mmask16>(1u << lane);
      group.live |= bit;
      for (int r = 0; r < 4; ++r) {
        for (int k = 0; k < 4; ++k) {
          if (ty * 4 + r < g.out_h && tx * 4 + k < g.out_w) group.position[r][k] |= bit;
        }
      }
    }
  }
}

// Copies the input rows that tiles [tile0, tile0 + count) read into a zero-
// padded scratch of scratch_w columns: scratch row 0 is input row
// 4 * first_tile_row - pad_h, scratch column 0 is input column -pad_w.
void PadRows(const WinogradGeometry& g, const float* plane, int64_t tile0, int64_t scratch_w,
             int64_t scratch_h, float* scratch) {
  const int64_t first_row = (tile0 / g.TilesW()) * 4 - g.pad_h;
  for (int64_t row = 0; row < scratch_h; ++row) {
    float* dst = scratch + row * scratch_w;
    const int64_t y = first_row + row;
    if (y < 0 || y >= g.in_h) {
      std::fill(dst, dst + scratch_w, 0.f);
      continue;
    }
    const int64_t left = std::min<int64_t>(g.pad_w, scratch_w);
    std::fill(dst, dst + left, 0.f);
    const int64_t copy = std::max<int64_t>(0, std::min<int64_t>(g.in_w, scratch_w - left));
    std::memcpy(dst + left, plane + y * g.in_w, sizeof(float) * copy);
    std::fill(dst + left + copy, dst + scratch_w, 0.f);
  }
}

// V for channel c of the chunk, in packed-B layout:
// v[((xi * strips + strip) * channels + c) * nr + lane_in_strip].
//
// Two passes. First, per tile row, B^T runs down the columns of the window
// rows (contiguous vectors over the whole row), and the results are split by
// column position within the tile (a stride-4 deinterleave by permutes) into
// 36 lines, lines[(r * 6 + k) * stride + t] = (B^T d)[r][k] of chunk tile t,
// where t runs across tile rows. Second, sixteen consecutive tiles at a
// time, B runs along k and the 36 results are stored as two 16-lane halves
// of the packed strips. No gathers: Zen 4/5 gathers cost several times more
// per element than these permutes.
MXLITE_WINOGRAD_AVX512 void TransformInputChannel(const WinogradGeometry& g, int64_t tile0,
                                                  int64_t count, const float* scratch,
                                                  int64_t scratch_w, float* lines,
                                                  int64_t channels, int64_t strips, int nr,
                                                  int64_t c, float* v) {
  const int64_t tiles_w = g.TilesW();
  const int64_t first_row = tile0 / tiles_w, last_row = (tile0 + count - 1) / tiles_w;
  const int64_t line_stride = strips * nr;
  // Lanes past the last tile stay zero, so the GEMM reads zeros there.
  for (int line = 0; line < 36; ++line) {
    std::fill(lines + line * line_stride + count, lines + (line + 1) * line_stride, 0.f);
  }
  // idx[q]: elements q, q+4, ..., q+28 of a register pair in lanes 0..7.
  __m512i idx[4];
  for (int q = 0; q < 4; ++q) {
    idx[q] = _mm512_add_epi32(
        _mm512_set_epi32(60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0),
        _mm512_set1_epi32(q));
  }
  alignas(64) float vertical[6][80];
  for (int64_t ty = first_row; ty <= last_row; ++ty) {
    const float* window = scratch + (ty - first_row) * 4 * scratch_w;
    const int64_t tx_begin = ty == first_row ? tile0 % tiles_w : 0;
    const int64_t tx_end = ty == last_row ? (tile0 + count - 1) % tiles_w + 1 : tiles_w;
    for (int64_t tx0 = tx_begin; tx0 < tx_end; tx0 += kLanes) {
      const int64_t n = std::min<int64_t>(kLanes, tx_end - tx0);
      const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
      const int64_t t = ty * tiles_w + tx0 - tile0;
      // Sixteen tiles read columns 4*tx0 ... 4*tx0 + 65 of six rows.
      const float* base = window + 4 * tx0;
      for (int j = 0; j < 5; ++j) {
        __m512 d[6], out[6];
        for (int r = 0; r < 6; ++r) d[r] = _mm512_loadu_ps(base + r * scratch_w + 16 * j);
        InputTransform6(d, out);
        for (int r = 0; r < 6; ++r) _mm512_store_ps(vertical[r] + 16 * j, out[r]);
      }
      for (int r = 0; r < 6; ++r) {
        for (int k = 0; k < 6; ++k) {
          // Column k of tile i is element 4 i + k of the row.
          const float* src = vertical[r] + (k >= 4 ? 4 : 0);
          const __m512i index = idx[k & 3];
          const __m512 low = _mm512_permutex2var_ps(_mm512_loadu_ps(src), index,
                                                    _mm512_loadu_ps(src + 16));
          const __m512 high = _mm512_permutex2var_ps(_mm512_loadu_ps(src + 32), index,
                                                     _mm512_loadu_ps(src + 48));
          // Lanes 0..7 of low, then lanes 0..7 of high (the masked form of
          // the shuffle: GCC 12 warns about an undefined operand in the plain
          // one).
          _mm512_mask_storeu_ps(lines + (r * 6 + k) * line_stride + t, mask,
                                _mm512_maskz_shuffle_f32x4(0xffff, low, high, 0x44));
        }
      }
    }
  }
  const int64_t xi_stride = XiStride(strips * channels * nr);
  for (int64_t first_tile = 0; first_tile < line_stride; first_tile += kLanes) {
    float* dst = v + ((first_tile / nr) * channels + c) * nr + first_tile % nr;
    for (int r = 0; r < 6; ++r) {
      __m512 d[6], out[6];
      for (int k = 0; k < 6; ++k) d[k] = _mm512_loadu_ps(lines + (r * 6 + k) * line_stride + first_tile);
      InputTransform6(d, out);
      for (int k = 0; k < 6; ++k) _mm512_storeu_ps(dst + (r * 6 + k) * xi_stride, out[k]);
    }
  }
}

// Output plane of filter f (out_w columns) from M[xi][f][tile] (row stride
// count), with the epilogue: + bias, + residual plane (or null), clamp.
MXLITE_WINOGRAD_AVX512 void TransformOutputFilter(const std::vector<TileGroup>& groups,
                                                  const float* m, int64_t filters,
                                                  int64_t count, int64_t f, int64_t out_w,
                                                  float bias, const float* residual,
                                                  bool clamp, float lower, float upper,
                                                  float* out) {
  const int64_t xi_stride = XiStride(filters * count);
  const __m512 bias_v = _mm512_set1_ps(bias);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
  const __mmask16 all = 0xffff;
  for (size_t index = 0; index < groups.size(); ++index) {
    const TileGroup& group = groups[index];
    const __m512i base = _mm512_load_si512(group.out_offset);
    const float* src = m + f * count + static_cast<int64_t>(index) * kLanes;
    __m512 rows[6][4];  // A^T applied along each row of the 6x6 product
    for (int r = 0; r < 6; ++r) {
      __m512 values[6];
      for (int k = 0; k < 6; ++k) {
        values[k] = _mm512_maskz_loadu_ps(group.live, src + (r * 6 + k) * xi_stride);
      }
      OutputTransform6(values, rows[r]);
    }
    for (int k = 0; k < 4; ++k) {
      const __m512 column[6] = {rows[0][k], rows[1][k], rows[2][k],
                                rows[3][k], rows[4][k], rows[5][k]};
      __m512 y[4];
      OutputTransform6(column, y);
      for (int r = 0; r < 4; ++r) {
        const __mmask16 mask = group.position[r][k];
        if (!mask) continue;
        // Output (r, k) of each tile sits at out_offset + r * out_w + k.
        const int64_t delta = r * out_w + k;
        __m512 value = _mm512_add_ps(y[r], bias_v);
        if (residual) {
          value = _mm512_add_ps(
              value, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, base, residual + delta, 4));
        }
        if (clamp) {
          // max(lower, x) and min(upper, x) return x when x is NaN.
          value = _mm512_maskz_min_ps(all, hi, _mm512_maskz_max_ps(all, lo, value));
        }
        _mm512_mask_i32scatter_ps(out + delta, mask, base, value, 4);
      }
    }
  }
}

void Convolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
              const float* input, const float* bias, const float* residual, float lower,
              float upper, float* output, float* workspace, ThreadPool* pool) {
  const int nr = packed[0].kernel().nr;
  const int64_t tiles = g.Tiles(), tiles_w = g.TilesW(), chunk = g.ChunkTiles();
  // Room for the last sixteen-tile run of a row to read 80 columns.
  const int64_t scratch_w = (tiles_w + kLanes - 1) / kLanes * kLanes * 4 + 16;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const bool clamp = lower != -std::numeric_limits<float>::infinity() ||
                     upper != std::numeric_limits<float>::infinity();
  std::vector<TileGroup> groups;
  for (int64_t tile0 = 0; tile0 < tiles; tile0 += chunk) {
    const int64_t count = std::min(chunk, tiles - tile0);
    const int64_t strips = (count + nr - 1) / nr;
    float* v = workspace;                              // [36][strips][channels][nr]
    const int64_t v_stride = XiStride(strips * nr * g.channels);
    const int64_t m_stride = XiStride(g.filters * count);
    float* m = workspace + 36 * v_stride;              // [36][filters][count]
    // Groups cover whole strips, so the lanes past the last tile are
    // written (as zeros) too and the GEMM never reads stale memory.
    BuildGroups(g, tile0, strips * nr, count, &groups);
    const int64_t scratch_h = ((tile0 + count - 1) / tiles_w - tile0 / tiles_w) * 4 + 6;
    ParallelFor(pool, g.channels, [&](int64_t c) {
      thread_local std::vector<float> scratch, lines;
      scratch.resize(static_cast<size_t>(scratch_h * scratch_w));
      lines.resize(static_cast<size_t>(36 * strips * nr));
      PadRows(g, input + c * in_plane, tile0, scratch_w, scratch_h, scratch.data());
      TransformInputChannel(g, tile0, count, scratch.data(), scratch_w, lines.data(), g.channels,
                            strips, nr, c, v);
    });
    ParallelFor(pool, 36, [&](int64_t xi) {
      GemmPrepackedB(packed[xi], v + xi * v_stride, count, m + xi * m_stride, count,
                     GemmEpilogue(), nullptr);
    });
    ParallelFor(pool, g.filters, [&](int64_t f) {
      TransformOutputFilter(groups, m, g.filters, count, f, g.out_w, bias ? bias[f] : 0.f,
                            residual ? residual + f * out_plane : nullptr, clamp, lower, upper,
                            output + f * out_plane);
    });
  }
}

}  // namespace winograd_avx512
}  // namespace mxlite

#endif  // x86-64
