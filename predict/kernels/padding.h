/*
 * Copying a plane into a larger scratch with a border of a fixed value, so
 * that a kernel can read whole windows near the edges without bounds checks
 * (Winograd's input transform pads with zeros, max pooling with -FLT_MAX).
 */
#ifndef MXLITE_KERNELS_PADDING_H_
#define MXLITE_KERNELS_PADDING_H_

#include <algorithm>
#include <cstdint>

namespace mxlite {

// dst (dst_h x dst_w, row-major) gets the h x w plane src with its top-left
// corner at (top, left) and `fill` everywhere else. The plane must fit:
// top + h <= dst_h and left + w <= dst_w. Only the border is filled, so the
// cost is one pass over dst.
inline void CopyPadded(const float* src, int64_t h, int64_t w, int64_t top, int64_t left,
                       float fill, int64_t dst_h, int64_t dst_w, float* dst) {
  for (int64_t row = 0; row < dst_h; ++row) {
    float* out = dst + row * dst_w;
    const int64_t y = row - top;
    if (y < 0 || y >= h) {
      std::fill(out, out + dst_w, fill);
      continue;
    }
    std::fill(out, out + left, fill);
    std::copy(src + y * w, src + (y + 1) * w, out + left);
    std::fill(out + left + w, out + dst_w, fill);
  }
}

}  // namespace mxlite

#endif  // MXLITE_KERNELS_PADDING_H_
