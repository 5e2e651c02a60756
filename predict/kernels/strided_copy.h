/*
 * Gathering rows of im2col's column matrix: every stride-th float of input
 * rows, with zeros where the taps fall into the padding (left, right, or a
 * whole row above or below the input).
 *
 * A 3x3 layer on a 14x14 map has 14-float rows, so the cost per row is what
 * counts: one call covers every row of a tap, and with AVX-512 each sixteen
 * outputs of a row take one masked load (two and a permute where the
 * window starts in the left padding or the stride is 2) and one masked
 * store, the masks and permutes worked out once per call, the padding
 * coming from the masks. (A memcpy and two fills per row, as before, took
 * 5 ns a row: half of such a layer's time.) AVX2 does the same in blocks
 * of eight for stride 2 and for stride-1 rows of under 64 outputs, masked
 * loads only at a row's edges and no masked stores where a row has eight
 * outputs or more (longer stride-1 rows keep memcpy, as fast there).
 */
#ifndef MXLITE_KERNELS_STRIDED_COPY_H_
#define MXLITE_KERNELS_STRIDED_COPY_H_

#include <algorithm>
#include <cstdint>

namespace mxlite {

// For r in [0, rows) and i in [0, count):
//   dst[r * count + i] = plane[y * width + x], y = first_row + r * row_step,
//                        x = first + i * stride,
// or 0 where y is outside [0, height) or x outside [0, width).
// stride >= 1; first_row and first may be negative. Reads nothing outside
// the plane and writes nothing past dst[rows * count).
//
// prefetch_bytes != 0 asks the vector paths to also prefetch each input
// row it reads, prefetch_bytes further on: a caller that gathers plane
// after plane passes the distance to a later plane, so that plane's rows
// come from memory while this one is copied (a prefetch never faults, so
// the distance may run past the last plane).
void GatherRowsZeroPadded(const float* plane, int64_t height, int64_t width, int64_t first_row,
                          int64_t row_step, int64_t rows, int64_t first, int64_t stride,
                          int64_t count, float* dst, int64_t prefetch_bytes = 0);

// The rest is internal to the family: the table in strided_copy.cc, the
// kernels one file per instruction set (strided_copy_avx512.cc,
// strided_copy_avx2.cc).

// The arguments of one GatherRowsZeroPadded call.
struct GatherRowsCall {
  const float* plane;
  int64_t height, width, first_row, row_step, rows, first, stride, count;
  float* dst;
  int64_t prefetch_bytes;
};

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

inline ShiftedBand PlanShiftedBand(int64_t height, int64_t width, int64_t first_row, int64_t rows,
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

// Whether a call is a whole shifted band (see ShiftedBand).
inline bool IsShiftedBand(const GatherRowsCall& c) {
  return c.stride == 1 && c.row_step == 1 && c.count == c.width && c.first > -c.width &&
         c.first < c.width;
}

// An instruction set's kernels: each runs the call and returns true where
// it has a kernel that pays, else returns false (the portable loops then
// run it).
bool GatherRowsAvx512(const GatherRowsCall& call);
bool GatherRowsAvx2(const GatherRowsCall& call);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_STRIDED_COPY_H_
