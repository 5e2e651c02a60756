/*
 * Depthwise 3x3 convolution of one channel plane (MobileNet's workhorse),
 * with the bias, an optional residual and a clamp applied on the way out.
 *
 * Each output row is a sum of nine shifted input rows scaled by one tap
 * each. With AVX-512 the whole plane, padding included, is computed sixteen
 * outputs at a time for a group of output rows (4 at stride 1, 2 at stride
 * 2), each input row loaded once for every output row of the group that
 * reads it (stride 1: three unaligned loads; stride 2: even/odd
 * deinterleaving permutes); loads at the row's ends are masked, so padding
 * reads as zeros without a padded copy. With AVX2 + FMA the same, eight
 * outputs at a time (edges through vmaskmovps). Other ISAs take the scalar
 * loop, which treats padding the same way.
 *
 * Planes up to 64 columns wide (MobileNets' 56x56 to 7x7 layers) go faster
 * with the channels in the lanes instead: sixteen planes are transposed into a
 * zero-bordered scratch holding, per input pixel, one vector of sixteen
 * channels; then every output pixel is nine full-width FMAs on unaligned
 * loads (no masks, no shuffles, no idle lanes at row ends), and sixteen
 * outputs at a time are transposed back into the planes (with AVX2: the
 * sixteen channels as two halves of eight, 8x8 transposes). All vector
 * paths sum in the same order, so they agree to the bit, AVX2 with AVX-512.
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
};

// True when the 3x3 kernel handles this geometry (stride 1 or 2, dilation
// 1, padding below 3).
bool DepthwiseConv3x3Supported(int64_t stride_h, int64_t stride_w, int64_t dilate_h,
                               int64_t dilate_w, int64_t pad_h, int64_t pad_w);

void DepthwiseConv3x3Plane(const DepthwisePlaneArgs& args);

// Channels per block on the channel-blocked path: one AVX-512 vector, two
// AVX2 ones.
constexpr int64_t kDepthwiseBlockChannels = 16;

// Up to sixteen channels of one image at once, one channel per vector lane
// (the channel-blocked path; without AVX-512 or AVX2 it runs the plane
// kernel on each channel, and DepthwiseBlockedPays keeps layers off it).
struct DepthwiseBlockArgs {
  const float* input;      // `channels` planes of in_h x in_w, in_plane apart
  int64_t channels;        // 1..16
  int64_t in_h, in_w, in_plane;
  const float* weights;    // 9 x 16, tap-major (PackDepthwiseBlockWeights)
  const float* bias;       // 16
  float* output;           // `channels` planes of out_h x out_w, out_plane apart
  int64_t out_h, out_w, out_plane;
  int64_t stride;          // 1 or 2
  int64_t pad_h, pad_w;
  const float* residual;   // laid out like output, or null
  float lower, upper;      // clamp
};

// True when a layer of this geometry takes the channel-blocked path: the
// CPU has AVX-512 or AVX2 and the planes are small enough that lanes spent
// on row ends, shuffles and per-row start-up cost more than transposing
// the planes into channel-minor order and back (see depthwise.cc).
bool DepthwiseBlockedPays(int64_t in_w);

// weights: channels x 9, bias: channels. Writes ceil(channels / 16) blocks
// of 9 x 16 weights and of 16 biases, lanes past the last channel zero.
void PackDepthwiseBlockWeights(const float* weights, const float* bias, int64_t channels,
                               std::vector<float>* block_weights, std::vector<float>* block_bias);

void DepthwiseConv3x3Block(const DepthwiseBlockArgs& args);

// The implementations per instruction set (depthwise_avx512.cc,
// depthwise_avx2.cc), for the family's table in depthwise.cc only.
void DepthwisePlaneAvx512(const DepthwisePlaneArgs& args);
void DepthwiseBlockAvx512(const DepthwiseBlockArgs& args);
void DepthwisePlaneAvx2(const DepthwisePlaneArgs& args);
void DepthwiseBlockAvx2(const DepthwiseBlockArgs& args);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_DEPTHWISE_H_
