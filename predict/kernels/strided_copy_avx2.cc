/*
 * GatherRowsZeroPadded with AVX2 (see strided_copy.h): one line of the
 * family's table in strided_copy.cc.
 */
#include <algorithm>
#include <cstdint>

#include "strided_copy.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace strided_copy_avx2 {

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
MXLITE_TARGET_AVX2 void RowsAvx2(const float* plane, int64_t height, int64_t width,
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

}  // namespace strided_copy_avx2

bool GatherRowsAvx2(const GatherRowsCall& c) {
  using namespace strided_copy_avx2;
  // Whole stride-1 bands keep the portable copy (one memcpy of the band),
  // and so do stride-1 rows of 64 outputs or more: memcpy copied 71- and
  // 147-float rows at 1.0-1.15x the speed of the blocks (a 12-float row
  // takes 0.7x its time in blocks: the call and the fills cost).
  const int64_t limit = c.stride == 1 ? 63 : 8 * kMaxBlocksAvx2;
  if (IsShiftedBand(c) || c.stride > 2 || c.count > limit) return false;
  (c.stride == 1 ? RowsAvx2<1> : RowsAvx2<2>)(c.plane, c.height, c.width, c.first_row,
                                               c.row_step, c.rows, c.first, c.count,
                                               c.prefetch_bytes, c.dst);
  return true;
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
