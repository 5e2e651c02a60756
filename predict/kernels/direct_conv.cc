/*
 * The direct convolution family (see direct_conv.h): the scalar reference
 * and the table that picks the family's implementation once, from the
 * instruction set (SelectedIsa). The vector kernels live one file per
 * instruction set (direct_conv_avx512.cc, direct_conv_avx2.cc); a new one is
 * a file and a line of kDirectConvImplementations.
 */
#include "direct_conv.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_features.h"
#include "lane_pack.h"

namespace mxlite {

namespace direct_conv_cc {

constexpr int64_t kTileFilters = kDirectConvTileFilters;

// Portable reference: the same sums in the same order, without FMA.
void RowScalar(const DirectConvGeometry& g, const float* input, const float* packed,
               const float* bias, int64_t oy, float* output, const float* residual, float lower,
               float upper) {
  const int64_t out_plane = g.OutputPlane(), taps = g.Taps();
  for (int64_t f = 0; f < g.filters; ++f) {
    const float* w = packed + (f / kTileFilters) * taps * kTileFilters + f % kTileFilters;
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      float sum = 0.f;
      int64_t tap = 0;
      for (int64_t c = 0; c < g.channels; ++c) {
        for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
          const int64_t iy = oy * g.stride + ky - g.pad_h;
          for (int64_t kx = 0; kx < g.kernel_w; ++kx, ++tap) {
            const int64_t ix = ox * g.stride + kx - g.pad_w;
            if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w) {
              sum += w[tap * kTileFilters] * input[(c * g.in_h + iy) * g.in_w + ix];
            }
          }
        }
      }
      const int64_t index = f * out_plane + (oy - g.output_first_row) * g.out_w + ox;
      float value = sum + bias[f];
      if (residual) value += residual[index];
      output[index] = std::min(std::max(value, lower), upper);
    }
  }
}

using RowsFn = void (*)(const DirectConvGeometry& g, const float* input, const float* packed,
                        const float* bias, int64_t row_begin, int64_t row_end, float* output,
                        const float* residual, float lower, float upper);

void RowsScalar(const DirectConvGeometry& g, const float* input, const float* packed,
                const float* bias, int64_t row_begin, int64_t row_end, float* output,
                const float* residual, float lower, float upper) {
  for (int64_t oy = row_begin; oy < row_end; ++oy) {
    RowScalar(g, input, packed, bias, oy, output, residual, lower, upper);
  }
}

// One implementation of the family.
struct DirectConvImplementation {
  Isa isa;
  RowsFn rows;  // strides 1 and 2 (other strides take RowsScalar)
  // Whether layers take the direct kernel here (see DirectConvPays). On
  // AVX2 too: there the 3-channel stems ran 2.6-4.4x faster than as shifted
  // GEMMs (Zen 3, one thread).
  bool pays;
};

// In order of preference: the first whose instruction set is selected.
const DirectConvImplementation kDirectConvImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, DirectConvRowsAvx512, true},
    {Isa::kAvx2, DirectConvRowsAvx2, true},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, RowsScalar, false},
};

const DirectConvImplementation& Chosen() {
  static const DirectConvImplementation& chosen =
      ChooseImplementation(kDirectConvImplementations);
  return chosen;
}

}  // namespace direct_conv_cc

bool DirectConvKernelsPay() { return direct_conv_cc::Chosen().pays; }

bool DirectConvPays(int64_t channels, int64_t groups, int64_t kernel_h, int64_t kernel_w,
                       int64_t stride_h, int64_t stride_w, int64_t dilate_h, int64_t dilate_w) {
  return direct_conv_cc::Chosen().pays && groups == 1 && channels >= 1 && channels <= 4 &&
         kernel_h <= 11 && kernel_w <= 11 && stride_h == stride_w &&
         (stride_h == 1 || stride_h == 2) && dilate_h == 1 && dilate_w == 1;
}

void PackDirectConvWeights(const float* weights, const DirectConvGeometry& g,
                           std::vector<float>* packed) {
  PackRowsInLanes(weights, g.filters, g.Taps(), direct_conv_cc::kTileFilters, packed);
}

void DirectConvRows(const DirectConvGeometry& g, const float* input, const float* packed,
                    const float* bias, int64_t row_begin, int64_t row_end, float* output,
                    const float* residual, float lower, float upper) {
  if (row_begin >= row_end) return;
  const direct_conv_cc::RowsFn rows = g.stride == 1 || g.stride == 2
                                          ? direct_conv_cc::Chosen().rows
                                          : direct_conv_cc::RowsScalar;
  rows(g, input, packed, bias, row_begin, row_end, output, residual, lower, upper);
}

}  // namespace mxlite
