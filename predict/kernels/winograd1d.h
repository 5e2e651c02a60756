/*
 * One-dimensional Winograd convolution F(2, 7) for the 1x7 and 7x1 layers
 * of factorised networks (InceptionV3's 17x17 blocks), on AVX-512.
 *
 * A run of 2 outputs along the kernel's axis needs 8 inputs; per input
 * channel
 *     y = A^T [ (G g) .* (B^T d) ]
 * takes 8 multiplications instead of 14. Summed over channels that is 8
 * matrix products, one per transformed position xi:
 *     M[xi] (filters x tiles) = U[xi] (filters x channels) * V[xi] (channels x tiles),
 * each as wide as the plane has tiles (17x17 outputs: 153), so every one is
 * a well-shaped GEMM. A 17-wide row is 9 tiles for 18 outputs: the saving
 * against the direct GEMM is 14/8 x 17/18 = 1.65x in multiplications.
 *
 * The matrices come from the 8 interpolation points 0, 1, -1, 2, -2, 1/2,
 * -1/2 and infinity (Toom-Cook; scripts/winograd_1d_matrices.py derives
 * them exactly and checks the identity). B^T is the transpose of the inverse
 * of their Vandermonde matrix, each row scaled to coprime integers; G's rows
 * carry the inverse scales. B^T depends on the points alone, so the same
 * input transform serves F(6, 3) and F(4, 5); only A^T and G change with
 * the kernel length. Rounding: B^T's integer rows (largest sum of magnitudes
 * 50) cost a few ulps per transformed value, G is applied in double at load
 * time, and A^T's entries are 1, 2 and 1/2 for F(2, 7).
 *
 * Sixteen tiles travel together, one per vector lane. The kernel works down
 * columns (7x1): tile (ty, x) covers rows ty*2 ... of column x, tiles are
 * numbered row-major, so a lane group is one or two runs of neighbouring
 * columns, read and written with at most two masked vector accesses (index
 * records made once per geometry in Prepare). A 1x7 layer runs in the
 * transposed frame: its channel planes are transposed first, and its
 * output planes come out transposed and are turned back while the residual
 * is added and the clamp applied. (Transposing 17x17 planes costs a
 * fraction of gathering the stride-2 windows of row-wise tiles.)
 *
 * Each thread takes one chunk of the tiles (a run of lane groups) through
 * all three steps: input transform of all channels, the 8 GEMMs on the
 * chunk's columns, output transform. So no core reads what another wrote,
 * and the steps need no barrier between them (splitting the GEMMs by xi
 * instead scaled 1.33x on two cores, this 1.85x). Layout: chunk by chunk,
 * V[xi][channel][chunk's tiles] and M[xi][filter][chunk's tiles], plain
 * row-major matrices that the GEMM reads and writes in place.
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
  int64_t kernel_h = 1, kernel_w = 1;  // one of them 1

  // 7x1: the kernel runs down the columns.
  bool Vertical() const { return kernel_h > 1; }
  int64_t Taps() const { return Vertical() ? kernel_h : kernel_w; }
  // Outputs per tile along the kernel's axis: 8 points - taps + 1.
  int64_t TileOutputs() const { return 9 - Taps(); }
  // Tiles along the kernel's axis and across it.
  int64_t TilesAlong() const {
    return ((Vertical() ? out_h : out_w) + TileOutputs() - 1) / TileOutputs();
  }
  int64_t Tiles() const { return TilesAlong() * (Vertical() ? out_w : out_h); }
  // V and M of one image, and for a 1x7 layer its transposed input and
  // output planes.
  size_t WorkspaceBytes() const {
    const int64_t planes = Vertical() ? 0 : channels * in_h * in_w + filters * out_h * out_w;
    return static_cast<size_t>(8 * (channels + filters) * Tiles() + planes) * sizeof(float);
  }
  // The same layer seen transposed (a 1x7 one becomes 7x1).
  Winograd1dGeometry Transposed() const {
    Winograd1dGeometry t = *this;
    t.in_h = in_w, t.in_w = in_h, t.out_h = out_w, t.out_w = out_h;
    t.pad_h = pad_w, t.pad_w = pad_h, t.kernel_h = kernel_w, t.kernel_w = kernel_h;
    return t;
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

// Whether F(2, 7) runs this layer: AVX-512, a 1x7 or 7x1 kernel, stride 1,
// dilation 1, one group, at least 32 channels in and 32 filters out.
bool Winograd1dApplies(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                       int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                       int64_t filters);

// The weights transformed (U[xi] = (G g)[xi]) and packed for the GEMM, and
// the gather/scatter indices of the geometry. Kernels of 3 and 5 taps (F(6, 3)
// and F(4, 5)) are computed correctly too, for the tests; Winograd1dApplies
// sends only 7-tap layers here.
class Winograd1dPlan {
 public:
  Status Prepare(const Winograd1dGeometry& g, const float* weights);
  const Winograd1dGeometry& geometry() const { return geometry_; }

  // One image: input (channels, in_h, in_w) -> output (filters, out_h,
  // out_w) = clamp(conv + bias[f] + residual), residual null or the
  // output's shape. workspace: geometry().WorkspaceBytes().
  void Convolve(const float* input, const float* bias, const float* residual, float lower,
                float upper, float* output, float* workspace, ThreadPool* pool) const;

 private:
  Winograd1dGeometry geometry_;
  Winograd1dGeometry frame_;  // the vertical frame the transforms work in
  std::vector<PackedMatrix> packed_;   // [8]
  std::vector<Winograd1dAccess> input_access_;   // [group][8 input positions]
  std::vector<Winograd1dAccess> output_access_;  // [group][TileOutputs() output positions]
};

}  // namespace mxlite

#endif  // MXLITE_KERNELS_WINOGRAD1D_H_
