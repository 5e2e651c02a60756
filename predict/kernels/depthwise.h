/*
 * Depthwise 3x3 convolution of one channel plane (MobileNet's workhorse),
 * with the bias, an optional residual and a clamp applied on the way out.
 *
 * Each output row is a sum of nine shifted input rows scaled by one tap
 * each. With AVX-512 the whole plane, padding included, is computed sixteen
 * outputs at a time, walking along each input row: a step loads only the
 * columns it has not seen and builds the shifted windows in registers
 * (stride 1: lane shifts; stride 2: even/odd deinterleaving permutes);
 * loads at the row's ends are masked, so padding reads as zeros without a
 * padded copy. Narrow planes (up to 32 columns) at stride 1 with one
 * column of padding each side are instead computed as one flat array: each
 * tap is then a fixed offset from the output index, one masked load per
 * tap and sixteen outputs (28x28: 1.2x, 14x14: 1.7x, 7x7: 1.8x the row
 * walk). Other ISAs take the scalar loop, which treats padding the same
 * way.
 */
#ifndef MXLITE_KERNELS_DEPTHWISE_H_
#define MXLITE_KERNELS_DEPTHWISE_H_

#include <cstdint>
#include <vector>

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
  // From DepthwiseFlatMasks for this geometry when it returned any: the
  // plane is then computed as one flat array.
  const uint16_t* flat_masks = nullptr;
};

// True when the 3x3 kernel handles this geometry (stride 1 or 2, dilation
// 1, padding below 3).
bool DepthwiseConv3x3Supported(int64_t stride_h, int64_t stride_w, int64_t dilate_h,
                               int64_t dilate_w, int64_t pad_h, int64_t pad_w);

// For the flat path (AVX-512, stride 1, pad_w 1, up to 32 columns): per
// group of sixteen outputs, per tap, the lanes whose input lies inside the
// image. Empty where the flat path does not apply. It depends on the
// geometry alone, so a layer builds it once, when it is prepared.
std::vector<uint16_t> DepthwiseFlatMasks(int64_t in_h, int64_t in_w, int64_t stride,
                                         int64_t pad_h, int64_t pad_w);

void DepthwiseConv3x3Plane(const DepthwisePlaneArgs& args);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_DEPTHWISE_H_
