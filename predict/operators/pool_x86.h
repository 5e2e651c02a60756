/*
 * What the x86-64 pooling kernels (pool_avx512.cc, pool_avx2.cc) share: the
 * 2-D view of a planar geometry, the padded grid and per-thread scratch of
 * the channel-blocked kernels, and their entry points for the algorithm
 * table (pool_algorithms.cc).
 *
 * Every kernel reproduces the scalar reference to the bit (see
 * pool_algorithms.h for the arithmetic): each output's terms are taken in
 * row-major window order; the padding a kernel reads holds a value that is
 * an exact no-op (-FLT_MAX for max, never beating the running maximum that
 * starts there; +0 for average, as x + 0/d is x and a sum started at +0 is
 * never -0); and max(v, acc) keeps acc when v is NaN or equal, as the
 * scalar `if (v > best)` does.
 */
#ifndef MXLITE_OPERATORS_POOL_X86_H_
#define MXLITE_OPERATORS_POOL_X86_H_

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <memory>
#include <vector>

#include "../kernels/x86_simd.h"
#include "pool_algorithms.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace pool_x86 {

// 2-D max or average pooling of one plane (a planar geometry's height and
// width).
struct Plane2d {
  int64_t in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  bool max;
  const float* row_extent;  // average: per output row and column, the window
  const float* col_extent;  // extents whose product is the divisor
  // PoolGeometry::UniformDivisor(): average whose divisor is the same for
  // every window, else 0.
  float uniform_divisor;
};

// The plane view of a planar geometry; *row_extent and *col_extent get the
// divisor's factors and must outlive the result.
inline Plane2d PlaneOf(const PoolGeometry& g, std::vector<float>* row_extent,
                       std::vector<float>* col_extent) {
  for (int d = 1; d < 3; ++d) {
    std::vector<float>& extent = d == 1 ? *row_extent : *col_extent;
    extent.clear();
    for (int64_t o = 0; o < g.out[d]; ++o) {
      const PoolSpan span = PoolWindowSpan(o, g.in[d], g.kernel[d], g.stride[d], g.pad[d]);
      extent.push_back(
          static_cast<float>(g.count_include_pad ? span.padded_extent : span.end - span.begin));
    }
  }
  Plane2d p;
  p.in_h = g.in[1];
  p.in_w = g.in[2];
  p.out_h = g.out[1];
  p.out_w = g.out[2];
  p.kernel_h = g.kernel[1];
  p.kernel_w = g.kernel[2];
  p.stride_h = g.stride[1];
  p.stride_w = g.stride[2];
  p.pad_h = g.pad[1];
  p.pad_w = g.pad[2];
  p.max = g.type == PoolType::kMax;
  p.row_extent = row_extent->data();
  p.col_extent = col_extent->data();
  p.uniform_divisor = g.UniformDivisor();
  return p;
}

// The row kernels' average: per-window divisors, or every element divided
// by the uniform divisor once, up front.
enum class PlaneOp { kAverage, kAveragePredivided };

// Widest kernel_w the separable max kernels take (their per-tap masks).
constexpr int64_t kMaxPoolSeparableTaps = 16;

// Planes whose row maxima take at most this many floats (8 KB, a sixth of
// the smallest L1 this runs on) make them all before the column pass in the
// separable max kernels: their ring's per-row setup costs more than the
// rows there.
constexpr int64_t kWholePlaneRowMaxima = 2048;

// The separable max kernels' ring of row maxima, this thread's: room for
// at least `rows` rows of `width` floats; row r's maxima go to row
// r & *mask (a power of two of rows: a division per row to find its slot
// cost more than the row on 17-wide planes).
inline float* RowMaximaRing(int64_t rows, int64_t width, int64_t* mask) {
  int64_t ring_rows = 1;
  while (ring_rows < rows) ring_rows *= 2;
  *mask = ring_rows - 1;
  thread_local std::vector<float> ring;
  if (ring.size() < static_cast<size_t>(ring_rows * width)) {
    ring.resize(static_cast<size_t>(ring_rows * width));
  }
  return ring.data();
}

// The separable max kernels' plain loads. For the column block of `lanes`
// outputs from output column ow (stride_w 1 or 2), the rows [0, result)
// that may load their taps without masks: the block's windows use only
// columns inside the row, and every load (the last ends at the block's
// first column + lanes * stride_w - 1 + kernel_w - 1) ends inside the
// plane. Lanes read past the row's end feed only columns no stored output
// uses. On 17- and 35-wide planes every block reaches past the row, and
// masking them all costs more than the windows.
inline int64_t UnmaskedBlockRows(const Plane2d& p, int64_t ow, int64_t lanes) {
  const int64_t first_column = ow * p.stride_w - p.pad_w;
  const int64_t last_used =
      (std::min(ow + lanes, p.out_w) - 1) * p.stride_w - p.pad_w + p.kernel_w - 1;
  if (first_column < 0 || last_used >= p.in_w) return 0;
  const int64_t reach = lanes * p.stride_w - 1 + p.kernel_w - 1;
  // Rows r whose loads end inside the plane: r * in_w + first + reach < in_h * in_w.
  const int64_t room = p.in_h * p.in_w - 1 - first_column - reach;
  return room < 0 ? 0 : std::min(p.in_h, room / p.in_w + 1);
}

// Planes per block of the channel-blocked kernels: one vector lane each.
constexpr int64_t kPoolBlockLanes = 16;      // AVX-512
constexpr int64_t kPoolBlockLanesAvx2 = 8;   // AVX2

// Planes of at most this many padded pixels take the blocked path: the
// scratch (64 bytes a pixel) then stays within L2.
constexpr int64_t kPoolBlockMaxPixels = 4096;

struct PaddedGrid {
  int64_t rows, cols;  // padded extent: every window of every output inside
};

inline PaddedGrid PaddedGridOf(const Plane2d& p) {
  return {PoolPaddedExtent(p.in_h, p.out_h, p.kernel_h, p.stride_h, p.pad_h),
          PoolPaddedExtent(p.in_w, p.out_w, p.kernel_w, p.stride_w, p.pad_w)};
}

// For the `lanes` output pixels from (*oh, *ow) on (the last `pixels` <=
// lanes of them real: lanes past the last pixel repeat it, in bounds and
// never stored), the offset of each window's corner in the scratch of
// `lanes` floats a pixel and, when `divisors_needed`, its divisor; then
// steps (*oh, *ow) past them. Shared by both ISAs' blocked kernels.
inline void WindowCorners(const Plane2d& p, const PaddedGrid& grid, int64_t lanes,
                          int64_t pixels, bool divisors_needed, int64_t* oh, int64_t* ow,
                          int64_t* corner, float* divisors) {
  for (int64_t j = 0; j < lanes; ++j) {
    corner[j] = (*oh * p.stride_h * grid.cols + *ow * p.stride_w) * lanes;
    if (divisors_needed) divisors[j] = p.row_extent[*oh] * p.col_extent[*ow];
    if (j + 1 < pixels && ++*ow == p.out_w) {
      *ow = 0;
      ++*oh;
    }
  }
  if (++*ow == p.out_w) {  // step past the chunk's last pixel
    *ow = 0;
    ++*oh;
  }
}

// The blocked kernels' per-thread scratch of `lanes` floats a pixel over the
// padded grid, aligned to `lanes` floats (so that no pixel's vector
// straddles two cache lines), its border filled with the padding's value
// once per thread and geometry: only the transposes write it, always inside
// the border.
inline float* BlockScratch(const Plane2d& p, const PaddedGrid& grid, int64_t lanes) {
  thread_local std::vector<float> scratch;
  const size_t floats = static_cast<size_t>(grid.rows * grid.cols * lanes);
  const size_t slack = static_cast<size_t>(lanes);  // room to align the start
  if (scratch.size() < floats + slack) scratch.resize(floats + slack);
  float* window = scratch.data();
  window += (lanes - reinterpret_cast<uintptr_t>(window) / sizeof(float) % lanes) % lanes;
  thread_local const float* filled_window = nullptr;
  thread_local int64_t filled_geometry[8] = {};
  const int64_t geometry[8] = {grid.rows, grid.cols, p.pad_h, p.pad_w,
                               p.in_h,    p.in_w,    p.max,   lanes};
  if (filled_window != window || !std::equal(geometry, geometry + 8, filled_geometry)) {
    std::fill(window, window + floats, p.max ? -FLT_MAX : 0.f);
    filled_window = window;
    std::copy(geometry, geometry + 8, filled_geometry);
  }
  return window;
}

// A kernel over planar geometries: the geometry and its plane view.
class PlaneKernel : public PoolKernel {
 public:
  explicit PlaneKernel(const PoolGeometry& g)
      : g_(g), plane_(PlaneOf(g, &row_extent_, &col_extent_)) {}

 protected:
  const PoolGeometry g_;
  std::vector<float> row_extent_, col_extent_;  // plane_'s divisor factors
  const Plane2d plane_;
};

}  // namespace pool_x86

// The table's entry points (each builds a PoolKernel over all planes).
namespace pool_avx512 {
Status PrepareWholePlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
Status PrepareBlockedPlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
Status PrepareRows(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
}  // namespace pool_avx512
namespace pool_avx2 {
Status PrepareWholePlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
Status PrepareAverageRows(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
Status PrepareBlockedPlanes(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
Status PrepareRows(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
}  // namespace pool_avx2

}  // namespace mxlite

#endif  // defined(MXLITE_X86_64)

#endif  // MXLITE_OPERATORS_POOL_X86_H_
