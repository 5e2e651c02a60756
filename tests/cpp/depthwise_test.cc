/*
 * depthwise_test: the 3x3 depthwise plane kernel against a naive loop, for
 * strides 1 and 2, every padding it accepts (top/bottom and left/right
 * apart), widths around the 16-lane vector (1..40, and 63..65, 97, 130 for
 * rows with several whole vectors) and heights 1..9, with a residual and a
 * clamp. The vector path is whichever MXLITE_ISA allows.
 *
 * With a vector path (AVX2 or AVX-512) every output must also equal, to
 * the bit, the summation order the vector kernels share (depthwise.h):
 * per kernel row w0*x0, + w1*x1, + w2*x2 fused, then (top + middle) +
 * (bottom + bias), + residual, clamp. So the AVX2 kernels give the
 * AVX-512 ones' bits, though one machine runs only one of them.
 *
 * The channel-blocked kernel (DepthwiseConv3x3Block) runs the same
 * geometries on 1..16 channels whose planes lie apart by more than their
 * size; it must give the plane kernel's bits for every channel (the paths
 * sum in the same order) and leave the gaps between planes untouched.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/cpu_features.h"
#include "../../predict/kernels/depthwise.h"
#include "test_random.h"

// Runs `channels` copies of the plane in `plane` (each channel with its
// own weights, bias and residual) through DepthwiseConv3x3Block and each
// through DepthwiseConv3x3Plane; returns 1 on the first difference.
template <typename Random>
int CheckBlocked(const mxlite::DepthwisePlaneArgs& plane, int64_t channels, Random& next) {
  using namespace mxlite;
  const int64_t in_plane = plane.in_h * plane.in_w + 5;
  const int64_t out_plane = plane.out_h * plane.out_w + 3;
  std::vector<float> in(channels * in_plane), residual(channels * out_plane);
  std::vector<float> weights(9 * 16, 0.f), bias(16, 0.f);
  std::vector<float> out(channels * out_plane, 7.f), want(channels * out_plane, 7.f);
  for (float& v : in) v = next();
  for (float& v : residual) v = next();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t tap = 0; tap < 9; ++tap) weights[tap * 16 + c] = next();
    bias[c] = next();
  }
  DepthwiseBlockArgs block{in.data(), channels, plane.in_h, plane.in_w, in_plane,
                           weights.data(), bias.data(), out.data(), plane.out_h, plane.out_w,
                           out_plane, plane.stride, plane.pad_h, plane.pad_w,
                           plane.residual ? residual.data() : nullptr, plane.lower, plane.upper};
  DepthwiseConv3x3Block(block);
  for (int64_t c = 0; c < channels; ++c) {
    float tap_weights[9];
    for (int tap = 0; tap < 9; ++tap) tap_weights[tap] = weights[tap * 16 + c];
    DepthwisePlaneArgs args = plane;
    args.input = in.data() + c * in_plane;
    args.weights = tap_weights;
    args.bias = bias[c];
    args.output = want.data() + c * out_plane;
    args.residual = plane.residual ? residual.data() + c * out_plane : nullptr;
    DepthwiseConv3x3Plane(args);
  }
  if (std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) != 0) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::memcmp(&out[i], &want[i], sizeof(float)) != 0) {
        std::printf("FAIL blocked: %lld channels stride=%lld pad=%lld,%lld h=%lld w=%lld, "
                    "float %zu: %g vs the plane kernel's %g\n",
                    (long long)channels, (long long)plane.stride, (long long)plane.pad_h,
                    (long long)plane.pad_w, (long long)plane.in_h, (long long)plane.in_w, i,
                    out[i], want[i]);
        break;
      }
    }
    return 1;
  }
  return 0;
}

// One output in the vector kernels' order, padding read as zeros.
float OrderedOutput(const mxlite::DepthwisePlaneArgs& a, int64_t y, int64_t x) {
  float rows[3];
  for (int64_t ky = 0; ky < 3; ++ky) {
    float taps[3];
    for (int64_t kx = 0; kx < 3; ++kx) {
      const int64_t iy = y * a.stride - a.pad_h + ky, ix = x * a.stride - a.pad_w + kx;
      taps[kx] = iy >= 0 && iy < a.in_h && ix >= 0 && ix < a.in_w ? a.input[iy * a.in_w + ix]
                                                                  : 0.f;
    }
    const float* w = a.weights + 3 * ky;
    rows[ky] = std::fma(w[2], taps[2], std::fma(w[1], taps[1], w[0] * taps[0]));
  }
  float value = (rows[0] + rows[1]) + (rows[2] + a.bias);
  if (a.residual) value += a.residual[y * a.out_w + x];
  return std::min(std::max(value, a.lower), a.upper);
}

int main() {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  using namespace mxlite;
  int checks = 0, failures = 0;
  TestRandom next(12345u);
  const bool vector_path = mxlite::SelectedIsa() != mxlite::Isa::kGeneric;
  for (int64_t stride = 1; stride <= 2; ++stride) {
    for (int64_t pads = 0; pads <= 8; ++pads) {
      const int64_t pad = pads / 3, pad_w = pads % 3;
      std::vector<int64_t> widths = {63, 64, 65, 97, 130};
      for (int64_t w = 1; w <= 40; ++w) widths.push_back(w);
      for (int64_t h = 1; h <= 9; h += 2) {
        for (int64_t w : widths) {
          const int64_t oh = (h + 2 * pad - 3) / stride + 1;
          const int64_t ow = (w + 2 * pad_w - 3) / stride + 1;
          if (h + 2 * pad < 3 || w + 2 * pad_w < 3 || oh <= 0 || ow <= 0) continue;
          std::vector<float> in(h * w), weights(9), residual(oh * ow), out(oh * ow, NAN);
          for (float& v : in) v = next();
          for (float& v : weights) v = next();
          for (float& v : residual) v = next();
          DepthwisePlaneArgs args{in.data(), h, w, weights.data(), 0.25f, out.data(), oh, ow,
                                  stride, pad, pad_w, residual.data(), -0.5f, 1.5f};
          DepthwiseConv3x3Plane(args);
          ++checks;
          failures += CheckBlocked(args, 1 + (h * 7 + w + stride + pads) % 16, next);
          ++checks;
          for (int64_t y = 0; y < oh; ++y) {
            for (int64_t x = 0; x < ow; ++x) {
              double sum = 0.25 + residual[y * ow + x];
              for (int64_t ky = 0; ky < 3; ++ky) {
                for (int64_t kx = 0; kx < 3; ++kx) {
                  const int64_t iy = y * stride - pad + ky, ix = x * stride - pad_w + kx;
                  if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                    sum += double(weights[ky * 3 + kx]) * in[iy * w + ix];
                  }
                }
              }
              const double want = std::min(std::max(sum, -0.5), 1.5);
              const float ordered = OrderedOutput(args, y, x);
              if (vector_path && std::memcmp(&out[y * ow + x], &ordered, sizeof(float)) != 0) {
                ++failures;
                std::printf("FAIL order: stride=%lld pad=%lld,%lld h=%lld w=%lld at (%lld,%lld): "
                            "%.9g vs %.9g\n",
                            (long long)stride, (long long)pad, (long long)pad_w, (long long)h,
                            (long long)w, (long long)y, (long long)x, out[y * ow + x], ordered);
                y = oh;
                break;
              }
              if (!(std::fabs(out[y * ow + x] - want) <= 1e-5)) {
                ++failures;
                std::printf("FAIL stride=%lld pad=%lld,%lld h=%lld w=%lld at (%lld,%lld): %g vs %g\n",
                            (long long)stride, (long long)pad, (long long)pad_w, (long long)h,
                            (long long)w,
                            (long long)y, (long long)x, out[y * ow + x], want);
                y = oh;
                break;
              }
            }
          }
        }
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
