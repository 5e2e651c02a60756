/*
 * The strided-copy family (see strided_copy.h): the portable loops and the
 * table that picks the family's implementation once, from the instruction
 * set (SelectedIsa). The vector kernels live one file per instruction set
 * (strided_copy_avx512.cc, strided_copy_avx2.cc); a new one is a file and a
 * line of kStridedCopyImplementations.
 */
#include "strided_copy.h"

#include <algorithm>

#include "cpu_features.h"

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

// The portable loops, for every call.
bool GatherRowsPortable(const GatherRowsCall& c) {
  if (IsShiftedBand(c)) {
    GatherShiftedRows(c.plane, PlanShiftedBand(c.height, c.width, c.first_row, c.rows, c.first),
                      c.dst);
    return true;
  }
  float* dst = c.dst;
  for (int64_t r = 0; r < c.rows; ++r, dst += c.count) {
    const int64_t y = c.first_row + r * c.row_step;
    if (y < 0 || y >= c.height) {
      std::fill(dst, dst + c.count, 0.f);
    } else {
      GatherRow(c.plane + y * c.width, c.width, c.first, c.stride, c.count, dst);
    }
  }
  return true;
}

// One implementation of the family: gather runs a call where it pays, else
// returns false for the portable loops.
struct StridedCopyImplementation {
  Isa isa;
  bool (*gather)(const GatherRowsCall& call);
};

// In order of preference: the first whose instruction set is selected.
const StridedCopyImplementation kStridedCopyImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, GatherRowsAvx512},
    {Isa::kAvx2, GatherRowsAvx2},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, GatherRowsPortable},
};

const StridedCopyImplementation& Chosen() {
  static const StridedCopyImplementation& chosen =
      ChooseImplementation(kStridedCopyImplementations);
  return chosen;
}

}  // namespace strided_copy_cc

void GatherRowsZeroPadded(const float* plane, int64_t height, int64_t width, int64_t first_row,
                          int64_t row_step, int64_t rows, int64_t first, int64_t stride,
                          int64_t count, float* dst, int64_t prefetch_bytes) {
  if (rows <= 0 || count <= 0) return;
  const GatherRowsCall call = {plane, height, width, first_row, row_step, rows,
                               first, stride, count, dst, prefetch_bytes};
  if (!strided_copy_cc::Chosen().gather(call)) strided_copy_cc::GatherRowsPortable(call);
}

}  // namespace mxlite
