/*
 * The reference the Winograd test drivers check against: a stride-1
 * convolution of one image (3x3 unless the case says otherwise) in double
 * precision, plus the bias and the residual, clamped to [lower, upper].
 * Returns the largest absolute difference from `out`; an output that is NaN
 * (never written: the drivers fill `out` with NaN first) counts as an
 * infinite error, which std::max alone would pass over.
 */
#ifndef MXLITE_TESTS_CPP_CONV_REFERENCE_H_
#define MXLITE_TESTS_CPP_CONV_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

struct ConvCase {
  int64_t channels, filters, in_h, in_w, out_h, out_w, pad_h, pad_w;
  int64_t kernel_h = 3, kernel_w = 3;
};

inline double WorstConvError(const ConvCase& g, const std::vector<float>& weights,
                             const std::vector<float>& in, const std::vector<float>& bias,
                             const std::vector<float>& residual, double lower, double upper,
                             const std::vector<float>& out) {
  double worst = 0;
  for (int64_t f = 0; f < g.filters; ++f) {
    for (int64_t y = 0; y < g.out_h; ++y) {
      for (int64_t x = 0; x < g.out_w; ++x) {
        const int64_t index = (f * g.out_h + y) * g.out_w + x;
        double sum = double(bias[f]) + residual[index];
        for (int64_t c = 0; c < g.channels; ++c) {
          for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
            for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
              const int64_t iy = y - g.pad_h + ky, ix = x - g.pad_w + kx;
              if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
              sum += double(weights[((f * g.channels + c) * g.kernel_h + ky) * g.kernel_w + kx]) *
                     in[(c * g.in_h + iy) * g.in_w + ix];
            }
          }
        }
        const double want = std::min(std::max(sum, lower), upper);
        const double error = std::fabs(out[index] - want);
        worst = std::max(worst, std::isnan(error) ? INFINITY : error);
      }
    }
  }
  return worst;
}

#endif  // MXLITE_TESTS_CPP_CONV_REFERENCE_H_
