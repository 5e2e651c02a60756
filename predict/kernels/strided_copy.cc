#include "strided_copy.h"

#include <algorithm>

#include "cpu_features.h"
#include "x86_simd.h"

namespace mxlite {

namespace strided_copy_cc {

// One row: the portable loop.
void GatherRow(const float* row, int64_t width, int64_t first, int64_t stride, int64_t count,
               float* dst) {
  // Outputs [lo, hi) read inside the row: first + i * stride in [0, width).
  const int64_t lo = std::min(count, first >= 0 ? 0 : (-first + stride - 1) / stride);
  const int64_t hi =
      std::max(lo, std::min(count, width - first <= 0 ? 0 : (width - first + stride - 1) / stride));
  std::fill(dst, dst + lo, 0.f);
  if (stride == 1) {
    if (hi > lo) std::copy(row + first + lo, row + first + hi, dst + lo);
  } else {
    for (int64_t i = lo; i < hi; ++i) dst[i] = row[first + i * stride];
  }
  std::fill(dst + hi, dst + count, 0.f);
}

// Stride 1, consecutive rows, outputs as wide as the input (a 'same'
// padded stride-1 tap: Inception's 1x7, 3x3 and 5x5 layers, ResNet's 3x3).
// Then the band's rows inside the plane are one run of the plane shifted by
// `first` floats: copied as one block, after which the `first` columns of
// each row that wrapped into the neighbouring row (or fell outside the
// plane) are zeroed. A copy per row cost about as much as the 3x3 layer's
// GEMM on Zen 3 (a 56-float row per call, 32K calls per layer).
struct ShiftedBand {
  int64_t width, rows;
  int64_t inside_begin, inside_end;  // rows of the band that lie in the plane
  int64_t base;                      // dst[i] = plane[base + i] for i in [begin, end)
  int64_t begin, end;
  int64_t edge_begin, edge;  // the columns of each inside row that lie outside the row
};

ShiftedBand PlanShiftedBand(int64_t height, int64_t width, int64_t first_row, int64_t rows,
                            int64_t first) {
  ShiftedBand band;
  band.width = width;
  band.rows = rows;
  band.inside_begin = std::min(rows, std::max<int64_t>(0, -first_row));
  band.inside_end = std::max(band.inside_begin, std::min(rows, height - first_row));
  band.base = first_row * width + first;
  band.begin = std::max(band.inside_begin * width, -band.base);
  band.end = std::max(band.begin, std::min(band.inside_end * width, height * width - band.base));
  band.edge_begin = first < 0 ? 0 : width - first;
  band.edge = first < 0 ? -first : first;
  return band;
}

void GatherShiftedRows(const float* plane, const ShiftedBand& band, float* dst) {
  std::fill(dst, dst + band.inside_begin * band.width, 0.f);
  std::fill(dst + band.inside_end * band.width, dst + band.rows * band.width, 0.f);
  if (band.end > band.begin) {
    std::copy(plane + (band.base + band.begin), plane + (band.base + band.end), dst + band.begin);
  }
  for (int64_t r = band.inside_begin; r < band.inside_end; ++r) {
    float* edge = dst + r * band.width + band.edge_begin;
    std::fill(edge, edge + band.edge, 0.f);
  }
}

#if defined(MXLITE_X86_64)
constexpr int64_t kMaxBlocks = 16;  // rows of up to 256 outputs take the vector path

// How one block of sixteen outputs of every row is gathered. Either one
// masked load at row + offset (stride 1, window inside or past the right
// edge), or two masked loads at row + offset (offset >= 0: never before the
// row) whose 32 floats a permute picks lanes from.
struct Block {
  int64_t offset;
  bool empty;   // no lane inside the row: zeros
  bool direct;
  __mmask16 low, high, valid, store;
  __m512i index;
};

MXLITE_TARGET_AVX512_INLINE void ZeroFloatsAvx512(float* dst, int64_t count) {
  for (int64_t i = 0; i < count; i += 16) {
    _mm512_mask_storeu_ps(dst + i, LanesBelowAvx512(count - i), _mm512_setzero_ps());
  }
}

MXLITE_TARGET_AVX512 void GatherShiftedRowsAvx512(const float* plane, const ShiftedBand& band,
                                                  int64_t prefetch_bytes, float* dst) {
  ZeroFloatsAvx512(dst, band.inside_begin * band.width);
  ZeroFloatsAvx512(dst + band.inside_end * band.width,
                   (band.rows - band.inside_end) * band.width);
  int64_t i = band.begin;
  for (; i + 16 <= band.end; i += 16) {
    if (prefetch_bytes != 0) PrefetchAhead(plane + (band.base + i), prefetch_bytes);
    _mm512_storeu_ps(dst + i, _mm512_loadu_ps(plane + (band.base + i)));
  }
  if (i < band.end) {
    const __mmask16 tail = LanesBelowAvx512(band.end - i);
    _mm512_mask_storeu_ps(dst + i, tail, _mm512_maskz_loadu_ps(tail, plane + (band.base + i)));
  }
  for (int64_t r = band.inside_begin; r < band.inside_end; ++r) {
    ZeroFloatsAvx512(dst + r * band.width + band.edge_begin, band.edge);
  }
}

MXLITE_TARGET_AVX512 void GatherRowsAvx512(const float* plane, int64_t height, int64_t width,
                                           int64_t first_row, int64_t row_step, int64_t rows,
                                           int64_t first, int64_t stride, int64_t count,
                                           int64_t prefetch_bytes, float* dst) {
  Block blocks[kMaxBlocks];
  const int64_t block_count = (count + 15) / 16;
  const __m512i lane_columns = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      _mm512_set1_epi32(static_cast<int>(stride)));
  for (int64_t b = 0; b < block_count; ++b) {
    Block& block = blocks[b];
    const int64_t start = first + 16 * b * stride;  // column of lane 0
    // Lanes [lo, hi) read inside the row (and are outputs).
    const int64_t lo = start >= 0 ? 0 : std::min<int64_t>(16, (-start + stride - 1) / stride);
    const int64_t hi = std::max(
        lo, std::min({int64_t{16}, count - 16 * b,
                      width - start <= 0 ? 0 : (width - start + stride - 1) / stride}));
    block.store = LanesBelowAvx512(count - 16 * b);
    block.valid = static_cast<__mmask16>(LanesBelowAvx512(hi) & ~LanesBelowAvx512(lo));
    block.empty = block.valid == 0;
    block.offset = std::max<int64_t>(start, 0);
    block.direct = stride == 1 && start >= 0;
    block.low = block.direct ? block.valid : LanesInsideAvx512(block.offset, width);
    block.high = LanesInsideAvx512(block.offset + 16, width);
    // Lane l takes float start + l * stride - offset of the two loads:
    // within [0, 32) for every valid lane.
    block.index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(start - block.offset)),
                                   lane_columns);
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r, dst += count) {
    const int64_t y = first_row + r * row_step;
    if (y < 0 || y >= height) {
      for (int64_t b = 0; b < block_count; ++b) {
        _mm512_mask_storeu_ps(dst + 16 * b, blocks[b].store, zero);
      }
      continue;
    }
    const float* row = plane + y * width;
    if (prefetch_bytes != 0) PrefetchRowAhead(row, width, prefetch_bytes);
    for (int64_t b = 0; b < block_count; ++b) {
      const Block& block = blocks[b];
      __m512 v = zero;
      if (block.empty) {
      } else if (block.direct) {
        v = _mm512_maskz_loadu_ps(block.low, row + block.offset);
      } else {
        const __m512 low = _mm512_maskz_loadu_ps(block.low, row + block.offset);
        const __m512 high = block.high ? _mm512_maskz_loadu_ps(block.high, row + block.offset + 16)
                                       : zero;
        v = _mm512_maskz_permutex2var_ps(block.valid, low, block.index, high);
      }
      _mm512_mask_storeu_ps(dst + 16 * b, block.store, v);
    }
  }
}

// AVX2: the same per-block plan with eight outputs a block and no mask
// registers. A block's loads start at its first column even where that
// lies left of the row (the masked-off lanes read nothing and load zeros,
// so the padding needs no separate mask); stride 2 loads sixteen columns
// and keeps the even ones. The blocks whose loads lie inside the row are
// one run in the middle, copied by a loop without masks or branches (with
// a branch per block the stride-1 rows ran at 0.6x of memcpy). Masked
// stores are slow on Zen 3 (a dozen-odd cycles each), so there are none
// where count >= 8: the last block of a row starts at output count - 8,
// overlapping the one before it. Shorter rows store eight floats, the
// spill into the next row rewritten by it, and only dst's last eight
// floats take a masked store.
constexpr int64_t kMaxBlocksAvx2 = 32;  // rows of up to 256 outputs take the AVX2 path

struct BlockAvx2 {
  int64_t output;  // its first output: 8 * b, or count - 8 for the last
  int64_t offset;  // column of its first load (may be negative or past the row)
  bool empty;      // no lane inside the row: zeros
  __m256i low, high;  // lanes of the loads at offset and offset + 8 inside the row
};

// Columns 0, 2, ..., 14 of low (0-7) and high (8-15): the even lanes of
// each 128-bit half, then the halves' pairs put in order.
MXLITE_TARGET_AVX2_INLINE __m256 EvenLanesAvx2(__m256 low, __m256 high) {
  const __m256 evens = _mm256_shuffle_ps(low, high, 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xd8));
}

template <int kStride>
MXLITE_TARGET_AVX2_INLINE __m256 GatherWholeBlockAvx2(const float* at) {
  if (kStride == 1) return _mm256_loadu_ps(at);
  return EvenLanesAvx2(_mm256_loadu_ps(at), _mm256_loadu_ps(at + 8));
}

// A block whose loads reach past the row (or lie wholly outside it).
template <int kStride>
MXLITE_TARGET_AVX2_INLINE __m256 GatherEdgeBlockAvx2(const float* row,
                                                     const BlockAvx2& block) {
  if (block.empty) return _mm256_setzero_ps();
  const __m256 low = _mm256_maskload_ps(OffsetAddress(row, block.offset), block.low);
  if (kStride == 1) return low;
  return EvenLanesAvx2(low, _mm256_maskload_ps(OffsetAddress(row, block.offset + 8), block.high));
}

MXLITE_TARGET_AVX2_INLINE void StoreBlockAvx2(float* dst, bool whole, __m256i tail,
                                              __m256 v) {
  if (whole) {
    _mm256_storeu_ps(dst, v);
  } else {
    _mm256_maskstore_ps(dst, tail, v);
  }
}

template <int kStride>
MXLITE_TARGET_AVX2 void GatherRowsAvx2(const float* plane, int64_t height, int64_t width,
                                       int64_t first_row, int64_t row_step, int64_t rows,
                                       int64_t first, int64_t count, int64_t prefetch_bytes,
                                       float* dst) {
  BlockAvx2 blocks[kMaxBlocksAvx2];
  const int64_t block_count = (count + 7) / 8;
  // Blocks [whole_begin, whole_end) load only columns inside the row and
  // are stored whole; only the others need masks (working out all the
  // masks of a 147-output row took a third of the time of its 8 rows).
  int64_t whole_begin = block_count, whole_end = block_count;
  for (int64_t b = 0; b < block_count; ++b) {
    BlockAvx2& block = blocks[b];
    block.output = count >= 8 ? std::min(8 * b, count - 8) : 0;
    block.offset = first + block.output * kStride;
    // (count < 8: not stored whole in the last rows.)
    if (count >= 8 && block.offset >= 0 && block.offset + 8 * kStride <= width) {
      if (whole_begin == block_count) whole_begin = b;
      continue;
    }
    if (whole_begin != block_count && whole_end == block_count) whole_end = b;
    block.low = LanesInsideAvx2(block.offset, width);
    block.high = LanesInsideAvx2(block.offset + 8, width);
    block.empty = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(
                      block.low, kStride == 2 ? block.high : block.low))) == 0;
  }
  // count < 8: the mask of the one block's outputs, for the rows that
  // may not spill eight floats.
  const __m256i tail = LanesInsideAvx2(0, count);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t r = 0; r < rows; ++r, dst += count) {
    const bool whole = (rows - r) * count >= 8;  // eight floats from dst on are ours
    const int64_t y = first_row + r * row_step;
    if (y < 0 || y >= height) {
      for (int64_t b = 0; b < block_count; ++b) {
        StoreBlockAvx2(dst + blocks[b].output, whole, tail, zero);
      }
      continue;
    }
    const float* row = plane + y * width;
    if (prefetch_bytes != 0) PrefetchRowAhead(row, width, prefetch_bytes);
    for (int64_t b = 0; b < whole_begin; ++b) {
      StoreBlockAvx2(dst + blocks[b].output, whole, tail,
                     GatherEdgeBlockAvx2<kStride>(row, blocks[b]));
    }
    if (whole_begin < whole_end) {
      // The middle run, as memcpy does it: stores aligned to 32 bytes
      // after an unaligned first one, and an unaligned last one ending at
      // the run's end (each overlapping its neighbour). Half the unaligned
      // stores straddle two lines, and copying long stride-1 rows with
      // them ran at 0.6x of memcpy.
      const int64_t run_begin = blocks[whole_begin].output;
      const int64_t run = blocks[whole_end - 1].output + 8 - run_begin;  // >= 8
      float* out = dst + run_begin;
      const float* in = row + blocks[whole_begin].offset;
      _mm256_storeu_ps(out, GatherWholeBlockAvx2<kStride>(in));
      int64_t i = 8 - static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) % 32 / sizeof(float));
      for (; i + 8 <= run; i += 8) {
        _mm256_store_ps(out + i, GatherWholeBlockAvx2<kStride>(in + i * kStride));
      }
      if (i < run) {
        _mm256_storeu_ps(out + (run - 8), GatherWholeBlockAvx2<kStride>(in + (run - 8) * kStride));
      }
    }
    for (int64_t b = whole_end; b < block_count; ++b) {
      StoreBlockAvx2(dst + blocks[b].output, whole, tail,
                     GatherEdgeBlockAvx2<kStride>(row, blocks[b]));
    }
  }
}
#endif  // MXLITE_X86_64

}  // namespace strided_copy_cc

void GatherRowsZeroPadded(const float* plane, int64_t height, int64_t width, int64_t first_row,
                          int64_t row_step, int64_t rows, int64_t first, int64_t stride,
                          int64_t count, float* dst, int64_t prefetch_bytes) {
  if (rows <= 0 || count <= 0) return;
  const bool shifted_band =
      stride == 1 && row_step == 1 && count == width && first > -width && first < width;
  const strided_copy_cc::ShiftedBand band =
      strided_copy_cc::PlanShiftedBand(height, width, first_row, rows, first);
#if defined(MXLITE_X86_64)
  static const bool avx512 = SelectedIsa() == Isa::kAvx512;
  if (avx512 && shifted_band) {
    strided_copy_cc::GatherShiftedRowsAvx512(plane, band, prefetch_bytes, dst);
    return;
  }
  if (avx512 && stride <= 2 && count <= 16 * strided_copy_cc::kMaxBlocks) {
    strided_copy_cc::GatherRowsAvx512(plane, height, width, first_row, row_step, rows, first,
                                      stride, count, prefetch_bytes, dst);
    return;
  }
  // Whole stride-1 bands keep the portable copy (one memcpy of the band),
  // and so do stride-1 rows of 64 outputs or more: memcpy copied 71- and
  // 147-float rows at 1.0-1.15x the speed of the blocks (a 12-float row
  // takes 0.7x its time in blocks: the call and the fills cost).
  static const bool avx2 = SelectedIsa() == Isa::kAvx2;
  const int64_t avx2_limit = stride == 1 ? 63 : 8 * strided_copy_cc::kMaxBlocksAvx2;
  if (avx2 && !shifted_band && stride <= 2 && count <= avx2_limit) {
    (stride == 1 ? strided_copy_cc::GatherRowsAvx2<1> : strided_copy_cc::GatherRowsAvx2<2>)(
        plane, height, width, first_row, row_step, rows, first, count, prefetch_bytes, dst);
    return;
  }
#else
  (void)prefetch_bytes;  // the portable loops leave fetching to the hardware
#endif  // defined(MXLITE_X86_64)
  if (shifted_band) {
    strided_copy_cc::GatherShiftedRows(plane, band, dst);
    return;
  }
  for (int64_t r = 0; r < rows; ++r, dst += count) {
    const int64_t y = first_row + r * row_step;
    if (y < 0 || y >= height) {
      std::fill(dst, dst + count, 0.f);
    } else {
      strided_copy_cc::GatherRow(plane + y * width, width, first, stride, count, dst);
    }
  }
}

}  // namespace mxlite
