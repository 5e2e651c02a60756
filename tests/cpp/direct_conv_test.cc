/*
 * direct_conv_test: the direct (few-channel) convolution kernel against a
 * naive loop in double precision, over 1-4 input channels, square and
 * non-square kernels up to 7x7, strides 1 and 2, paddings 0-3 apart per
 * axis, output widths around the vectors and tiles of both vector paths
 * (AVX-512: 16 and 48 columns; AVX2: 8 and 24, and the 2 + 2 split of
 * four vectors), filter counts that leave a partial group of 8 and partial
 * AVX2 tiles of 4 (1, 2 or 3 filters), taps up to 11x11, a residual and a
 * clamp, and the output rows split into bands of several sizes (which the
 * AVX2 path runs filter group by filter group). The vector path is
 * whichever MXLITE_ISA allows (the portable loop below AVX2).
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/direct_conv.h"
#include "test_random.h"

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
  TestRandom next(2024u);
  struct Case {
    int64_t channels, kernel_h, kernel_w, stride, pad_h, pad_w, filters;
  };
  std::vector<Case> cases;
  for (int64_t channels = 1; channels <= 4; ++channels) {
    cases.push_back({channels, 3, 3, 2, 1, 1, 8 * channels - 3});
    cases.push_back({channels, 3, 3, 1, 0, 2, 9});
  }
  cases.push_back({3, 7, 7, 2, 3, 3, 20});
  cases.push_back({3, 7, 5, 2, 2, 3, 16});
  cases.push_back({2, 1, 5, 1, 0, 2, 7});
  cases.push_back({3, 5, 1, 2, 2, 0, 1});
  cases.push_back({1, 2, 2, 2, 0, 0, 8});
  cases.push_back({4, 3, 3, 2, 3, 3, 5});
  cases.push_back({2, 3, 3, 1, 1, 1, 6});
  cases.push_back({1, 11, 11, 2, 5, 5, 4});
  // With the 3x3 stride-1 cases (out_w = in_w + 2): 8, 9, 24, 25, 32, 40.
  // 224 and 225: rows of a stem's width, where AVX2's stride-2 gather reads
  // most blocks whole and only the edges with masks.
  const int64_t widths[] = {1, 5, 6, 7, 15, 16, 17, 22, 23, 30, 31, 33, 38,
                            47, 48, 49, 64, 65, 97, 113, 224, 225};
  for (const Case& k : cases) {
    for (int64_t in_w : widths) {
      for (int64_t in_h : {int64_t{1}, int64_t{6}, int64_t{11}}) {
        DirectConvGeometry g{k.channels, in_h, in_w, k.filters, k.kernel_h, k.kernel_w,
                             k.stride, k.pad_h, k.pad_w, 0, 0};
        g.out_h = (in_h + 2 * k.pad_h - k.kernel_h) / k.stride + 1;
        g.out_w = (in_w + 2 * k.pad_w - k.kernel_w) / k.stride + 1;
        if (in_h + 2 * k.pad_h < k.kernel_h || in_w + 2 * k.pad_w < k.kernel_w) continue;
        const int64_t taps = k.channels * k.kernel_h * k.kernel_w;
        const int64_t out_plane = g.out_h * g.out_w;
        std::vector<float> input(k.channels * in_h * in_w), weights(k.filters * taps);
        std::vector<float> bias(k.filters), residual(k.filters * out_plane);
        for (float& v : input) v = next();
        for (float& v : weights) v = next();
        for (float& v : bias) v = next();
        for (float& v : residual) v = next();
        std::vector<float> packed;
        PackDirectConvWeights(weights.data(), g, &packed);
        for (int use_residual = 0; use_residual < 2; ++use_residual) {
          const int64_t band = 1 + (in_w + use_residual) % 4;
          std::vector<float> out(k.filters * out_plane + 1, NAN);
          out.back() = 42.f;  // must survive: nothing is written past the planes
          for (int64_t row = 0; row < g.out_h; row += band) {
            DirectConvRows(g, input.data(), packed.data(), bias.data(), row,
                           std::min(g.out_h, row + band), out.data(),
                           use_residual ? residual.data() : nullptr, -1.5f, 2.f);
          }
          ++checks;
          bool ok = out.back() == 42.f;
          for (int64_t f = 0; f < k.filters && ok; ++f) {
            for (int64_t oy = 0; oy < g.out_h && ok; ++oy) {
              for (int64_t ox = 0; ox < g.out_w && ok; ++ox) {
                double sum = bias[f];
                for (int64_t c = 0; c < k.channels; ++c) {
                  for (int64_t ky = 0; ky < k.kernel_h; ++ky) {
                    for (int64_t kx = 0; kx < k.kernel_w; ++kx) {
                      const int64_t iy = oy * k.stride + ky - k.pad_h;
                      const int64_t ix = ox * k.stride + kx - k.pad_w;
                      if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
                      sum += double(weights[((f * k.channels + c) * k.kernel_h + ky) *
                                                k.kernel_w + kx]) *
                             input[(c * in_h + iy) * in_w + ix];
                    }
                  }
                }
                const int64_t index = f * out_plane + oy * g.out_w + ox;
                if (use_residual) sum += residual[index];
                const double want = std::min(std::max(sum, -1.5), 2.0);
                if (!(std::fabs(out[index] - want) <= 1e-5 * (1 + std::fabs(want)))) {
                  std::printf("FAIL c=%lld k=%lldx%lld s=%lld pad=%lld,%lld filters=%lld "
                              "in=%lldx%lld residual=%d at f=%lld (%lld,%lld): %g vs %g\n",
                              (long long)k.channels, (long long)k.kernel_h,
                              (long long)k.kernel_w, (long long)k.stride, (long long)k.pad_h,
                              (long long)k.pad_w, (long long)k.filters, (long long)in_h,
                              (long long)in_w, use_residual, (long long)f, (long long)oy,
                              (long long)ox, out[index], want);
                  ok = false;
                }
              }
            }
          }
          if (!ok) ++failures;
        }
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
