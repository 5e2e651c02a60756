/*
 * x86-64 micro-kernels: AVX2+FMA (6x16, 12 YMM accumulators) and AVX-512
 * (12x32, 24 ZMM accumulators). Each is compiled for its ISA through a
 * function target attribute, so the file needs no -m flags and the caller
 * must only run a kernel that GetCpuFeatures() allows.
 *
 * Per depth step the kernel loads one row of packed B (NR floats) and, for
 * every row of the tile, broadcasts one element of packed A and issues FMAs
 * into that row's accumulators: 2 loads + MR broadcasts feed 2*MR FMAs,
 * which keeps the FMA units the bottleneck.
 */
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

#include <algorithm>

#include "gemm_microkernels.h"

namespace mxlite {

// Requests the tile's residual rows at the start of its last depth block,
// so that they arrive while the block computes. A ResNet's residual was
// written layers earlier and is out of L2; its rows, 12 short runs at the
// stride of a feature map, are more streams than the hardware prefetcher
// follows. Measured on the 1x1 layers that add it, per layer in resnet50_v2
// (one thread): 700-740 -> 610-660 us at 56x56, 590-650 -> 550-570 at 28x28.
inline void PrefetchResidual(const TileEpilogue& ep, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const char* row = reinterpret_cast<const char*>(ep.residual + r * ep.residual_stride);
    for (int j = 0; j < cols; j += 16) _mm_prefetch(row + sizeof(float) * j, _MM_HINT_T0);
    _mm_prefetch(row + sizeof(float) * (cols - 1), _MM_HINT_T0);
  }
}

namespace gemm_avx2 {

constexpr int kMr = 6;
constexpr int kNr = 16;

// A vector load or store, masked where the vector is the tile's last and
// its columns end inside it. Masked-off lanes are neither read nor written,
// so a tile may end at the end of a buffer. (A masked store costs several
// times a plain one on Zen 3: with the rows of a 4-row tile masked as well,
// a 16 x 32 x 12544 product ran 1.7x slower.)
template <bool kMasked>
MXLITE_TARGET_AVX2 __attribute__((always_inline)) inline __m256 LoadLanes(__m256i mask,
                                                                          const float* from) {
  return kMasked ? _mm256_maskload_ps(from, mask) : _mm256_loadu_ps(from);
}

template <bool kMasked>
MXLITE_TARGET_AVX2 __attribute__((always_inline)) inline void StoreLanes(float* to,
                                                                        __m256i mask,
                                                                        __m256 value) {
  if (kMasked) {
    _mm256_maskstore_ps(to, mask, value);
  } else {
    _mm256_storeu_ps(to, value);
  }
}

// The tile kernel for kRows (1..6) rows of A and kVecs (1 or 2) vectors of
// 8 columns; B's rows are ldb floats apart (kNr for a packed strip). With
// kLastMasked, only the first last_cols columns of the last vector are
// read from B and C and stored. Adds C's previous contents if accumulating,
// then applies ep (if not null) in registers: the same steps, in the same
// order, as the AVX-512 FinishRows. (The mask is made here, not passed in: a
// function with a 256-bit argument returns without vzeroupper, and the SSE
// code of the GEMM driver after it then ran at half speed on Zen 3.)
template <int kRows, int kVecs, bool kLastMasked>
MXLITE_TARGET_AVX2 void Tile(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                             int64_t ldc, bool accumulate, int last_cols,
                             const TileEpilogue* ep) {
  constexpr int kLast = kVecs - 1;
  const __m256i last_mask = LanesBelowAvx2(last_cols);
  __m256 acc[kRows][kVecs];
  MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[kVecs];
    MXLITE_UNROLL for (int v = 0; v < kLast; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
    bv[kLast] = LoadLanes<kLastMasked>(last_mask, b + 8 * kLast);
    b += ldb;
    MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
      MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
        acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
      }
    }
    a += kMr;
  }
  MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      MXLITE_UNROLL for (int v = 0; v < kLast; ++v) {
        acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_loadu_ps(row + 8 * v));
      }
      acc[r][kLast] = _mm256_add_ps(acc[r][kLast],
                                    LoadLanes<kLastMasked>(last_mask, row + 8 * kLast));
    }
    if (ep) {
      if (ep->bias) {
        const __m256 bias = _mm256_broadcast_ss(ep->bias + r);
        MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_add_ps(acc[r][v], bias);
      }
      if (ep->residual) {
        const float* res = ep->residual + r * ep->residual_stride;
        MXLITE_UNROLL for (int v = 0; v < kLast; ++v) {
          acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_loadu_ps(res + 8 * v));
        }
        acc[r][kLast] = _mm256_add_ps(acc[r][kLast],
                                      LoadLanes<kLastMasked>(last_mask, res + 8 * kLast));
      }
      if (ep->clamp) {
        // max(lower, x) and min(upper, x) return x when x is NaN.
        const __m256 lo = _mm256_set1_ps(ep->lower), hi = _mm256_set1_ps(ep->upper);
        MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = ClampAvx2(lo, hi, acc[r][v]);
      }
    }
    MXLITE_UNROLL for (int v = 0; v < kLast; ++v) _mm256_storeu_ps(row + 8 * v, acc[r][v]);
    StoreLanes<kLastMasked>(row + 8 * kLast, last_mask, acc[r][kLast]);
  }
}

using TileFn = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                        int64_t ldc, bool accumulate, int last_cols, const TileEpilogue* ep);

#define MXLITE_TILE_ROWS(R) \
  {{&Tile<R, 1, false>, &Tile<R, 1, true>}, {&Tile<R, 2, false>, &Tile<R, 2, true>}}
// [rows - 1][vectors - 1][last vector masked]
const TileFn kTiles[kMr][2][2] = {MXLITE_TILE_ROWS(1), MXLITE_TILE_ROWS(2),
                                  MXLITE_TILE_ROWS(3), MXLITE_TILE_ROWS(4),
                                  MXLITE_TILE_ROWS(5), MXLITE_TILE_ROWS(6)};
#undef MXLITE_TILE_ROWS

// Most columns a panel's last tile may have for TailStrips to take it.
constexpr int kMaxTail = 4;

// The last tile of a panel, where only 1..kMaxTail columns remain, for
// several full row strips at once: the product turned around, one
// accumulator per strip and column holds the strip's 6 rows (lanes 0-5),
// fed by one load of A's strip times one broadcast element of B (shared by
// the strips), so a column costs one FMA per strip and depth step where a
// masked vector costs six. A 1x1 convolution on a 1x1 map (MobileNetV2's
// classifier: 1000 x 1280 x 1) and the one-column tail of a 7x7 map (49 =
// 3 x 16 + 1) are such tiles. kStrips strips go together so that kStrips *
// kTail FMA chains are in flight: one strip at a time, a one-column tail
// waited on its previous FMA every depth step (4 cycles on Zen 3) and cost
// two thirds of a 16-column tile. Each output is still the plain sum over
// the depth in order, as in Tile, so results do not depend on how columns
// fall into tiles (thread counts, bands, chunks).
// The lanes past a strip's 6 rows read the next step's values (or the
// packed matrix's slack) and are never stored. The epilogue runs in scalar
// code: the same operations, in the same order, as Tile's.
template <int kTail, int kStrips>
MXLITE_TARGET_AVX2 void TailStrips(int64_t kc, const float* a, int64_t a_stride, const float* b,
                                   int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                   const TileEpilogue* ep) {
  __m256 acc[kStrips][kTail];
  MXLITE_UNROLL for (int s = 0; s < kStrips; ++s) {
    MXLITE_UNROLL for (int t = 0; t < kTail; ++t) acc[s][t] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += ldb) {
    __m256 column[kTail];
    MXLITE_UNROLL for (int t = 0; t < kTail; ++t) column[t] = _mm256_broadcast_ss(b + t);
    MXLITE_UNROLL for (int s = 0; s < kStrips; ++s) {
      const __m256 a_rows = _mm256_loadu_ps(a + s * a_stride);
      MXLITE_UNROLL for (int t = 0; t < kTail; ++t) {
        acc[s][t] = _mm256_fmadd_ps(a_rows, column[t], acc[s][t]);
      }
    }
  }
  alignas(32) float columns[kTail][8];
  for (int s = 0; s < kStrips; ++s) {
    MXLITE_UNROLL for (int t = 0; t < kTail; ++t) _mm256_store_ps(columns[t], acc[s][t]);
    for (int r = 0; r < kMr; ++r) {
      const int64_t row = s * kMr + r;
      float* out = c + row * ldc;
      for (int t = 0; t < kTail; ++t) {
        float value = columns[t][r];
        if (accumulate) value += out[t];
        if (ep) {
          if (ep->bias) value += ep->bias[row];
          if (ep->residual) value += ep->residual[row * ep->residual_stride + t];
          // The vector clamp's order of operands: a NaN passes through.
          if (ep->clamp) value = std::min(std::max(value, ep->lower), ep->upper);
        }
        out[t] = value;
      }
    }
  }
}

using TailStripsFn = void (*)(int64_t kc, const float* a, int64_t a_stride, const float* b,
                              int64_t ldb, float* c, int64_t ldc, bool accumulate,
                              const TileEpilogue* ep);

// Strips per call, by columns: at least 8 FMA chains, and the accumulators,
// the broadcast columns and A's vector within the 16 YMM registers.
constexpr int kTailStrips[kMaxTail] = {8, 4, 4, 2};

// [columns - 1][strips - 1]; entries past kTailStrips are never called (they
// hold the one-strip kernel).
#define MXLITE_TAIL(T, S) &TailStrips<T, (S <= kTailStrips[T - 1] ? S : 1)>
#define MXLITE_TAIL_ROW(T)                                                                   \
  {                                                                                          \
    MXLITE_TAIL(T, 1), MXLITE_TAIL(T, 2), MXLITE_TAIL(T, 3), MXLITE_TAIL(T, 4),              \
        MXLITE_TAIL(T, 5), MXLITE_TAIL(T, 6), MXLITE_TAIL(T, 7), MXLITE_TAIL(T, 8)           \
  }
const TailStripsFn kTails[kMaxTail][8] = {MXLITE_TAIL_ROW(1), MXLITE_TAIL_ROW(2),
                                          MXLITE_TAIL_ROW(3), MXLITE_TAIL_ROW(4)};
#undef MXLITE_TAIL_ROW
#undef MXLITE_TAIL

// `strips` full row strips (a_stride floats apart in packed A) times the
// last `cols` (1..kMaxTail) columns of a panel, in groups of up to
// kTailStrips strips.
MXLITE_TARGET_AVX2 void RunTail(int64_t kc, const float* a, int64_t a_stride, const float* b,
                                int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                int64_t strips, int cols, const TileEpilogue* ep) {
  const int group = kTailStrips[cols - 1];
  for (int64_t s = 0; s < strips; s += group) {
    const int count = static_cast<int>(std::min<int64_t>(group, strips - s));
    TileEpilogue group_ep = {};
    if (ep) {
      group_ep = *ep;
      if (ep->bias) group_ep.bias = ep->bias + s * kMr;
      if (ep->residual) group_ep.residual = ep->residual + s * kMr * ep->residual_stride;
      if (ep->residual) PrefetchResidual(group_ep, count * kMr, cols);
    }
    kTails[cols - 1][count - 1](kc, a + s * a_stride, a_stride, b, ldb, c + s * kMr * ldc, ldc,
                                accumulate, ep ? &group_ep : nullptr);
  }
}

// Any tile at its own size: a partial tile needs no scratch copy and
// computes no rows it does not store.
MXLITE_TARGET_AVX2 void RunTile(int64_t kc, const float* a, const float* b, int64_t ldb,
                                float* c, int64_t ldc, bool accumulate, int rows, int cols,
                                const TileEpilogue* ep) {
  if (ep && ep->residual) PrefetchResidual(*ep, rows, cols);
  const int vectors = cols > 8 ? 2 : 1;
  const int last_cols = cols - 8 * (vectors - 1);
  kTiles[rows - 1][vectors - 1][last_cols < 8](kc, a, b, ldb, c, ldc, accumulate, last_cols,
                                               ep);
}

// Every tile goes through RunTile, so the kernel has no separate whole-tile
// entries. B is packed: read in place on Zen 3 (one thread, min of 3 runs)
// 384 x 256 x 3136 took 9.6 ms against 7.5 packed, 64 x 576 x 3136 3.8
// against 3.2, and no shape from the zoo's 1x1 layers ran faster.
const MicroKernel kKernel = {"avx2-6x16", kMr, kNr, nullptr, nullptr, &RunTile, 0, 0, false,
                             &RunTail, kMaxTail};

// The sum of the 16 lanes of (low, high), in lane order: the AVX-512
// GemvRows' HorizontalSum of the same 16 partial sums.
MXLITE_TARGET_AVX2_INLINE float SumLanesInOrderAvx2(__m256 low, __m256 high) {
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, low);
  _mm256_store_ps(lanes + 8, high);
  float sum = 0.f;
  for (float lane : lanes) sum += lane;
  return sum;
}

// y[r] = dot(row r of w, x): a fully-connected layer at batch 1, which
// streams its weights once. Four rows share each load of x, and each row
// keeps two accumulators (eight FMA chains in flight) that hold the same 16
// partial sums as the AVX-512 GemvRows' one, added up in the same order, so
// the two give the same bits. Before this, AVX2 machines ran the portable
// loop, built for SSE2: MobileNet's 1000 x 1024 classifier took 558 us
// against 298 with it (Zen 3, per node, builds alternating; ORT: 297).
MXLITE_TARGET_AVX2 void GemvRows(int64_t rows, int64_t k, const float* w, const float* x,
                                 float* y) {
  const int64_t full = k - k % 16;
  const int tail = static_cast<int>(k - full);
  int64_t r = 0;
  for (; r < rows; r += 4) {
    const int count = static_cast<int>(std::min<int64_t>(4, rows - r));
    const float* row[4];
    for (int i = 0; i < 4; ++i) row[i] = w + (r + std::min(i, count - 1)) * k;
    __m256 acc[4][2];
    MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
      acc[i][0] = _mm256_setzero_ps();
      acc[i][1] = _mm256_setzero_ps();
    }
    for (int64_t j = 0; j < full; j += 16) {
      const __m256 x0 = _mm256_loadu_ps(x + j), x1 = _mm256_loadu_ps(x + j + 8);
      MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
        acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(row[i] + j), x0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(row[i] + j + 8), x1, acc[i][1]);
      }
    }
    if (tail > 0) {
      const __m256i mask0 = LanesBelowAvx2(std::min(tail, 8));
      const __m256i mask1 = LanesBelowAvx2(std::max(tail - 8, 0));
      const __m256 x0 = _mm256_maskload_ps(x + full, mask0);
      const __m256 x1 = _mm256_maskload_ps(x + full + 8, mask1);
      MXLITE_UNROLL for (int i = 0; i < 4; ++i) {
        acc[i][0] = _mm256_fmadd_ps(_mm256_maskload_ps(row[i] + full, mask0), x0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(_mm256_maskload_ps(row[i] + full + 8, mask1), x1, acc[i][1]);
      }
    }
    // Rows past `count` repeat the last row: computed, not stored.
    for (int i = 0; i < count; ++i) {
      y[r + i] = SumLanesInOrderAvx2(acc[i][0], acc[i][1]);
    }
  }
}

}  // namespace gemm_avx2

namespace gemm_avx512 {

constexpr int kMr = 12;
constexpr int kNr = 32;

// How far ahead of its reads the tile kernel prefetches packed A, in floats
// (8 KiB, ~170 depth steps). Packed A is one contiguous stream, strip after
// strip, so this also fetches the next strip. A layer's weights come from
// DRAM once per inference, and the hardware prefetcher alone left a
// 512 x 4608 x 49 product (resnet18's last stage, ~40% of its time) waiting
// on them: 109 -> 169 GFLOP/s with caches flushed, 121 -> 173 when warm.
// Prefetching never faults, so running past the end of A is harmless.
constexpr int kPrefetchAheadA = 2048;

// How many rows of B ahead of its reads the tile kernel prefetches the
// tile's columns (kVecs cache lines of one row). A B read in place (a 1x1
// convolution's input) has its rows a feature map apart: each row is a new
// page to the hardware prefetchers, so the first row strip to read a column
// tile waited on every row (from L3, or the other core's L2). From a packed
// panel the lines come from L2 a little early. One thread, Xeon model 167,
// per product (GFLOP/s, 0 -> 16 rows ahead, measured with the row blocks of
// 12cca4b, since reverted): 120 x 256 x 3136 114-121 -> 144, 512 x 512 x
// 196 151-156 -> 162-169, 128 x 128 x 3136 115-119 -> 133-136; 8 rows ahead
// within noise of 16. Whole models without row blocks: BENCHMARKS.md.
constexpr int kPrefetchAheadB = 16;
template <int kVecs>
MXLITE_TARGET_AVX512_INLINE void PrefetchRow(const float* row) {
  const char* line = reinterpret_cast<const char*>(row);
  MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) _mm_prefetch(line + 64 * v, _MM_HINT_T0);
}
template <int kVecs>
MXLITE_TARGET_AVX512_INLINE void PrefetchRowsAhead(const float* b, int64_t ldb) {
  PrefetchRow<kVecs>(b + kPrefetchAheadB * ldb);
}

// A vector load or store, masked unless the tile is full.
template <bool kFull>
MXLITE_TARGET_AVX512_INLINE __m512 LoadLanes(__mmask16 mask, const float* from) {
  return kFull ? _mm512_loadu_ps(from) : _mm512_maskz_loadu_ps(mask, from);
}

template <bool kFull>
MXLITE_TARGET_AVX512_INLINE void StoreLanes(float* to, __mmask16 mask, __m512 value) {
  if (kFull) {
    _mm512_storeu_ps(to, value);
  } else {
    _mm512_mask_storeu_ps(to, mask, value);
  }
}

// Adds C's previous contents if accumulating, applies ep (if not null) and
// stores kRows x kVecs accumulator vectors at c; masks[v] selects the lanes
// of vector v that are read and written.
template <int kRows, int kVecs, bool kFull>
MXLITE_TARGET_AVX512_INLINE void FinishRows(__m512 (&acc)[kRows][kVecs], float* c, int64_t ldc,
                                            bool accumulate, const __mmask16 (&masks)[kVecs],
                                            const TileEpilogue* ep) {
  MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
        acc[r][v] = _mm512_add_ps(acc[r][v], LoadLanes<kFull>(masks[v], row + 16 * v));
      }
    }
    if (ep) {
      if (ep->bias) {
        const __m512 bias = _mm512_set1_ps(ep->bias[r]);
        MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_add_ps(acc[r][v], bias);
      }
      if (ep->residual) {
        const float* res = ep->residual + r * ep->residual_stride;
        MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
          acc[r][v] = _mm512_add_ps(acc[r][v], LoadLanes<kFull>(masks[v], res + 16 * v));
        }
      }
      if (ep->clamp) {
        const __m512 lo = _mm512_set1_ps(ep->lower), hi = _mm512_set1_ps(ep->upper);
        MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = ClampAvx512(lo, hi, acc[r][v]);
      }
    }
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
      StoreLanes<kFull>(row + 16 * v, masks[v], acc[r][v]);
    }
  }
}

// FinishRows for `rows` rows of `vecs` vectors whose sums were stored at
// sums (row r at sums + 16 * vecs * r), the last vector's lanes masked by
// last_mask: the same operations in the same order, in loops that are not
// unrolled. The tiles of a strip's last rows (fewer than 12) share it: each
// inlining its own epilogue cost 1-2 KB of code apiece, against the
// library's size budget, for tiles that run once per column tile.
MXLITE_TARGET_AVX512 MXLITE_NOINLINE void FinishPartialRows(const float* sums, int rows, int vecs,
                                                            float* c, int64_t ldc,
                                                            bool accumulate, __mmask16 last_mask,
                                                            const TileEpilogue* ep) {
  for (int r = 0; r < rows; ++r) {
    float* row = c + r * ldc;
    for (int v = 0; v < vecs; ++v) {
      const __mmask16 mask = v == vecs - 1 ? last_mask : static_cast<__mmask16>(0xffff);
      __m512 value = _mm512_load_ps(sums + (r * vecs + v) * 16);
      if (accumulate) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, row + 16 * v));
      if (ep) {
        if (ep->bias) value = _mm512_add_ps(value, _mm512_set1_ps(ep->bias[r]));
        if (ep->residual) {
          value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(
                                           mask, ep->residual + r * ep->residual_stride + 16 * v));
        }
        if (ep->clamp) {
          value = ClampAvx512(_mm512_set1_ps(ep->lower), _mm512_set1_ps(ep->upper), value);
        }
      }
      _mm512_mask_storeu_ps(row + 16 * v, mask, value);
    }
  }
}

// The tile kernel, for kRows (1..12) rows of A and kVecs (1 or 2) vectors
// of 16 columns; B's rows are ldb floats apart. last_mask selects the
// columns of the last vector that are read from B and C and stored (masked
// lanes are never touched, so a tile may end at the end of a buffer).
// ep, if not null, is applied before the store. kFull (a whole 12 x 32
// tile) takes plain loads and stores: masked ones with a run-time mask ran
// a 2048^3 product 14% slower.
template <int kRows, int kVecs, bool kFull = false>
MXLITE_TARGET_AVX512 inline void Tile(int64_t kc, const float* a, const float* b, int64_t ldb,
                                      float* c, int64_t ldc, bool accumulate,
                                      __mmask16 last_mask, const TileEpilogue* ep) {
  __mmask16 masks[kVecs];
  MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
    masks[v] = v == kVecs - 1 ? last_mask : static_cast<__mmask16>(0xffff);
  }

  // The last kPrefetchAheadB steps prefetch the first rows of the tile that
  // most likely comes next: the next strip of a packed B (ldb == kNr), the
  // next columns of a B read in place. A shallow product (a 1x1 layer
  // reading 16-64 channels) otherwise starts every tile on rows that no
  // prefetch has asked for.
  const float* const next_tile = ldb == kNr ? b + kc * ldb : b + 16 * kVecs;
  __m512 acc[kRows][kVecs];
  MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[kVecs];
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
      bv[v] = LoadLanes<kFull>(masks[v], b + 16 * v);
    }
    const int64_t ahead = p + kPrefetchAheadB;
    PrefetchRow<kVecs>(ahead < kc ? b + kPrefetchAheadB * ldb : next_tile + (ahead - kc) * ldb);
    b += ldb;
    _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchAheadA), _MM_HINT_T0);
    MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
        acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
      }
    }
    a += kMr;
  }
  if constexpr (kRows == kMr) {
    FinishRows<kRows, kVecs, kFull>(acc, c, ldc, accumulate, masks, ep);
  } else {
    // A row strip's last rows (a GEMM's last strip): the epilogue through
    // memory, one copy for the 22 such kernels (see FinishPartialRows).
    alignas(64) float sums[kRows][kVecs * 16];
    MXLITE_UNROLL for (int r = 0; r < kRows; ++r) {
      MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) _mm512_store_ps(sums[r] + 16 * v, acc[r][v]);
    }
    FinishPartialRows(sums[0], kRows, kVecs, c, ldc, accumulate, masks[kVecs - 1], ep);
  }
}

// Most columns a tile hands to its tail (see TailTile).
constexpr int kMaxTail = 8;

// Stores the tail accumulators of a tile (lane r of tail[t] is row r,
// column first_col + t of the tile) with the epilogue in scalar code: the
// same operations, in the same order, as FinishRows.
template <int kTail>
MXLITE_TARGET_AVX512_INLINE void FinishTailColumns(const __m512 (&tail)[kTail], int rows,
                                                   int first_col, float* c, int64_t ldc,
                                                   bool accumulate, const TileEpilogue* ep) {
  alignas(64) float columns[kTail][16];
  MXLITE_UNROLL for (int t = 0; t < kTail; ++t) _mm512_store_ps(columns[t], tail[t]);
  for (int r = 0; r < rows; ++r) {
    float* out = c + r * ldc + first_col;
    for (int t = 0; t < kTail; ++t) {
      float value = columns[t][r];
      if (accumulate) value += out[t];
      if (ep) {
        if (ep->bias) value += ep->bias[r];
        if (ep->residual) value += ep->residual[r * ep->residual_stride + first_col + t];
        // The vector clamp's order of operands: a NaN passes through.
        if (ep->clamp) value = std::min(std::max(value, ep->lower), ep->upper);
      }
      out[t] = value;
    }
  }
}

// A full-height tile of kVecs (0, 1 or 2) whole vectors of 16 columns followed
// by kTail (1..kMaxTail) single columns. The tail turns the product around:
// one accumulator per column holds that column's 12 rows, fed by a vector
// of A's strip times one element of B, so a column costs one FMA per depth
// step where a masked 16-column vector costs twelve. A 7x7 map's 49 columns
// become a 32-column tile and 16 + 1 columns: 37 FMAs per depth step
// instead of 48. The tail's few elements get their epilogue in scalar code
// (same operations, same results as the vector path).
template <int kVecs, int kTail>
MXLITE_TARGET_AVX512 void TailTile(int64_t kc, const float* a, const float* b, int64_t ldb,
                                   float* c, int64_t ldc, bool accumulate,
                                   const TileEpilogue* ep) {
  constexpr int kVecSlots = kVecs > 0 ? kVecs : 1;  // no zero-length arrays
  __m512 acc[kMr][kVecSlots];
  __m512 tail[kTail];
  MXLITE_UNROLL for (int r = 0; r < kMr; ++r) {
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  MXLITE_UNROLL for (int t = 0; t < kTail; ++t) tail[t] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[kVecSlots];
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
    _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchAheadA), _MM_HINT_T0);
    MXLITE_UNROLL for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
        acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
      }
    }
    // A plain load: lanes past the strip's 12 rows hold the next step's
    // values (or the packed matrix's slack) and are never stored. (Measured
    // alone it is no faster than the masked load; the wide tile's halves
    // need the slack in any case, and both tails now load alike.)
    const __m512 a_column = _mm512_loadu_ps(a);
    MXLITE_UNROLL for (int t = 0; t < kTail; ++t) {
      tail[t] = _mm512_fmadd_ps(a_column, _mm512_set1_ps(b[16 * kVecs + t]), tail[t]);
    }
    b += ldb;
    a += kMr;
  }
  if (kVecs > 0) {
    const __mmask16 masks[kVecSlots] = {static_cast<__mmask16>(0xffff)};
    FinishRows<kMr, kVecSlots, true>(acc, c, ldc, accumulate, masks, ep);
  }
  FinishTailColumns<kTail>(tail, kMr, 16 * kVecs, c, ldc, accumulate, ep);
}

using TileFn = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                        int64_t ldc, bool accumulate, __mmask16 last_mask,
                        const TileEpilogue* ep);

// Rows of a wide tile's half (see WideTile).
constexpr int kHalfRows = kMr / 2;
// The widths WideTile takes: 3 vectors (the last one masked when kTail is 0)
// and up to kWideMaxTail single columns. Measured against a 32-column tile
// plus the rest: 41...50 columns 6-10% faster, 51-54 within noise, 56 8%
// slower (two halves spend twice the tail's FMAs).
constexpr int kWideMaxTail = 4;
constexpr int kWideMinCols = kNr + kMaxTail + 1, kWideMaxCols = 48 + kWideMaxTail;

// One half (kHalfRows rows, starting at a's first row) of a wide tile: three
// vectors of 16 columns and kTail single columns (see TailTile). Each
// broadcast of A feeds three FMAs, where a 32-column tile plus a tail tile
// for the same columns spend 12 broadcasts on one vector; the load ports,
// not the FMA units, bound that tail on this hardware.
template <int kTail>
MXLITE_TARGET_AVX512 void HalfStripTile(int64_t kc, const float* a, const float* b,
                                        int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                        __mmask16 last_mask, const TileEpilogue* ep) {
  constexpr int kVecs = 3, kTailSlots = kTail > 0 ? kTail : 1;
  __mmask16 masks[kVecs] = {0xffff, 0xffff, kTail > 0 ? static_cast<__mmask16>(0xffff)
                                                      : last_mask};
  __m512 acc[kHalfRows][kVecs];
  __m512 tail[kTailSlots];
  MXLITE_UNROLL for (int r = 0; r < kHalfRows; ++r) {
    MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  MXLITE_UNROLL for (int t = 0; t < kTailSlots; ++t) tail[t] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 bv[kVecs] = {_mm512_loadu_ps(b), _mm512_loadu_ps(b + 16),
                              LoadLanes<(kTail > 0)>(masks[2], b + 32)};
    PrefetchRowsAhead<(kTail > 0 ? 4 : 3)>(b, ldb);
    _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchAheadA), _MM_HINT_T0);
    MXLITE_UNROLL for (int r = 0; r < kHalfRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      MXLITE_UNROLL for (int v = 0; v < kVecs; ++v) {
        acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
      }
    }
    if (kTail > 0) {
      // Lanes past the half's rows are never stored (see TailTile).
      const __m512 a_column = _mm512_loadu_ps(a);
      MXLITE_UNROLL for (int t = 0; t < kTail; ++t) {
        tail[t] = _mm512_fmadd_ps(a_column, _mm512_set1_ps(b[48 + t]), tail[t]);
      }
    }
    b += ldb;
    a += kMr;
  }
  FinishRows<kHalfRows, kVecs, false>(acc, c, ldc, accumulate, masks, ep);
  if (kTail > 0) FinishTailColumns<kTailSlots>(tail, kHalfRows, 48, c, ldc, accumulate, ep);
}

// A full-height tile of kWideMinCols...kWideMaxCols columns, as two halves
// of kHalfRows rows (a 12 x 3-vector tile would need more registers than
// there are). Both halves read the same B rows, which stay in L1.
template <int kTail>
MXLITE_TARGET_AVX512 void WideTile(int64_t kc, const float* a, const float* b, int64_t ldb,
                                   float* c, int64_t ldc, bool accumulate, __mmask16 last_mask,
                                   const TileEpilogue* ep) {
  HalfStripTile<kTail>(kc, a, b, ldb, c, ldc, accumulate, last_mask, ep);
  TileEpilogue lower_ep;
  if (ep) {
    lower_ep = *ep;
    if (lower_ep.bias) lower_ep.bias += kHalfRows;
    if (lower_ep.residual) lower_ep.residual += kHalfRows * lower_ep.residual_stride;
  }
  HalfStripTile<kTail>(kc, a + kHalfRows, b, ldb, c + kHalfRows * ldc, ldc, accumulate,
                       last_mask, ep ? &lower_ep : nullptr);
}

// [columns past 48], 0 for 41...48 columns (the third vector masked)
const TileFn kWideTiles[kWideMaxTail + 1] = {&WideTile<0>, &WideTile<1>, &WideTile<2>,
                                              &WideTile<3>, &WideTile<4>};

#define MXLITE_TILE_ROWS(R) {&Tile<R, 1>, &Tile<R, 2>}
// [rows - 1][vectors - 1]
const TileFn kTiles[kMr][2] = {
    MXLITE_TILE_ROWS(1), MXLITE_TILE_ROWS(2),  MXLITE_TILE_ROWS(3),  MXLITE_TILE_ROWS(4),
    MXLITE_TILE_ROWS(5), MXLITE_TILE_ROWS(6),  MXLITE_TILE_ROWS(7),  MXLITE_TILE_ROWS(8),
    MXLITE_TILE_ROWS(9), MXLITE_TILE_ROWS(10), MXLITE_TILE_ROWS(11), MXLITE_TILE_ROWS(12)};
#undef MXLITE_TILE_ROWS

using TailTileFn = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                            int64_t ldc, bool accumulate, const TileEpilogue* ep);

#define MXLITE_TAIL_TILES(V)                                                               \
  {&TailTile<V, 1>, &TailTile<V, 2>, &TailTile<V, 3>, &TailTile<V, 4>, &TailTile<V, 5>, \
   &TailTile<V, 6>, &TailTile<V, 7>, &TailTile<V, 8>}
// [whole vectors][tail columns - 1]
const TailTileFn kTailTiles[2][kMaxTail] = {MXLITE_TAIL_TILES(0), MXLITE_TAIL_TILES(1)};
#undef MXLITE_TAIL_TILES

// Whole-width tiles with kExtendedMaxTail more columns (see RunTile).
constexpr int kExtendedMaxTail = 4;
// [tail columns - 1]
const TailTileFn kExtendedTiles[kExtendedMaxTail] = {&TailTile<2, 1>, &TailTile<2, 2>,
                                                     &TailTile<2, 3>, &TailTile<2, 4>};

// Any tile at its own size: a partial one wastes no rows and needs no
// scratch copy, a 16-column edge costs one vector per row instead of two,
// a few odd columns at the edge of a full-height tile go to a tail (see
// TailTile), and B may be read in place (a 1x1 convolution's input needs
// no packing). A full-height tile of 33-36 columns (B read in place, the
// kernel without wide tiles: a 14x14 map's last 36 of 196, a 17x17 map's
// last 33 of 289) is one 32-column tile with its tail beside it, which
// shares the tile's pass over A's strip: a tail alone streams the whole
// strip (12 floats a depth step) for 1-4 FMAs a step, and is bound by it
// (256 x 1024 x 196, us: 524 for 192 columns, 560 for 196 with a tail
// alone, 544 so).
MXLITE_TARGET_AVX512 void RunTile(int64_t kc, const float* a, const float* b, int64_t ldb,
                                  float* c, int64_t ldc, bool accumulate, int rows, int cols,
                                  const TileEpilogue* ep) {
  if (ep && ep->residual) PrefetchResidual(*ep, rows, cols);
  if (rows == kMr && cols == kNr) {
    Tile<kMr, 2, true>(kc, a, b, ldb, c, ldc, accumulate, 0xffff, ep);
    return;
  }
  if (cols > kNr && cols <= kNr + kExtendedMaxTail && rows == kMr) {
    kExtendedTiles[cols - kNr - 1](kc, a, b, ldb, c, ldc, accumulate, ep);
    return;
  }
  if (cols > kNr) {
    // Only B read in place makes a tile this wide (see kWideMinCols).
    if (rows == kMr) {
      const int past_vectors = cols - 48;
      const __mmask16 last_mask = static_cast<__mmask16>(
          past_vectors >= 0 ? 0xffffu : (1u << (cols - kNr)) - 1u);
      kWideTiles[std::max(past_vectors, 0)](kc, a, b, ldb, c, ldc, accumulate, last_mask, ep);
      return;
    }
    RunTile(kc, a, b, ldb, c, ldc, accumulate, rows, kNr, ep);
    TileEpilogue right_ep;
    if (ep) {
      right_ep = *ep;
      if (right_ep.residual) right_ep.residual += kNr;
    }
    RunTile(kc, a, b + kNr, ldb, c + kNr, ldc, accumulate, rows, cols - kNr,
            ep ? &right_ep : nullptr);
    return;
  }
  if (rows == kMr && cols % 16 != 0 && cols % 16 <= kMaxTail) {
    kTailTiles[cols / 16][cols % 16 - 1](kc, a, b, ldb, c, ldc, accumulate, ep);
    return;
  }
  const int vectors = cols > 16 ? 2 : 1;
  const int last_cols = cols - 16 * (vectors - 1);
  const __mmask16 last_mask =
      static_cast<__mmask16>(last_cols >= 16 ? 0xffffu : (1u << last_cols) - 1u);
  kTiles[rows - 1][vectors - 1](kc, a, b, ldb, c, ldc, accumulate, last_mask, ep);
}

// Every tile goes through RunTile, so the kernel has no separate whole-tile entries.
// The two differ only in how a row's last 33-52 columns of a B read in place
// are cut: 41-52 as one wide tile, or 33-36 as a 32-column tile with its
// tail beside it, else a 32-column tile and a tail apart (the same results,
// bit for bit). Which is faster depends on the core (gemm.cc, UseWideTiles).
const MicroKernel kKernel = {"avx512-12x32", kMr, kNr, nullptr, nullptr, &RunTile,
                             kNr + 1, kNr + kExtendedMaxTail, true, nullptr, 0};
const MicroKernel kWideKernel = {"avx512-12x32-wide", kMr, kNr, nullptr, nullptr, &RunTile,
                                 kWideMinCols, kWideMaxCols, true, nullptr, 0};

// Sum of the 16 lanes. (Not _mm512_reduce_add_ps: GCC 12 warns about an
// undefined operand inside it.)
MXLITE_TARGET_AVX512 inline float HorizontalSum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0.f;
  for (float lane : lanes) sum += lane;
  return sum;
}

// y[r] = W[r,:] . x for rows [0, rows): four rows at a time share each load
// of x; the loop is bound by streaming W from memory.
MXLITE_TARGET_AVX512 void GemvRows(int64_t rows, int64_t k, const float* w, const float* x,
                                   float* y) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* w0 = w + r * k;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      const __m512 xv = _mm512_loadu_ps(x + i);
      acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), xv, acc0);
      acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + k + i), xv, acc1);
      acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + 2 * k + i), xv, acc2);
      acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + 3 * k + i), xv, acc3);
    }
    if (i < k) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (k - i)) - 1);
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i);
      acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, w0 + i), xv, acc0);
      acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, w0 + k + i), xv, acc1);
      acc2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, w0 + 2 * k + i), xv, acc2);
      acc3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, w0 + 3 * k + i), xv, acc3);
    }
    y[r] = HorizontalSum(acc0);
    y[r + 1] = HorizontalSum(acc1);
    y[r + 2] = HorizontalSum(acc2);
    y[r + 3] = HorizontalSum(acc3);
  }
  for (; r < rows; ++r) {
    const float* wr = w + r * k;
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i), _mm512_loadu_ps(x + i), acc);
    }
    if (i < k) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (k - i)) - 1);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, wr + i),
                            _mm512_maskz_loadu_ps(mask, x + i), acc);
    }
    y[r] = HorizontalSum(acc);
  }
}

}  // namespace gemm_avx512
}  // namespace mxlite

#endif  // x86-64
