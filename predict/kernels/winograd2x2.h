/*
 * Winograd convolution F(2x2, 3x3) for the small maps where F(4x4, 3x3)
 * does not pay: 3x3, stride-1 layers whose output is at most 14x14 (a
 * ResNet's 14x14 and 7x7 stages, InceptionV3's 8x8 blocks, SqueezeNet's
 * 13x13 ones, DenseNet's 14x14 and 7x7 ones), on AVX-512.
 *
 * A 2x2 block of outputs needs a 4x4 block of inputs; per input channel
 *     Y = A^T [ (G g G^T) .* (B^T d B) ] A
 * takes 16 multiplications instead of 36. Summed over channels that is 16
 * matrix products, one per position xi of the 4x4 transformed tile:
 *     M[xi] (filters x tiles) = U[xi] (filters x channels) * V[xi] (channels x tiles).
 * Why not F(4x4) there: a 7x7 map is 4 tiles of 4x4, so its 36 products
 * are 4 columns wide and stream 36 weight matrices for 4 columns each
 * (bound by memory: 3-4x slower than the direct GEMM); as 2x2 tiles it is
 * 16 tiles, a full 16-column GEMM tile, and 16 weight matrices. The 16 tiles
 * cover 8x8 for 49 outputs, so the saving against the direct GEMM is
 * 36/16 x 49/64 = 1.7x in multiplications, not 2.25x.
 *
 * The points 0, 1, -1 and infinity make every transform entry 0, +-1 or
 * +-1/2: the rounding error is that of a few additions, far inside MXNet's
 * 1e-4 tolerance.
 *
 * Layout: V[xi][channel][tile] and M[xi][filter][tile], plain row-major
 * matrices with a row of `tiles` floats, which the GEMM reads in place.
 * Whole rows of tiles travel together, one tile per vector lane: as many
 * as fit sixteen lanes (two rows of 7 tiles for a 13x13 or 14x14 map, four
 * of 4 for 7x7). A row of at most 7 tiles reads at most 16 input columns
 * and writes at most 14 output columns, so each plane row is one masked
 * vector load or store, and permutes move columns to and from tile lanes.
 * (A first version gathered the windows and scattered the outputs through
 * index vectors; with the permutes SqueezeNet's four 13x13 layers take
 * 0.51 ms against 0.57 on one thread.)
 */
#ifndef MXLITE_KERNELS_WINOGRAD2X2_H_
#define MXLITE_KERNELS_WINOGRAD2X2_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../base/status.h"
#include "gemm.h"
#include "thread_pool.h"

namespace mxlite {

// Largest output side the kernel computes (7 tiles, 49 in all): a tile row
// and its window columns must fit one vector of sixteen lanes.
constexpr int64_t kWinograd2x2MaxSide = 14;

// GEMM columns, and workspace bytes, that a pass of several images of a
// batch may take at most (see Winograd2x2Plan::ImagesPerPass).
constexpr int64_t kWinograd2x2PassColumns = 64;
constexpr int64_t kWinograd2x2PassBytes = int64_t{4} << 20;

struct Winograd2x2Geometry {
  int64_t channels = 0, filters = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t pad_h = 0, pad_w = 0;

  int64_t TilesH() const { return (out_h + 1) / 2; }
  int64_t TilesW() const { return (out_w + 1) / 2; }
  int64_t Tiles() const { return TilesH() * TilesW(); }
  // Tile rows that travel together in the sixteen lanes of a vector.
  int64_t GroupRows() const { return std::max<int64_t>(1, 16 / TilesW()); }
  // Whether the weights are packed in two halves of the channels, split
  // between two threads as F(4x4) does (WinogradSplitsDepth).
  bool SplitsDepth() const;
  // V and M of one image (and the second half's M of a split depth).
  size_t WorkspaceBytes() const {
    return static_cast<size_t>(16 * (channels + (SplitsDepth() ? 2 : 1) * filters) * Tiles()) *
           sizeof(float);
  }
};

// Whether F(2x2, 3x3) runs this layer: AVX-512, 3x3, stride 1, dilation 1,
// one group, an output of at most 14x14, at least 32 channels in and 32
// filters out. (Callers try F(4x4, 3x3) first, which leaves it every such
// layer: see WinogradPays.) Measured per layer, one
// thread, against the shifted-view GEMM: 512->512 at 7x7 1.01 -> 0.78 ms,
// 448->384 at 8x8 0.81 -> 0.52, 64->256 at 13x13 0.225 -> 0.175, 48->192 at
// 13x13 0.129 -> 0.115. DenseNet's 128->32 layers came out even while the
// transforms gathered; with whole tile rows a vector they gain too (24 at
// 14x14 2.02 -> 1.10 ms, 16 at 7x7 0.47 -> 0.33), hence 32 filters.
bool Winograd2x2Pays(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                        int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                        int64_t filters, int64_t out_h, int64_t out_w);

// The weights transformed (U[xi] = (G g G^T)[xi]) and packed for the GEMM,
// and the permute indices of the geometry (see pair_index_).
class Winograd2x2Plan {
 public:
  Status Prepare(const Winograd2x2Geometry& g, const float* weights);
  const Winograd2x2Geometry& geometry() const { return geometry_; }
  // The memory it holds (for the memory budget).
  size_t bytes() const {
    return HeldBytes(packed_) + HeldBytes(pair_index_) + HeldBytes(pair_lanes_);
  }

  // How many images of a batch of `batch` one pass takes together: on maps
  // of fewer than 32 tiles (8x8 and smaller) one image leaves the GEMM's
  // 32-column tiles half empty and streams all 16 weight matrices for few
  // columns, so a batch (a Faster R-CNN head's rois at 7x7) puts the tiles
  // of up to kWinograd2x2PassColumns / tiles images side by side, within
  // kWinograd2x2PassBytes of workspace.
  int64_t ImagesPerPass(int64_t batch) const;
  // Workspace for passes of `images` images.
  size_t WorkspaceBytes(int64_t images) const {
    return geometry_.WorkspaceBytes() * static_cast<size_t>(images);
  }

  // `images` images, one after another (input n at input + n * C * in_h *
  // in_w, output and residual at n * F * out_h * out_w): input (channels,
  // in_h, in_w) -> output (filters, out_h, out_w) = clamp(conv + bias[f] +
  // residual), residual null or the output's shape. Each image's tiles
  // take columns of their own in the GEMMs, so its results are the bits
  // of a pass of that image alone. workspace: WorkspaceBytes(images).
  void Convolve(int64_t images, const float* input, const float* bias, const float* residual,
                float lower, float upper, float* output, float* workspace,
                ThreadPool* pool) const;

 private:
  Winograd2x2Geometry geometry_;
  std::vector<PackedMatrix> packed_;  // [16]
  // Per pair of tile rows in a group and window column j, the permute
  // index that takes column 2 tx + j of the pair's two plane rows into the
  // tiles' lanes; and the pair's lanes.
  std::vector<int32_t> pair_index_;
  std::vector<uint16_t> pair_lanes_;
};

}  // namespace mxlite

#endif  // MXLITE_KERNELS_WINOGRAD2X2_H_
