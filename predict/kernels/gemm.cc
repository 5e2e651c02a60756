#include "gemm.h"

#include <algorithm>
#include <cstring>

#include "../base/options.h"
#include "x86_simd.h"

namespace mxlite {

namespace gemm_cc {

constexpr int64_t kKc = 256;  // depth block: an A strip + a B strip stay in L1
constexpr int64_t kNc = 384;  // columns per B panel: KC x NC stays in L2
// A float a thread reads for a split GEMM, in multiply-adds at the FMA peak
// (GemmSplitCost): 16 is half a cycle of the AVX-512 FMA units a float, 8
// bytes a cycle, about what one core reads from another's cache or from L3.
// Chosen between the counts at which zoo layers change split, from their
// times at two threads (BENCHMARKS.md, "Two threads: what each thread reads
// decides the GEMM's split").
constexpr int64_t kGemmSplitReadCost = 16;

const MicroKernel& ActiveKernel() { return *GemmKernels().kernel; }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The row strides at which a kernel that can read B in place does (see
// GemmReadsBInPlace): not a multiple of 8 KiB.
bool RowStrideReadsInPlace(int64_t ldb) { return ldb % 2048 != 0; }

// How far ahead along B's rows PackFullStrip prefetches: four 16-wide
// strips. The strips read kc rows at B's row stride, more streams than the
// hardware prefetcher follows once B has left L2 (as the output of the layer
// before has, at 56x56 and larger). Zen 3, one thread, median of 40
// interleaved runs, GFLOP/s: 64 x 32 x 12544 60 -> 64, 80 x 64 x 5329 57 ->
// 62, 128 x 128 x 3136 73 -> 75, 384 x 256 x 3136 65 -> 67.
#if defined(MXLITE_X86_64)
constexpr int64_t kPackPrefetchBytes = 256;
// How many rows ahead a transformed B (GemmRowTransform) is prefetched. The
// transform reads a panel's width of one row, then jumps a whole row on:
// too short a stream for the hardware prefetcher to catch before it ends.
// DenseNet's blocks, laid in place as one buffer per block, are such a B
// whose older rows have left L2: densenet121 12.14 -> 11.93 ms at two
// threads (1 to 12 rows ahead within noise of each other at one thread).
constexpr int64_t kTransformPrefetchRows = 12;
#endif  // defined(MXLITE_X86_64)

// Copies kc rows of NR floats (row stride ldb) into a packed strip; NR is a
// compile-time constant so each row copy is a few inlined vector moves, not
// a call to memcpy (a call per 128-byte row cost 40% of a small-M GEMM).
template <int NR>
void PackFullStrip(const float* src, int64_t ldb, int64_t kc, float* packed) {
  for (int64_t p = 0; p < kc; ++p, src += ldb, packed += NR) {
#if defined(MXLITE_X86_64)
    PrefetchAhead(src, kPackPrefetchBytes);
#endif  // defined(MXLITE_X86_64)
    std::memcpy(packed, src, sizeof(float) * NR);
  }
}

// PackFullStrip for the micro-kernels' widths; false for any other nr.
bool PackFullStripOfWidth(int nr, const float* src, int64_t ldb, int64_t kc, float* packed) {
  switch (nr) {
    case 32: PackFullStrip<32>(src, ldb, kc, packed); return true;
    case 16: PackFullStrip<16>(src, ldb, kc, packed); return true;
    case 12: PackFullStrip<12>(src, ldb, kc, packed); return true;
    case 8: PackFullStrip<8>(src, ldb, kc, packed); return true;
    default: return false;
  }
}

// Packs depth [p0, p0+kc) x columns [j0, j0+nc) of B into NR-wide strips,
// strip[p * NR + c], zero-padded past the last column.
void PackB(const float* b, int64_t ldb, bool transposed, int64_t p0, int64_t kc, int64_t j0,
           int64_t nc, int nr, float* packed) {
  for (int64_t strip = 0; strip < nc; strip += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - strip);
    if (!transposed) {
      const float* src = b + p0 * ldb + j0 + strip;
      if (cols == nr && PackFullStripOfWidth(nr, src, ldb, kc, packed)) {
        packed += kc * nr;
        continue;
      }
      for (int64_t p = 0; p < kc; ++p, src += ldb, packed += nr) {
        std::memcpy(packed, src, sizeof(float) * cols);
        if (cols < nr) std::fill(packed + cols, packed + nr, 0.f);
      }
    } else {
      for (int64_t p = 0; p < kc; ++p, packed += nr) {
        for (int64_t c = 0; c < nr; ++c) {
          packed[c] = c < cols ? b[(j0 + strip + c) * ldb + p0 + p] : 0.f;
        }
      }
    }
  }
}

}  // namespace gemm_cc

void ApplyGemmEpilogue(const GemmEpilogue& ep, int64_t row0, int64_t col0, int64_t rows,
                       int64_t cols, float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) {
    float* out = c + r * ldc;
    if (ep.bias) {
      const float bias = ep.bias[row0 + r];
      for (int64_t j = 0; j < cols; ++j) out[j] += bias;
    }
    if (ep.residual) {
      const float* res = ep.residual + (row0 + r) * ep.residual_stride + col0;
      for (int64_t j = 0; j < cols; ++j) out[j] += res[j];
    }
    if (ep.clamps()) {
      const float lo = ep.lower, hi = ep.upper;
      for (int64_t j = 0; j < cols; ++j) out[j] = std::min(std::max(out[j], lo), hi);
    }
  }
}

namespace gemm_cc {

// The part of the epilogue that concerns the tile whose top-left element is
// C[row0, col0].
TileEpilogue TileEpilogueAt(const GemmEpilogue& ep, int64_t row0, int64_t col0) {
  TileEpilogue tile;
  tile.bias = ep.bias ? ep.bias + row0 : nullptr;
  tile.residual = ep.residual ? ep.residual + row0 * ep.residual_stride + col0 : nullptr;
  tile.residual_stride = ep.residual_stride;
  tile.clamp = ep.clamps();
  tile.lower = ep.lower;
  tile.upper = ep.upper;
  return tile;
}

// One thread's share: rows [row_begin, row_end) (row_begin a multiple of
// MR) and columns [col_begin, col_end) of C.
// B is either a plain matrix (b, ldb, b_transposed), packed here panel by
// panel, or already packed (b_packed: NR-column strips of depth x NR floats,
// see GemmPrepackedB).
// With b_segments, B's rows come from a.segment_depth()-step segments, each
// at its own address (GemmSegmentedB).
// With transform, each depth block of a panel of a plain B is transformed
// row by row into a kKc x kNc buffer first, and read from there.
void GemmRange(const PackedMatrix& a, const float* b, const float* const* b_segments,
               int64_t ldb, bool b_transposed, const float* b_packed,
               const GemmRowTransform* transform, float* c, int64_t ldc, const GemmEpilogue& ep,
               int64_t row_begin, int64_t row_end, int64_t col_begin, int64_t col_end,
               int64_t block_begin, int64_t block_end) {
  const MicroKernel& kernel = a.kernel();
  const int mr = kernel.mr, nr = kernel.nr;
  const int64_t depth = a.depth();
  // A plain B is read in place where GemmReadsBInPlace says so. (A
  // transformed block is read at the panel's width, never a stride of 8 KiB.)
  const bool b_in_place = !b_packed && !b_transposed && kernel.reads_b_in_place &&
                          (transform != nullptr || RowStrideReadsInPlace(ldb));
  const bool pack_b = !b_packed && !b_in_place;
  thread_local std::vector<float> panel, transformed;
  const int64_t max_kc = a.max_block_depth();
  if (pack_b) panel.resize(static_cast<size_t>(max_kc * CeilDiv(kNc, nr) * nr));
  if (transform) {
    transformed.resize(static_cast<size_t>(max_kc * std::min(kNc, col_end - col_begin)));
  }
  // Taken once: in a shared library every use of a thread_local is a call
  // to __tls_get_addr, and the loops below would make one per tile (1% of
  // MobileNet's time).
  float* const panel_data = panel.data();
  float* const transformed_data = transformed.data();
  float tile[16 * 64];  // MR x NR scratch for edge tiles (largest kernel: 12 x 32)

  for (int64_t j0 = col_begin; j0 < col_end; j0 += kNc) {
    const int64_t nc = std::min(kNc, col_end - j0);
    for (int64_t block = block_begin; block < block_end; ++block) {
      const int64_t p0 = a.BlockStart(block);
      const int64_t kc = a.BlockDepth(block);
      // The block's first row of B at the panel's first column (a plain or
      // segmented B, or its transformed rows), and its row stride.
      const float* b_block = nullptr;
      int64_t b_block_ld = ldb;
      if (b_segments) {
        const int64_t segment = a.segment_depth();
        b_block = b_segments[p0 / segment] + (p0 % segment) * ldb + j0;
      } else if (!b_packed && !b_transposed) {
        b_block = b + p0 * ldb + j0;
      }
      if (transform && b_block) {
        for (int64_t p = 0; p < kc; ++p) {
#if defined(MXLITE_X86_64)
          PrefetchRowAhead(b_block + p * ldb, nc,
                           kTransformPrefetchRows * ldb * int64_t{sizeof(float)});
#endif  // defined(MXLITE_X86_64)
          transform->apply(transform->context, p0 + p, b_block + p * ldb,
                           transformed_data + p * nc, nc);
        }
        b_block = transformed_data;
        b_block_ld = nc;
      }
      if (pack_b) {
        if (b_transposed) {
          PackB(b, ldb, true, p0, kc, j0, nc, nr, panel_data);
        } else {
          PackB(b_block, b_block_ld, false, 0, kc, 0, nc, nr, panel_data);
        }
      }
      const bool first = block == block_begin && !ep.accumulate;
      const bool last = block == block_end - 1;
      // The panel's columns from jr on, in B.
      const auto b_strip_at = [&](int64_t jr) {
        return b_packed     ? b_packed + ((j0 + jr) / nr) * depth * nr + p0 * nr
               : b_in_place ? b_block + jr
                            : panel_data + jr * kc;
      };
      // A last tile of at most tail_max_cols columns is left to run_tail,
      // for all the full row strips at once (see MicroKernel).
      const int64_t tail_cols = nc % nr;
      const bool tail = kernel.run_tail && !b_in_place && tail_cols > 0 &&
                        tail_cols <= kernel.tail_max_cols;
      const int64_t tail_jr = nc - tail_cols;
      for (int64_t i0 = row_begin; i0 < row_end; i0 += mr) {
        const int64_t rows = std::min<int64_t>(mr, row_end - i0);
        const float* a_strip = a.Strip(block, i0 / mr);
        for (int64_t jr = 0, cols = 0; jr < nc; jr += cols) {
          const int64_t remaining = nc - jr;
          const bool wide = b_in_place && remaining >= kernel.wide_min_cols &&
                            remaining <= kernel.wide_max_cols;
          cols = wide ? remaining : std::min<int64_t>(nr, remaining);
          if (tail && jr == tail_jr && rows == mr) continue;
          float* c_tile = c + i0 * ldc + j0 + jr;
          const float* b_strip = b_strip_at(jr);
          if (kernel.run_tile) {
            const TileEpilogue tile_ep = TileEpilogueAt(ep, i0, j0 + jr);
            kernel.run_tile(kc, a_strip, b_strip, b_in_place ? b_block_ld : nr, c_tile, ldc, !first,
                            static_cast<int>(rows), static_cast<int>(cols),
                            last ? &tile_ep : nullptr);
            continue;
          }
          const bool full = rows == mr && cols == nr;
          if (full && last && kernel.run_epilogue) {
            const TileEpilogue tile_ep = TileEpilogueAt(ep, i0, j0 + jr);
            kernel.run_epilogue(kc, a_strip, b_strip, c_tile, ldc, !first, tile_ep);
            continue;
          }
          if (full) {
            kernel.run(kc, a_strip, b_strip, c_tile, ldc, !first);
          } else {
            kernel.run(kc, a_strip, b_strip, tile, nr, false);
            for (int64_t r = 0; r < rows; ++r) {
              float* dst = c_tile + r * ldc;
              const float* src = tile + r * nr;
              if (first) {
                std::memcpy(dst, src, sizeof(float) * cols);
              } else {
                for (int64_t j = 0; j < cols; ++j) dst[j] += src[j];
              }
            }
          }
          if (last) ApplyGemmEpilogue(ep, i0, j0 + jr, rows, cols, c_tile, ldc);
        }
      }
      const int64_t full_strips = (row_end - row_begin) / mr;
      if (tail && full_strips > 0) {
        const TileEpilogue tail_ep = TileEpilogueAt(ep, row_begin, j0 + tail_jr);
        kernel.run_tail(kc, a.Strip(block, row_begin / mr), int64_t{mr} * kc,
                        b_strip_at(tail_jr), nr, c + row_begin * ldc + j0 + tail_jr, ldc, !first,
                        full_strips, static_cast<int>(tail_cols), last ? &tail_ep : nullptr);
      }
    }
  }
}

// The depth blocks of A that make up its depth segments [segment_begin,
// segment_end) (one segment: the whole depth, when A has none).
void SegmentBlocks(const PackedMatrix& a, int64_t segment_begin, int64_t segment_end,
                   int64_t* block_begin, int64_t* block_end) {
  const int64_t segment = a.segment_depth() > 0 ? a.segment_depth() : a.depth();
  int64_t block = 0;
  while (block < a.blocks() && a.BlockStart(block) < segment_begin * segment) ++block;
  *block_begin = block;
  while (block < a.blocks() && a.BlockStart(block) < segment_end * segment) ++block;
  *block_end = block;
}

#if defined(MXLITE_X86_64)
// C[r0, r1) = epilogue(addend + C), addend n columns per row, ld_add apart:
// what the micro-kernels do to a tile whose depth ends in a second block.
MXLITE_TARGET_AVX512 void AddRowsAndFinishAvx512(const GemmEpilogue& ep, const float* addend,
                                                 int64_t ld_add, int64_t r0, int64_t r1,
                                                 int64_t n, float* c, int64_t ldc) {
  const __m512 lo = _mm512_set1_ps(ep.lower), hi = _mm512_set1_ps(ep.upper);
  const bool clamp = ep.clamps();
  for (int64_t i = r0; i < r1; ++i) {
    float* row = c + i * ldc;
    const float* add = addend + i * ld_add;
    const float* res = ep.residual ? ep.residual + i * ep.residual_stride : nullptr;
    const __m512 bias = _mm512_set1_ps(ep.bias ? ep.bias[i] : 0.f);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 live = LanesBelowAvx512(std::min<int64_t>(16, n - j));
      __m512 value = _mm512_add_ps(_mm512_maskz_loadu_ps(live, add + j),
                                   _mm512_maskz_loadu_ps(live, row + j));
      if (ep.bias) value = _mm512_add_ps(value, bias);
      if (res) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(live, res + j));
      if (clamp) value = ClampAvx512(lo, hi, value);
      _mm512_mask_storeu_ps(row + j, live, value);
    }
  }
}
#endif  // defined(MXLITE_X86_64)

// What the micro-kernels do to a tile whose depth ends in a second block,
// on any ISA: the family's vector loop where it has one.
void AddRowsAndFinish(const GemmEpilogue& ep, const float* addend, int64_t ld_add, int64_t r0,
                      int64_t r1, int64_t n, float* c, int64_t ldc) {
  if (const AddRowsAndFinishFn add_rows = GemmKernels().add_rows_and_finish) {
    add_rows(ep, addend, ld_add, r0, r1, n, c, ldc);
    return;
  }
  for (int64_t i = r0; i < r1; ++i) {
    float* row = c + i * ldc;
    const float* add = addend + i * ld_add;
    for (int64_t j = 0; j < n; ++j) row[j] = add[j] + row[j];
  }
  ApplyGemmEpilogue(ep, r0, 0, r1 - r0, n, c + r0 * ldc, ldc);
}

// What a thread's share of a split GEMM costs, in multiply-adds per depth
// step: its rows x cols of C, plus kGemmSplitReadCost for every row of A
// and column of B it reads, where B is a plain matrix (a feature map
// another layer wrote; both threads wrote parts of it, so half of what a
// thread reads comes from the other core's cache). A row split reads all
// of B, a column split all of A. The area alone is what an even split
// cares about: a 7x7 map's 49 columns are a 32-column strip and a
// 17-column one, so splitting them gives one thread nearly twice the
// other's work (2 threads ran 512 x 4608 x 49 at 1.6x one thread's speed
// that way), while a layer has tens of row strips. The reads decide where
// the areas are near: Inception's 1x1 layers of 48 filters on 35x35 maps
// (48 x 1225) split by rows had each thread read all 1225 columns and ran
// slower on two threads than on one; by columns, twice as fast. Prepacked
// B (Winograd's transformed tiles) is left to the areas.
inline int64_t GemmSplitCost(int64_t rows, int64_t cols, bool b_plain) {
  return rows * cols + (b_plain ? kGemmSplitReadCost * (rows + cols) : 0);
}

void GemmDispatch(const PackedMatrix& a, const float* b, const float* const* b_segments,
                  int64_t ldb, bool b_transposed, const float* b_packed, int64_t n, float* c,
                  int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool,
                  const GemmRowTransform* transform = nullptr, int64_t segment_begin = 0,
                  int64_t segment_end = -1, bool split_depth = false) {
  // A's depth blocks to multiply: all, or those of segments [segment_begin,
  // segment_end) (GemmPackedSegments); none leaves C as it is.
  int64_t block_begin = 0, block_end = a.blocks();
  if (segment_end >= 0) {
    SegmentBlocks(a, segment_begin, segment_end, &block_begin, &block_end);
    if (block_begin == block_end) return;
  }
  const int64_t m = a.rows();
  if (m <= 0 || n <= 0) return;
  if (a.depth() == 0) {
    // An empty product: only the epilogue (and the clearing) remain.
    for (int64_t i = 0; i < m; ++i) {
      if (!ep.accumulate) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
    }
    ApplyGemmEpilogue(ep, 0, 0, m, n, c, ldc);
    return;
  }
  const int threads = pool ? pool->size() : 1;
  const int mr = a.kernel().mr, nr = a.kernel().nr;
  // A transformed B, or a caller's request (GemmPackedDepthHalves), of few
  // columns with its depth in two segments (see kGemmSplitDepthMaxColumns).
  const bool two_halves = a.segment_depth() > 0 && 2 * a.segment_depth() == a.depth();
  if (transform) split_depth = true;
  split_depth = split_depth && two_halves && n <= kGemmSplitDepthMaxColumns && b && !b_segments &&
                !b_transposed && !b_packed && !ep.accumulate && segment_end < 0;
  // On one thread the blocks run in order, which gives the split's bits
  // when each half is one block (two blocks in all): the micro-kernels add
  // the second block's sum to the first's as the split adds its two halves.
  if (split_depth && (threads > 1 || a.blocks() > 2)) {
    // One half of the threads multiplies the first segment into C, the
    // other the second into a scratch, each by rows; then the scratch is
    // added and the epilogue applied. On one thread too (halves of several
    // blocks), in the same order, so that the thread count changes no bits.
    thread_local std::vector<float> second_half;
    second_half.resize(static_cast<size_t>(m * n));
    float* const second = second_half.data();
    const int64_t row_strips = CeilDiv(m, mr);
    const int64_t row_chunks = std::min<int64_t>(std::max(1, threads / 2), row_strips);
    // Threads [0, row_chunks) take the first half: the thread pool gives
    // thread t the t-th part of a loop, as it gave the layer before.
    ParallelFor(pool, 2 * row_chunks, [&](int64_t task) {
      const int64_t half = task / row_chunks, chunk = task % row_chunks;
      const int64_t r0 = chunk * row_strips / row_chunks * mr;
      const int64_t r1 = std::min(m, (chunk + 1) * row_strips / row_chunks * mr);
      int64_t half_begin = 0, half_end = 0;
      SegmentBlocks(a, half, half + 1, &half_begin, &half_end);
      GemmRange(a, b, nullptr, ldb, false, nullptr, transform, half == 0 ? c : second,
                half == 0 ? ldc : n, GemmEpilogue(), r0, r1, 0, n, half_begin, half_end);
    });
    ParallelFor(pool, threads, [&](int64_t part) {
      AddRowsAndFinish(ep, second, n, part * m / threads, (part + 1) * m / threads, n, c, ldc);
    });
    return;
  }
  // Columns are split in half strips where B is not prepacked (every
  // kernel runs a partial tile at its own size): DenseNet's 32 x 1152 x 196
  // layers split as 128 + 68 columns by whole strips ran 1.5x faster on two
  // threads than on one; as 112 + 84, 1.7x.
  const int64_t col_unit = b_packed ? nr : std::max(1, nr / 2);
  const int64_t col_strips = CeilDiv(n, col_unit), row_strips = CeilDiv(m, mr);
  // Split columns (each thread packs only its own B panels) or rows,
  // whichever costs the busiest thread less (GemmSplitCost).
  int64_t col_chunks = 1, row_chunks = 1;
  if (threads > 1) {
    const int64_t col_share = std::min(n, CeilDiv(col_strips, threads) * col_unit);
    const int64_t row_share = std::min(m, CeilDiv(row_strips, threads) * mr);
    const bool b_plain = b_packed == nullptr;
    const int64_t col_split_cost = GemmSplitCost(m, col_share, b_plain);
    const int64_t row_split_cost = GemmSplitCost(row_share, n, b_plain);
    if (col_strips >= threads && col_split_cost <= row_split_cost) {
      col_chunks = threads;
    } else {
      row_chunks = std::min<int64_t>(threads, row_strips);
    }
  }
  const int64_t strips_per_col_chunk = CeilDiv(col_strips, col_chunks);
  const int64_t strips_per_row_chunk = CeilDiv(row_strips, row_chunks);
  ParallelFor(pool, col_chunks * row_chunks, [&](int64_t task) {
    const int64_t rc = task / col_chunks, cc = task % col_chunks;
    const int64_t r0 = rc * strips_per_row_chunk * mr;
    const int64_t r1 = std::min(m, (rc + 1) * strips_per_row_chunk * mr);
    const int64_t c0 = cc * strips_per_col_chunk * col_unit;
    const int64_t c1 = std::min(n, (cc + 1) * strips_per_col_chunk * col_unit);
    if (r0 < r1 && c0 < c1) {
      GemmRange(a, b, b_segments, ldb, b_transposed, b_packed, transform, c, ldc, ep, r0, r1, c0,
                c1, block_begin, block_end);
    }
  });
}

// In order of preference: the first whose instruction set is selected.
const GemmImplementation kGemmImplementations[] = {
#if defined(__x86_64__) || defined(_M_X64)
    {Isa::kAvx512, &gemm_avx512::kKernel, gemm_avx512::GemvRows, AddRowsAndFinishAvx512},
    {Isa::kAvx2, &gemm_avx2::kKernel, gemm_avx2::GemvRows, nullptr},
#elif defined(__aarch64__) || defined(__ARM_NEON)
    {Isa::kNeon, &gemm_neon::kKernel, nullptr, nullptr},
#endif  // defined(__x86_64__) || defined(_M_X64)
    {Isa::kGeneric, &gemm_generic::kKernel, nullptr, nullptr},
};

#if defined(__x86_64__) || defined(_M_X64)
// The AVX-512 line with wide tiles (see UseWideTiles).
const GemmImplementation kAvx512WithWideTiles = {
    Isa::kAvx512, &gemm_avx512::kWideKernel, gemm_avx512::GemvRows, AddRowsAndFinishAvx512};

// Whether a row's last 41-52 columns (a 7x7 map's 49) run as one wide tile
// of two 6-row halves, each broadcast of A feeding three vectors, or as a
// 32-column tile plus a tail. Same results; the cores disagree on speed.
// On the AMD Zen 5 EPYC where the wide tile was built it paid (one thread,
// 516 x 1024 x 49: 200 -> 225 GFLOP/s); on the Intel Xeon of CPUID model 167
// it loses on every 49-column product (GFLOP/s without -> with it: 1024 x
// 1024 x 49 143 -> 130-134, 128 x 768 x 49 133-137 -> 121-126;
// BENCHMARKS.md). So: on for AMD, off elsewhere, unless
// ProcessOptions::gemm_wide_tiles says otherwise.
bool UseWideTiles() {
  const int setting = GetProcessOptions().gemm_wide_tiles;
  if (setting >= 0) return setting == 1;
  return GetCpuFeatures().vendor == CpuVendor::kAmd;
}
#endif  // defined(__x86_64__) || defined(_M_X64)

}  // namespace gemm_cc

const GemmImplementation& GemmKernels() {
  static const GemmImplementation& chosen = []() -> const GemmImplementation& {
    const GemmImplementation& entry = ChooseImplementation(gemm_cc::kGemmImplementations);
#if defined(__x86_64__) || defined(_M_X64)
    if (entry.isa == Isa::kAvx512 && gemm_cc::UseWideTiles()) {
      return gemm_cc::kAvx512WithWideTiles;
    }
#endif  // defined(__x86_64__) || defined(_M_X64)
    return entry;
  }();
  return chosen;
}

bool GemmReadsResidualFirst(const PackedMatrix& a) {
  return a.blocks() == 1 && a.kernel().run_tile != nullptr;
}

bool GemmReadsBInPlace(int64_t ldb) {
  return GemmKernels().kernel->reads_b_in_place && gemm_cc::RowStrideReadsInPlace(ldb);
}

int64_t GemmInPlaceBlockDepth(int64_t columns) {
  const MicroKernel& kernel = gemm_cc::ActiveKernel();
  const bool wide = columns >= kernel.wide_min_cols && columns <= kernel.wide_max_cols;
  const bool tail_tile = kernel.reads_b_in_place && !wide && columns > kernel.nr + 8 &&
                         columns <= kernel.nr + 18;
  return tail_tile ? kGemmTailTileBlockDepth : kGemmInPlaceBlockDepth;
}

namespace gemm_cc {

// Copies rows [row0, row0 + rows) x depth [p0, p0 + kc) of A (row-major,
// lda) into one packed strip: out[p * mr + r]. Rows past `rows` are zero.
void PackStrip(const float* a, int64_t lda, int64_t row0, int rows, int64_t p0, int64_t kc,
               int mr, float* out) {
  const float* src = a + row0 * lda + p0;
  int64_t p = 0;
#if defined(MXLITE_X86_64)
  // Four rows by four depths at a time through an SSE transpose (SSE is in
  // every x86-64): the scalar loop ran at about one element per 3 cycles.
  if (rows == mr && mr % 4 == 0) {
    for (; p + 4 <= kc; p += 4) {
      for (int r = 0; r < mr; r += 4) {
        __m128 r0 = _mm_loadu_ps(src + r * lda + p);
        __m128 r1 = _mm_loadu_ps(src + (r + 1) * lda + p);
        __m128 r2 = _mm_loadu_ps(src + (r + 2) * lda + p);
        __m128 r3 = _mm_loadu_ps(src + (r + 3) * lda + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(out + p * mr + r, r0);
        _mm_storeu_ps(out + (p + 1) * mr + r, r1);
        _mm_storeu_ps(out + (p + 2) * mr + r, r2);
        _mm_storeu_ps(out + (p + 3) * mr + r, r3);
      }
    }
  }
#endif  // defined(MXLITE_X86_64)
  for (; p < kc; ++p) {
    float* dst = out + p * mr;
    for (int r = 0; r < rows; ++r) dst[r] = src[r * lda + p];
    for (int r = rows; r < mr; ++r) dst[r] = 0.f;
  }
}

// The same from a transposed A (stored depth x rows): each depth step is a
// contiguous run of the strip's rows.
void PackStripTransposed(const float* a, int64_t lda, int64_t row0, int rows, int64_t p0,
                         int64_t kc, int mr, float* out) {
  for (int64_t p = 0; p < kc; ++p) {
    float* dst = out + p * mr;
    std::memcpy(dst, a + (p0 + p) * lda + row0, sizeof(float) * rows);
    std::fill(dst + rows, dst + mr, 0.f);
  }
}

}  // namespace gemm_cc

Status PackedMatrix::Pack(const float* a, int64_t lda, int64_t rows, int64_t depth,
                          bool transposed, ThreadPool* pool, int64_t segment_depth,
                          int64_t max_block_depth) {
  using gemm_cc::CeilDiv;
  MXL_CHECK(segment_depth >= 0 && (segment_depth == 0 || depth % segment_depth == 0),
            "GEMM: segment depth ", segment_depth, " does not divide depth ", depth);
  MXL_CHECK(max_block_depth >= 0, "GEMM: negative block depth ", max_block_depth);
  const int64_t block_limit = max_block_depth > 0 ? max_block_depth : gemm_cc::kKc;
  kernel_ = &gemm_cc::ActiveKernel();
  rows_ = rows;
  depth_ = depth;
  segment_depth_ = segment_depth > 0 ? segment_depth : std::max<int64_t>(depth, 1);
  const int mr = kernel_->mr;
  strips_ = CeilDiv(rows, mr);
  // Each segment in near-equal blocks of at most KC (a 288-deep segment is
  // two blocks of 144, not 256 + 32), or of max_block_depth.
  block_start_.clear();
  const int64_t segment_blocks = CeilDiv(segment_depth_, block_limit);
  for (int64_t s0 = 0; s0 < depth; s0 += segment_depth_) {
    for (int64_t i = 0; i < segment_blocks; ++i) {
      block_start_.push_back(s0 + segment_depth_ * i / segment_blocks);
    }
  }
  const int64_t blocks = this->blocks();
  block_offset_.assign(static_cast<size_t>(blocks), 0);
  int64_t offset = 0;
  max_block_depth_ = 0;
  for (int64_t block = 0; block < blocks; ++block) {
    block_offset_[block] = offset;
    offset += strips_ * mr * BlockDepth(block);
    max_block_depth_ = std::max(max_block_depth_, BlockDepth(block));
  }
  // Every element is written below (padding rows as zeros), so a buffer of
  // the right size from an earlier call is reused as it is: no clearing, no
  // fresh pages to fault in.
  // kPackedSlack zeros after the last strip: a micro-kernel may load a whole
  // vector where a strip step holds fewer floats (see the tail kernels in
  // gemm_x86.cc).
  data_.resize(static_cast<size_t>(offset + kPackedSlack));
  std::fill(data_.end() - kPackedSlack, data_.end(), 0.f);
  ParallelFor(pool, blocks * strips_, [&](int64_t task) {
    const int64_t block = task / strips_, strip = task % strips_;
    const int64_t p0 = BlockStart(block), kc = BlockDepth(block);
    const int64_t row0 = strip * mr;
    const int strip_rows = static_cast<int>(std::min<int64_t>(mr, rows - row0));
    float* out = data_.data() + block_offset_[block] + strip * mr * kc;
    if (transposed) {
      gemm_cc::PackStripTransposed(a, lda, row0, strip_rows, p0, kc, mr, out);
    } else {
      gemm_cc::PackStrip(a, lda, row0, strip_rows, p0, kc, mr, out);
    }
  });
  return Status();
}

void PackedMatrix::ScaleRows(const float* scale) {
  const int mr = kernel_->mr;
  for (int64_t block = 0; block < blocks(); ++block) {
    const int64_t kc = BlockDepth(block);
    for (int64_t strip = 0; strip < strips_; ++strip) {
      float* values = data_.data() + block_offset_[block] + strip * mr * kc;
      const int strip_rows = static_cast<int>(std::min<int64_t>(mr, rows_ - strip * mr));
      for (int64_t step = 0; step < kc; ++step) {
        for (int lane = 0; lane < strip_rows; ++lane) {
          values[step * mr + lane] *= scale[strip * mr + lane];
        }
      }
    }
  }
}

void GemmPacked(const PackedMatrix& a, const float* b, int64_t ldb, int64_t n, float* c,
                int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, b, nullptr, ldb, false, nullptr, n, c, ldc, epilogue, pool);
}

void GemmPackedDepthHalves(const PackedMatrix& a, const float* b, int64_t ldb, int64_t n,
                           float* c, int64_t ldc, const GemmEpilogue& epilogue,
                           ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, b, nullptr, ldb, false, nullptr, n, c, ldc, epilogue, pool, nullptr, 0,
                        -1, /*split_depth=*/true);
}

void GemmPackedTransformedB(const PackedMatrix& a, const float* b, int64_t ldb, int64_t n,
                            float* c, int64_t ldc, const GemmEpilogue& epilogue,
                            const GemmRowTransform& transform, ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, b, nullptr, ldb, false, nullptr, n, c, ldc, epilogue, pool,
                        transform.apply ? &transform : nullptr);
}

void GemmSegmentedB(const PackedMatrix& a, const float* const* b_segments, int64_t ldb,
                    int64_t n, float* c, int64_t ldc, const GemmEpilogue& epilogue,
                    ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, nullptr, b_segments, ldb, false, nullptr, n, c, ldc, epilogue, pool);
}

void GemmPrepackedB(const PackedMatrix& a, const float* b_packed, int64_t n, float* c,
                    int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, nullptr, nullptr, 0, false, b_packed, n, c, ldc, epilogue, pool);
}

void GemmPackedSegments(const PackedMatrix& a, int64_t segment_begin, int64_t segment_end,
                        const float* b, int64_t ldb, int64_t n, float* c, int64_t ldc,
                        const GemmEpilogue& epilogue, ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, b, nullptr, ldb, false, nullptr, n, c, ldc, epilogue, pool, nullptr,
                        segment_begin, segment_end);
}

void GemmPrepackedBSegments(const PackedMatrix& a, int64_t segment_begin, int64_t segment_end,
                            const float* b_packed, int64_t n, float* c, int64_t ldc,
                            const GemmEpilogue& epilogue, ThreadPool* pool) {
  gemm_cc::GemmDispatch(a, nullptr, nullptr, 0, false, b_packed, n, c, ldc, epilogue, pool,
                        nullptr, segment_begin, segment_end);
}

Status PackGroups(const float* weights, int64_t groups, int64_t rows, int64_t depth,
                  bool transposed, ThreadPool* pool, PackedGroups* out) {
  out->groups.resize(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    MXL_RETURN_IF_ERROR(out->groups[g].Pack(weights + g * rows * depth, transposed ? rows : depth,
                                            rows, depth, transposed, pool));
  }
  return Status();
}

void PackBMatrix(const float* b, int64_t ldb, bool transposed, int64_t depth, int64_t n,
                 std::vector<float>* packed) {
  const int nr = gemm_cc::ActiveKernel().nr;
  packed->assign(static_cast<size_t>(gemm_cc::CeilDiv(n, nr) * nr * depth), 0.f);
  if (n > 0 && depth > 0) gemm_cc::PackB(b, ldb, transposed, 0, depth, 0, n, nr, packed->data());
}

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
           ThreadPool* pool) {
  if (m <= 0 || n <= 0) return;
  GemmEpilogue epilogue;
  if (beta != 0.f) {
    if (beta != 1.f) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= beta;
      }
    }
    epilogue.accumulate = true;
  }
  PackedMatrix packed;
  packed.Pack(a, lda, m, k, trans_a, pool);
  gemm_cc::GemmDispatch(packed, b, nullptr, ldb, trans_b, nullptr, n, c, ldc, epilogue, pool);
}

void SgemvRows(int64_t n, int64_t k, const float* w, const float* x, float* y, ThreadPool* pool) {
  const int threads = pool ? pool->size() : 1;
  const int64_t chunk = std::max<int64_t>(1, (n + threads - 1) / threads);
  if (const GemvRowsFn gemv_rows = GemmKernels().gemv_rows) {
    ParallelFor(pool, (n + chunk - 1) / chunk, [&](int64_t task) {
      const int64_t begin = task * chunk, end = std::min(n, begin + chunk);
      gemv_rows(end - begin, k, w + begin * k, x, y + begin);
    });
    return;
  }
  ParallelFor(pool, (n + chunk - 1) / chunk, [&](int64_t task) {
    const int64_t end = std::min(n, (task + 1) * chunk);
    for (int64_t row = task * chunk; row < end; ++row) {
      const float* wr = w + row * k;
      // Sixteen partial sums break the dependency chain so the loop
      // vectorises.
      float partial[16] = {};
      int64_t i = 0;
      for (; i + 16 <= k; i += 16) {
        for (int lane = 0; lane < 16; ++lane) partial[lane] += wr[i + lane] * x[i + lane];
      }
      float sum = 0.f;
      for (; i < k; ++i) sum += wr[i] * x[i];
      for (int lane = 0; lane < 16; ++lane) sum += partial[lane];
      y[row] = sum;
    }
  });
}

const char* GemmKernelName() { return gemm_cc::ActiveKernel().name; }

}  // namespace mxlite
