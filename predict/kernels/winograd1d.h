/*
 * Winograd convolution along one axis: F(2, 7) for the 1x7 and 7x1 layers
 * of factorised networks (InceptionV3's 17x17 blocks) and F(4, 5) down the
 * rows of 5x5 layers (InceptionV3's 35x35 branches), on AVX-512.
 *
 * A run of m outputs down a column under an r-tap kernel column needs
 * m + r - 1 = 8 inputs; per input channel
 *     y = A^T [ (G g) .* (B^T d) ]
 * takes 8 multiplications instead of m * r (F(2, 7): 8 for 14; F(4, 5): 8
 * for 20). A kernel wider than one column is a sum of its columns, each a
 * view of the same transformed input shifted by one column. Summed over
 * channels and columns that is 8 matrix products, one per transformed
 * position xi:
 *     M[xi] (filters x tiles) = sum over kernel columns kx of
 *         U[xi][kx] (filters x channels) * V[xi] (channels x tiles, shifted by kx),
 * each as wide as the plane has tiles, so every one is a well-shaped GEMM
 * whose depth segments are the shifted views (GemmSegmentedB). Against the
 * direct GEMM that is 14/8 fewer multiplications for 1x7 (17/18 of them
 * useful at 17x17) and 20/8 for 5x5 (at 35x35, 35/36 rows and 35/39
 * columns useful).
 *
 * The matrices come from the 8 interpolation points 0, 1, -1, 2, -2, 1/2,
 * -1/2 and infinity (Toom-Cook; scripts/winograd_1d_matrices.py derives
 * them exactly and checks the identity). B^T is the transpose of the inverse
 * of their Vandermonde matrix, each row scaled to coprime integers; G's rows
 * carry the inverse scales. B^T depends on the points alone, so one input
 * transform serves every kernel length; only A^T (p^i, i < m) and G change.
 * Rounding: B^T's integer rows (largest sum of magnitudes 50) cost a few
 * ulps per transformed value, G is applied in double at load time, and A^T's
 * entries are powers of two.
 *
 * Tiles: in the kernel's frame, tile (ty, x) holds rows ty*m ... of column
 * x, for every column of the padded input (out_w + kw - 1 of them, so that
 * a shift by kx stays inside the tile row; the output ignores the last
 * kw - 1). Tiles are numbered row-major, so a group of sixteen tiles, one
 * per vector lane, is one or two runs of neighbouring columns, read and
 * written with at most two masked vector accesses (index records made once
 * per geometry in Prepare). A 1x7 layer runs in the transposed frame, as
 * 7x1: its channel planes are transposed first, and its output planes come
 * out transposed and are turned back while the residual is added and the
 * clamp applied (transposing 17x17 planes costs a fraction of gathering the
 * stride-2 windows of row-wise tiles).
 *
 * Each thread takes one chunk of the output tiles (a run of lane groups)
 * through all three steps: input transform of all channels (for the chunk's
 * tiles and the kw - 1 after them), the 8 GEMMs on the chunk's columns,
 * output transform. So no core reads what another wrote, and the steps need
 * no barrier between them (splitting the GEMMs by xi instead scaled 1.33x on
 * two cores, this 1.85x). Layout: chunk by chunk, V[xi][channel][chunk's
 * input tiles] and M[xi][filter][chunk's tiles], plain row-major matrices
 * that the GEMM reads and writes in place.
 */
#ifndef MXLITE_KERNELS_WINOGRAD1D_H_
#define MXLITE_KERNELS_WINOGRAD1D_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../base/status.h"
#include "gemm.h"
#include "thread_pool.h"

namespace mxlite {

struct Winograd1dGeometry {
  int64_t channels = 0, filters = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t pad_h = 0, pad_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;

  // Most threads one convolution splits over (bounds the workspace, which
  // holds kw - 1 extra input tiles per chunk).
  static constexpr int64_t kMaxChunks = 16;

  // 1xk layers run transposed, as kx1.
  bool Transposed() const { return kernel_h == 1; }
  // The same layer seen transposed.
  Winograd1dGeometry Transpose() const {
    Winograd1dGeometry t = *this;
    t.in_h = in_w, t.in_w = in_h, t.out_h = out_w, t.out_w = out_h;
    t.pad_h = pad_w, t.pad_w = pad_h, t.kernel_h = kernel_w, t.kernel_w = kernel_h;
    return t;
  }
  // The frame the transforms work in: taps down the columns.
  Winograd1dGeometry Frame() const { return Transposed() ? Transpose() : *this; }

  // In the frame: outputs per tile down a column, 8 points - taps + 1.
  int64_t TileOutputs() const { return 9 - Frame().kernel_h; }
  // Tiles in a tile row: every column of the padded input.
  int64_t RowTiles() const {
    const Winograd1dGeometry f = Frame();
    return f.out_w + f.kernel_w - 1;
  }
  int64_t TileRows() const { return (Frame().out_h + TileOutputs() - 1) / TileOutputs(); }
  // Input tiles, and output tiles up to the last one that is an output.
  int64_t InputTiles() const { return TileRows() * RowTiles(); }
  int64_t OutputTiles() const { return InputTiles() - (Frame().kernel_w - 1); }

  // V (with up to kMaxChunks chunks) and M of one image, and for a 1xk
  // layer its transposed input and output planes.
  size_t WorkspaceBytes() const {
    const int64_t shift = Frame().kernel_w - 1;
    const int64_t v = 8 * channels * (OutputTiles() + kMaxChunks * shift);
    const int64_t m = 8 * filters * OutputTiles();
    const int64_t planes = Transposed() ? channels * in_h * in_w + filters * out_h * out_w : 0;
    return static_cast<size_t>(v + m + planes) * sizeof(float);
  }
};

// One lane group's access to one position of its tiles: where each of its
// 16 lanes reads or writes in the plane (0 for lanes outside it) and which
// lanes are inside it; and, where lane l's offset is base[r] + l for every
// lane of run r (at most two runs: runs[1] empty if one), the two masked
// vector accesses that replace a gather or scatter (base may be negative).
struct Winograd1dAccess {
  int32_t offsets[16];
  int32_t base[2];
  uint16_t runs[2];
  uint16_t lanes;
  bool contiguous;
};

// Whether this runs the layer: AVX-512, stride 1, dilation 1, one group, at
// least 32 channels in and 32 filters out, and a 1x7, 7x1 or 5x5 kernel; or
// off AMD, a 3x3 kernel of at most 32 filters on an output of at least
// 28x28 and at most 56x56 / 2 outputs a thread (the convolution table asks
// this entry before F(4x4)).
bool Winograd1dPays(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                    int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                    int64_t filters, int64_t out_h, int64_t out_w, int threads);

// The weights transformed (U[xi][kx] = (G g[., kx])[xi]) and packed for the
// GEMM, and the access records of the geometry. Any kernel of 2 to 7 rows
// (in the frame) and up to 7 columns is computed correctly, for the tests;
// Winograd1dPays picks the layers where it pays.
class Winograd1dPlan {
 public:
  Status Prepare(const Winograd1dGeometry& g, const float* weights);
  const Winograd1dGeometry& geometry() const { return geometry_; }
  // The memory it holds (for the memory budget).
  size_t bytes() const {
    return HeldBytes(packed_) + HeldBytes(input_access_) + HeldBytes(output_access_);
  }

  // One image: input (channels, in_h, in_w) -> output (filters, out_h,
  // out_w) = clamp(conv + bias[f] + residual), residual null or the
  // output's shape. workspace: geometry().WorkspaceBytes().
  void Convolve(const float* input, const float* bias, const float* residual, float lower,
                float upper, float* output, float* workspace, ThreadPool* pool) const;

  // The batch interface of Winograd2x2Plan: one image a pass.
  int64_t ImagesPerPass(int64_t) const { return 1; }
  size_t WorkspaceBytes(int64_t) const { return geometry_.WorkspaceBytes(); }
  void Convolve(int64_t images, const float* input, const float* bias, const float* residual,
                float lower, float upper, float* output, float* workspace,
                ThreadPool* pool) const {
    const Winograd1dGeometry& g = geometry_;
    const int64_t in_image = g.channels * g.in_h * g.in_w;
    const int64_t out_image = g.filters * g.out_h * g.out_w;
    for (int64_t n = 0; n < images; ++n) {
      Convolve(input + n * in_image, bias, residual ? residual + n * out_image : nullptr, lower,
               upper, output + n * out_image, workspace, pool);
    }
  }

 private:
  Winograd1dGeometry geometry_;
  std::vector<PackedMatrix> packed_;   // [8], depth segments of `channels`
  std::vector<Winograd1dAccess> input_access_;   // [input group][8 input positions]
  std::vector<Winograd1dAccess> output_access_;  // [output group][TileOutputs() outputs]
};

}  // namespace mxlite

#endif  // MXLITE_KERNELS_WINOGRAD1D_H_
