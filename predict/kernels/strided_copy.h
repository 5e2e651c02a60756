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

}  // namespace mxlite

#endif  // MXLITE_KERNELS_STRIDED_COPY_H_
