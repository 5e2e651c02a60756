/*
 * Direct convolution for layers with few input channels: the stems of
 * image networks (3 channels in, 3x3 or 7x7 taps, stride 2).
 *
 * im2col + GEMM is a poor fit there: the column matrix is ~50x the input
 * (7 MB for ResNet's 7x7 stem at 224x224), built and then streamed from
 * L2/L3, and 64 filters leave the GEMM's 12-row tiles a 4-row remainder.
 * Here each output row is computed straight from a few input rows. A band
 * of output rows first copies the input rows it reads into zero-padded
 * lines, one per (channel, input row, column phase): for stride 2 the even
 * and the odd columns apart, so that tap (c, ky, kx) of output column ox is
 * element ox + kx / stride of one line: a plain vector load. With AVX-512
 * a tile of 8 filters by up to 48 output columns keeps 24 accumulators;
 * each tap costs up to three loads, eight broadcast weights and 24 FMAs, so
 * the loop is FMA-bound. AVX2's 16 registers hold 4 filters by up to 24
 * columns (12 accumulators, 3 input vectors, a weight): per tap 3 loads, 4
 * broadcasts and 12 FMAs, FMA-bound too.
 *
 * Taps are summed in im2col's row order (channel, ky, kx), one FMA chain per
 * output, then bias, residual and clamp as the GEMM's epilogue applies
 * them: the results are the im2col path's to the bit, on either path.
 */
#ifndef MXLITE_KERNELS_DIRECT_CONV_H_
#define MXLITE_KERNELS_DIRECT_CONV_H_

#include <cstdint>
#include <vector>

namespace mxlite {

struct DirectConvGeometry {
  int64_t channels, in_h, in_w;
  int64_t filters, kernel_h, kernel_w;
  int64_t stride;  // the same along both axes, 1 or 2
  int64_t pad_h, pad_w;
  int64_t out_h, out_w;
  // Floats from one filter's output plane to the next (0: out_h * out_w, a
  // whole image), and the row stored first in each: a band of rows may go
  // to a buffer that holds only its own rows.
  int64_t output_plane = 0;
  int64_t output_first_row = 0;

  int64_t Taps() const { return channels * kernel_h * kernel_w; }
  int64_t OutputPlane() const { return output_plane > 0 ? output_plane : out_h * out_w; }
};

// Filters per packed group (PackDirectConvWeights): one broadcast weight
// each in an AVX-512 tile.
constexpr int64_t kDirectConvTileFilters = 8;

// True when a layer takes the direct kernel: AVX-512 or AVX2 with FMA, one
// group, 2-D, dilation 1, equal strides of 1 or 2, at most 4 input channels
// and at most 11x11 taps. (Elsewhere the layer stays on im2col + GEMM.)
bool DirectConvPays(int64_t channels, int64_t groups, int64_t kernel_h, int64_t kernel_w,
                       int64_t stride_h, int64_t stride_w, int64_t dilate_h, int64_t dilate_w);

// True when the direct kernel is taken on this machine at all (the family's
// chosen implementation has vector kernels): AVX-512 or AVX2 with FMA.
bool DirectConvKernelsPay();

// weights: filters x (channels * kernel_h * kernel_w), as MXNet stores them.
// Packs groups of 8 filters, tap-major, the last group padded with zeros.
void PackDirectConvWeights(const float* weights, const DirectConvGeometry& g,
                           std::vector<float>* packed);

// Output rows [row_begin, row_end) of one image, every filter: output and
// residual point at the image's first plane (filters planes of
// OutputPlane() floats, row oy of a plane (oy - output_first_row) * out_w
// floats into it); residual may be null. bias: one per filter. A band of rows
// gathers each input row it reads once, so bands of several rows are
// cheaper per row than single rows.
void DirectConvRows(const DirectConvGeometry& g, const float* input, const float* packed,
                    const float* bias, int64_t row_begin, int64_t row_end, float* output,
                    const float* residual, float lower, float upper);

// The implementations per instruction set (direct_conv_avx512.cc,
// direct_conv_avx2.cc), for the family's table in direct_conv.cc only:
// DirectConvRows for strides 1 and 2.
void DirectConvRowsAvx512(const DirectConvGeometry& g, const float* input, const float* packed,
                          const float* bias, int64_t row_begin, int64_t row_end, float* output,
                          const float* residual, float lower, float upper);
void DirectConvRowsAvx2(const DirectConvGeometry& g, const float* input, const float* packed,
                        const float* bias, int64_t row_begin, int64_t row_end, float* output,
                        const float* residual, float lower, float upper);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_DIRECT_CONV_H_
