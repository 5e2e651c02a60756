/*
 * Packing a row-major matrix so that a vector lane holds one of its rows:
 * the layout of weights for kernels that put channels or filters in the
 * lanes (depthwise channel blocks, the direct stem convolution).
 */
#ifndef MXLITE_KERNELS_LANE_PACK_H_
#define MXLITE_KERNELS_LANE_PACK_H_

#include <cstdint>
#include <vector>

namespace mxlite {

// src: rows x cols, row-major. dst: ceil(rows / lanes) groups of cols x
// lanes, dst[(r / lanes) * cols * lanes + c * lanes + r % lanes] =
// src[r * cols + c]; lanes past the last row are zero.
inline void PackRowsInLanes(const float* src, int64_t rows, int64_t cols, int64_t lanes,
                            std::vector<float>* dst) {
  const int64_t groups = (rows + lanes - 1) / lanes;
  dst->assign(static_cast<size_t>(groups * cols * lanes), 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    float* group = dst->data() + (r / lanes) * cols * lanes + r % lanes;
    for (int64_t c = 0; c < cols; ++c) group[c * lanes] = src[r * cols + c];
  }
}

}  // namespace mxlite

#endif  // MXLITE_KERNELS_LANE_PACK_H_
