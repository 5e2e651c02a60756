/*
 * Depthwise 3x3 convolution of one channel plane (MobileNet's workhorse),
 * with the bias, an optional residual and a clamp applied on the way out.
 *
 * Each output row is a sum of nine shifted input rows scaled by one tap
 * each. The interior of the row, where all three columns of the window lie
 * inside the image, is computed sixteen outputs at a time with AVX-512
 * (stride 1: three unaligned loads per input row; stride 2: two loads and
 * even/odd permutes); the borders and other ISAs take the scalar path,
 * which treats padding as zeros exactly like the interior.
 */
#ifndef MXLITE_KERNELS_DEPTHWISE_H_
#define MXLITE_KERNELS_DEPTHWISE_H_

#include <cstdint>

namespace mxlite {

struct DepthwisePlaneArgs {
  const float* input;     // in_h x in_w
  int64_t in_h, in_w;
  const float* weights;   // 3 x 3
  float bias;
  float* output;          // out_h x out_w
  int64_t out_h, out_w;
  int64_t stride;         // 1 or 2
  int64_t pad_h, pad_w;
  const float* residual;  // out_h x out_w, or null
  float lower, upper;     // clamp
};

// True when the 3x3 kernel handles this geometry (stride 1 or 2, dilation
// 1, padding below 3).
bool DepthwiseConv3x3Supported(int64_t stride_h, int64_t stride_w, int64_t dilate_h,
                               int64_t dilate_w, int64_t pad_h, int64_t pad_w);

void DepthwiseConv3x3Plane(const DepthwisePlaneArgs& args);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_DEPTHWISE_H_
