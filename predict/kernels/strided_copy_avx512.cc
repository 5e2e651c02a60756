/*
 * GatherRowsZeroPadded with AVX-512 (see strided_copy.h): one line of the
 * family's table in strided_copy.cc.
 */
#include <algorithm>
#include <cstdint>

#include "strided_copy.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace strided_copy_avx512 {

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

MXLITE_TARGET_AVX512 void RowsAvx512(const float* plane, int64_t height, int64_t width,
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

}  // namespace strided_copy_avx512

bool GatherRowsAvx512(const GatherRowsCall& c) {
  using namespace strided_copy_avx512;
  if (IsShiftedBand(c)) {
    const ShiftedBand band = PlanShiftedBand(c.height, c.width, c.first_row, c.rows, c.first);
    GatherShiftedRowsAvx512(c.plane, band, c.prefetch_bytes, c.dst);
    return true;
  }
  if (c.stride <= 2 && c.count <= 16 * kMaxBlocks) {
    RowsAvx512(c.plane, c.height, c.width, c.first_row, c.row_step, c.rows, c.first, c.stride,
               c.count, c.prefetch_bytes, c.dst);
    return true;
  }
  return false;
}

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)
