/*
 * The depthwise 3x3 family: the scalar reference kernels and the table that
 * picks the family's implementation once, from the instruction set
 * (SelectedIsa). The vector kernels live one file per instruction set
 * (depthwise_avx512.cc, depthwise_avx2.cc); a new one is a file and a line
 * of kDepthwiseImplementations.
 */
#include "depthwise.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_features.h"
#include "lane_pack.h"
#include "x86_simd.h"

namespace mxlite {

namespace depthwise_cc {

constexpr int kBlockLanes = static_cast<int>(kDepthwiseBlockChannels);

// One output element, padding read as zero.
inline float Window(const DepthwisePlaneArgs& a, int64_t oy, int64_t ox) {
  float sum = 0.f;
  for (int64_t ky = 0; ky < 3; ++ky) {
    const int64_t iy = oy * a.stride - a.pad_h + ky;
    if (iy < 0 || iy >= a.in_h) continue;
    const float* row = a.input + iy * a.in_w;
    for (int64_t kx = 0; kx < 3; ++kx) {
      const int64_t ix = ox * a.stride - a.pad_w + kx;
      if (ix >= 0 && ix < a.in_w) sum += a.weights[ky * 3 + kx] * row[ix];
    }
  }
  return sum;
}

inline float Finish(const DepthwisePlaneArgs& a, float sum, int64_t index) {
  float value = sum + a.bias;
  if (a.residual) value += a.residual[index];
  return std::min(std::max(value, a.lower), a.upper);
}

void PlaneScalar(const DepthwisePlaneArgs& a) {
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    for (int64_t ox = 0; ox < a.out_w; ++ox) {
      const int64_t index = oy * a.out_w + ox;
      a.output[index] = Finish(a, Window(a, oy, ox), index);
    }
  }
}

// One plane at a time, for the channel-blocked entry where no vector kernel
// blocks channels (DepthwiseBlockedPays keeps layers off this path there;
// it serves tests and callers that take it anyway).
void BlockByPlanes(const DepthwiseBlockArgs& args) {
  const int64_t lanes = kBlockLanes;
  for (int64_t c = 0; c < args.channels; ++c) {
    float weights[9];
    for (int64_t tap = 0; tap < 9; ++tap) weights[tap] = args.weights[tap * lanes + c];
    DepthwisePlaneArgs plane;
    plane.input = args.input + c * args.in_plane;
    plane.in_h = args.in_h;
    plane.in_w = args.in_w;
    plane.weights = weights;
    plane.bias = args.bias[c];
    plane.output = args.output + c * args.out_plane;
    plane.out_h = args.out_h;
    plane.out_w = args.out_w;
    plane.stride = args.stride;
    plane.pad_h = args.pad_h;
    plane.pad_w = args.pad_w;
    plane.residual = args.residual ? args.residual + c * args.out_plane : nullptr;
    plane.lower = args.lower;
    plane.upper = args.upper;
    PlaneScalar(plane);
  }
}

// One implementation of the family.
struct DepthwiseImplementation {
  Isa isa;
  void (*plane)(const DepthwisePlaneArgs&);
  void (*block)(const DepthwiseBlockArgs&);
  // The widest input row for which the channel-blocked kernel beats the
  // plane kernel (0: never), on AMD processors and on the others. The
  // cores differ: on Zen 4 and Zen 5 the blocked kernel wins at 28 columns
  // and below and ties at 56; on the model-167 Xeon the plane kernel wins at
  // 28 and 56 by 5-35% (AVX-512; AVX2 at 56). Measured in BENCHMARKS.md,
  // "Depthwise kernels".
  int64_t blocked_max_in_w_amd;
  int64_t blocked_max_in_w_other;
};

// In order of preference: the first whose instruction set is available.
const DepthwiseImplementation kDepthwiseImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, DepthwisePlaneAvx512, DepthwiseBlockAvx512, 64, 24},
    {Isa::kAvx2, DepthwisePlaneAvx2, DepthwiseBlockAvx2, 64, 32},
#endif  // MXLITE_X86_64
    {Isa::kGeneric, PlaneScalar, BlockByPlanes, 0, 0},
};

const DepthwiseImplementation& Chosen() {
  static const DepthwiseImplementation& chosen =
      ChooseImplementation(kDepthwiseImplementations);
  return chosen;
}

}  // namespace depthwise_cc

bool DepthwiseConv3x3Supported(int64_t stride_h, int64_t stride_w, int64_t dilate_h,
                               int64_t dilate_w, int64_t pad_h, int64_t pad_w) {
  return stride_h == stride_w && (stride_h == 1 || stride_h == 2) && dilate_h == 1 &&
         dilate_w == 1 && pad_h >= 0 && pad_h < 3 && pad_w >= 0 && pad_w < 3;
}

void DepthwiseConv3x3Plane(const DepthwisePlaneArgs& args) { depthwise_cc::Chosen().plane(args); }

bool DepthwiseBlockedPays(int64_t in_w) {
  static const int64_t max_in_w = GetCpuFeatures().vendor == CpuVendor::kAmd
                                      ? depthwise_cc::Chosen().blocked_max_in_w_amd
                                      : depthwise_cc::Chosen().blocked_max_in_w_other;
  return in_w <= max_in_w;
}

void PackDepthwiseBlockWeights(const float* weights, const float* bias, int64_t channels,
                               std::vector<float>* block_weights, std::vector<float>* block_bias) {
  PackRowsInLanes(weights, channels, 9, kDepthwiseBlockChannels, block_weights);
  PackRowsInLanes(bias, channels, 1, kDepthwiseBlockChannels, block_bias);
}

void DepthwiseConv3x3Block(const DepthwiseBlockArgs& args) { depthwise_cc::Chosen().block(args); }

}  // namespace mxlite
