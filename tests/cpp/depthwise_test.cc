/*
 * depthwise_test: the 3x3 depthwise plane kernel against a naive loop, for
 * strides 1 and 2, every padding it accepts (top/bottom and left/right
 * apart), widths around the 16-lane vector (1..40, and 63..65, 97, 130 for
 * rows with several whole vectors) and heights 1..9, with a residual and a
 * clamp. The vector path is whichever MXLITE_ISA allows (with AVX-512, the
 * flat path for planes up to 32 columns wide where its masks exist).
 */
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../predict/kernels/depthwise.h"

int main() {
  using namespace mxlite;
  int checks = 0, failures = 0;
  unsigned state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>((state >> 8) & 0xffff) / 32768.f - 1.f;
  };
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
          // As a layer does: the flat path's masks where it applies.
          const std::vector<uint16_t> masks = DepthwiseFlatMasks(h, w, stride, pad, pad_w);
          if (!masks.empty()) args.flat_masks = masks.data();
          DepthwiseConv3x3Plane(args);
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
