/*
 * Winograd convolution F(4x4, 3x3) for 3x3, stride-1 convolutions.
 *
 * A 4x4 block of outputs needs a 6x6 block of inputs. Winograd's minimal
 * filtering computes it as
 *     Y = A^T [ (G g G^T) .* (B^T d B) ] A
 * with 36 multiplications per input channel instead of 144. Summed over
 * input channels the elementwise products become 36 independent matrix
 * products, one per position xi of the 6x6 transformed tile:
 *     M[xi] (filters x tiles) = U[xi] (filters x channels) * V[xi] (channels x tiles)
 * U = G g G^T is computed once, in double precision, when the operator is
 * prepared, and packed for the GEMM; V = B^T d B is computed per call; the
 * GEMMs run on the blocked kernels; the output transform applies A^T . A,
 * then the bias, the residual and the clamp of the fused epilogue.
 *
 * Tiles are processed in chunks so that V and M (36 x (C + F) x chunk
 * floats) fit the workspace budget. The transforms are exact in exact
 * arithmetic; in float32 the result differs from direct convolution by a
 * few units in the sixth significant digit, well inside MXNet's 1e-4
 * tolerance.
 */
#ifndef MXLITE_KERNELS_WINOGRAD_H_
#define MXLITE_KERNELS_WINOGRAD_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_features.h"
#include "gemm.h"
#include "padding.h"

namespace mxlite {

struct WinogradGeometry {
  int64_t channels = 0, filters = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t pad_h = 0, pad_w = 0;

  int64_t TilesH() const { return (out_h + 3) / 4; }
  int64_t TilesW() const { return (out_w + 3) / 4; }
  int64_t Tiles() const { return TilesH() * TilesW(); }
  // Tiles per chunk, so that the chunk's V and M fit the workspace budget.
  int64_t ChunkTiles() const;
  // Tiles in the chunk that starts at tile0: ChunkTiles(), but the last
  // chunk also takes a remainder of fewer than kMergedTiles tiles (a chunk
  // of a few tiles re-reads all 36 weight matrices for little work).
  int64_t ChunkAt(int64_t tile0) const { return ChunkIn(tile0, Tiles()); }
  // The same within tiles [tile0, end): one thread's part of them.
  int64_t ChunkIn(int64_t tile0, int64_t end) const;
  size_t WorkspaceBytes() const;
  // Whether the weights are packed in two halves of the channels, so that
  // on two threads each transforms and multiplies its own half (see
  // WinogradSplitsDepth).
  bool SplitsDepth() const;
};

// Layers with at least twice as many channels in as filters out (DenseNet's
// 128 -> 32), from 64 channels, split their depth on two threads (F(4x4) on
// AVX-512, and F(2x2)): each thread transforms half of the channels and
// runs all the GEMMs over that half into its own M, and the output
// transform adds the two. The threads then exchange M (filters x tiles per
// xi) instead of V (channels x tiles), a quarter of the bytes for DenseNet,
// and skip the wait between the input transform and the GEMMs: densenet121
// 12.75 -> 12.45 ms at two threads (alternating in one process), the same
// at one. Up to 512 channels the sum is the one a whole-depth GEMM makes
// (see GemmPrepackedBSegments): one and two threads give the same bits.
bool WinogradSplitsDepth(int64_t channels, int64_t filters);

// Whether a layer whose weights split their depth (SplitsDepth()) runs
// split on this pool: on two threads exactly, one half each.
inline bool WinogradRunsSplit(bool splits_depth, const ThreadPool* pool) {
  return splits_depth && pool && pool->size() == 2;
}

// Whether a layer of `tiles` output tiles splits them between `threads`
// threads, each taking a contiguous part (rows of tiles) through all three
// steps in its own workspace, instead of splitting each step: the input
// transform by channels, the GEMMs by tile position, the output transform
// by filters, where each step reads what the other threads wrote in the
// step before. From 64 tiles a thread (56x56 maps and larger). Where the
// host puts a virtual machine's two CPUs in different core complexes (a
// cache line's round trip ~310 ns instead of ~55; scripts/bench/
// placement_check.py), data one thread wrote and the other reads is what
// costs: resnet18_v1 at two threads, 100 windows of 1 s in each setting
// alternating (Zen 4), 17.0-17.3 -> 15.4 ms far apart, 10.75-10.81 ->
// 10.84-10.92 near. From 16 tiles a thread near was 3% slower (the GEMMs of
// 24 columns at 28x28). The parts beyond the first run in a thread_local
// workspace of WorkspaceBytes on whichever thread takes them, kept for the
// thread's lifetime. Every tile's
// arithmetic is the same in any chunk, so the bits do not change.
bool WinogradSplitsTiles(int64_t tiles, int threads);

// Whether Winograd pays for this layer: 3x3, stride 1, dilation 1, one
// group, and enough output tiles to keep the 36 GEMMs busy.
bool WinogradPays(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                     int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                     int64_t filters, int64_t out_h, int64_t out_w);

// Zeroes floats [region, region + count) before a phase scatters its stores
// over them, when the layer runs on one thread (see WinogradClaims). V is
// written in 36 x strips interleaved runs and M in 12-row tiles: more
// streams than the hardware prefetcher follows, so when the workspace has
// left the caches (in a network it has, by the time the next Winograd layer
// runs) every store waits on a read of its line first ("read for
// ownership"). A large memset writes whole lines without reading them (rep
// stosb on x86, DC ZVA on AArch64), claiming them in cache for a tenth of
// that cost.
inline void ClaimWorkspace(bool claim, float* region, int64_t count) {
  if (claim) std::memset(region, 0, sizeof(float) * static_cast<size_t>(count));
}

// Whether to claim the workspace: on one thread only. Measured per layer in
// the network (min over rounds, alternating): on one thread resnet50_v2's
// Winograd layers ran 2-9% faster on a quiet machine, and with a
// memory-bound process on the other core densenet121's ran 11% and
// squeezenet1.1's 19% faster (standalone with a warm workspace the claim
// costs 3-8%). On two threads resnet18_v1's ran 5-9% slower: the memset of
// V runs on one thread while the other waits, and half of the lines it
// claims are then written from the other core.
inline bool WinogradClaims(const ThreadPool* pool) { return !pool || pool->size() <= 1; }

// Floats between the V (or M) matrices of two consecutive xi in the vector
// paths. The 36 stores of one tile group go to the 36 matrices; were their
// distance a multiple of 4 KiB, all would map to one L1 set and evict each
// other, so the stride is padded by one cache line (WorkspaceBytes has room).
inline int64_t WinogradXiStride(int64_t floats) { return floats + 16; }

// The chunk loop of the vector paths (winograd_avx512.cc, winograd_avx2.cc),
// over Transforms: kLanes tiles per vector, and the two transforms:
//   Transforms::Input(g, tile0, count, scratch, scratch_w, lines, channels, strips, nr, c, v,
//                     v_stride)
//     writes channel c's V rows of the chunk's tiles into the packed-B layout,
//     from a zero-padded copy of the rows they read; or, where
//     Transforms::kReadsPlane, Input(g, tile0, count, plane, channels, strips,
//     nr, c, v, v_stride) reads channel c's plane itself (masked loads);
//   Transforms::Output(g, tile0, count, m, m_stride, line_stride, lines, f, bias, residual,
//                      clamp, lower, upper, output)
//     writes filter f's outputs of the chunk's tiles (where kReadsPlane,
//     with m_half after m: the second half's M of a split depth, or null).
// Per chunk: each channel's rows are transformed (copied into a zero-padded
// scratch first where the transform needs one), the 36 GEMMs are split
// between threads (not each one), and each filter's outputs are transformed
// back. A split depth (WinogradSplitsDepth) on two threads fuses the first
// two steps per half of the channels (AVX-512 path only). Layers with
// enough tiles instead give each thread a contiguous part of the tiles to
// take through every step (WinogradSplitsTiles).
template <class Transforms>
void WinogradConvolveVector(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
                            const float* input, const float* bias, const float* residual,
                            float lower, float upper, float* output, float* workspace,
                            ThreadPool* pool) {
  constexpr int64_t kLanes = Transforms::kLanes;
  const int nr = packed[0].kernel().nr;
  const int64_t tiles = g.Tiles(), tiles_w = g.TilesW();
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const bool clamp = ClampIsSet(lower, upper);
  const bool split = Transforms::kReadsPlane && WinogradRunsSplit(g.SplitsDepth(), pool);
  // One chunk of tiles in chunk_workspace, each step split over step_pool
  // (null: all on this thread).
  const auto run_chunk = [&](int64_t tile0, int64_t count, float* chunk_workspace,
                             ThreadPool* step_pool) {
    const bool claim = WinogradClaims(step_pool);
    const int64_t strips = (count + nr - 1) / nr;
    float* v = chunk_workspace;  // [36][strips][channels][nr]
    const int64_t v_stride = WinogradXiStride(strips * nr * g.channels);
    const int64_t m_stride = WinogradXiStride(g.filters * count);
    float* m = chunk_workspace + 36 * v_stride;  // [36][filters][count]
    // Lines of the transforms, with room for a kLanes-wide read past the
    // chunk's last tile.
    const int64_t line_stride = strips * nr + kLanes;
    ClaimWorkspace(claim, v, 36 * v_stride);
    // With the depth split on two threads (see WinogradSplitsDepth), each
    // transforms half the channels and multiplies them into its own M; the
    // second half's is m_half.
    const float* m_half = nullptr;
    if constexpr (Transforms::kReadsPlane) {
      if (split) {
        float* m_second = m + 36 * m_stride;
        m_half = m_second;
        ParallelFor(step_pool, 2, [&](int64_t half) {
          for (int64_t c = half * g.channels / 2; c < (half + 1) * g.channels / 2; ++c) {
            Transforms::Input(g, tile0, count, input + c * in_plane, g.channels, strips, nr,
                              c, v, v_stride);
          }
          float* m_out = half == 0 ? m : m_second;
          for (int64_t xi = 0; xi < 36; ++xi) {
            GemmPrepackedBSegments(packed[xi], half, half + 1, v + xi * v_stride, count,
                                   m_out + xi * m_stride, count, GemmEpilogue(), nullptr);
          }
        });
      } else {
        ParallelFor(step_pool, g.channels, [&](int64_t c) {
          Transforms::Input(g, tile0, count, input + c * in_plane, g.channels, strips, nr, c,
                            v, v_stride);
        });
      }
    } else {
      // Room for the last kLanes-tile run of a row to read 4 * kLanes + 2
      // columns.
      const int64_t scratch_w = (tiles_w + kLanes - 1) / kLanes * kLanes * 4 + kLanes;
      const int64_t scratch_h = ((tile0 + count - 1) / tiles_w - tile0 / tiles_w) * 4 + 6;
      // The chunk's tiles read input rows first_row ... (negative: padding
      // above); scratch row 0 is first_row, column 0 is -pad_w.
      const int64_t first_row = (tile0 / tiles_w) * 4 - g.pad_h;
      const int64_t src_row = std::max<int64_t>(first_row, 0), top = src_row - first_row;
      const int64_t rows = std::max<int64_t>(0, std::min(g.in_h - src_row, scratch_h - top));
      ParallelFor(step_pool, g.channels, [&](int64_t c) {
        thread_local std::vector<float> scratch, lines;
        scratch.resize(static_cast<size_t>(scratch_h * scratch_w));
        lines.resize(static_cast<size_t>(36 * line_stride));
        CopyPadded(input + c * in_plane + src_row * g.in_w, rows, g.in_w, top, g.pad_w, 0.f,
                   scratch_h, scratch_w, scratch.data());
        Transforms::Input(g, tile0, count, scratch.data(), scratch_w, lines.data(), g.channels,
                          strips, nr, c, v, v_stride);
      });
    }
    if (!split) {
      ParallelFor(step_pool, 36, [&](int64_t xi) {
        ClaimWorkspace(claim, m + xi * m_stride, g.filters * count);
        GemmPrepackedB(packed[xi], v + xi * v_stride, count, m + xi * m_stride, count,
                       GemmEpilogue(), nullptr);
      });
    }
    ParallelFor(step_pool, g.filters, [&](int64_t f) {
      thread_local std::vector<float> out_lines;
      out_lines.resize(static_cast<size_t>(16 * line_stride));
      if constexpr (Transforms::kReadsPlane) {
        Transforms::Output(g, tile0, count, m, m_half, m_stride, line_stride, out_lines.data(),
                           f, bias ? bias[f] : 0.f, residual ? residual + f * out_plane : nullptr,
                           clamp, lower, upper, output + f * out_plane);
      } else {
        Transforms::Output(g, tile0, count, m, m_stride, line_stride, out_lines.data(), f,
                           bias ? bias[f] : 0.f, residual ? residual + f * out_plane : nullptr,
                           clamp, lower, upper, output + f * out_plane);
      }
    });
  };
  const int threads = pool ? pool->size() : 1;
  if (!split && WinogradSplitsTiles(tiles, threads)) {
    // Part p of the tiles, start to end on one thread, in its own workspace
    // (the first part in the operator's; see WinogradSplitsTiles).
    ParallelFor(pool, threads, [&](int64_t part) {
      const int64_t begin = tiles * part / threads, end = tiles * (part + 1) / threads;
      float* own = workspace;
      if (part > 0) {
        thread_local std::vector<float> part_workspace;
        part_workspace.resize(g.WorkspaceBytes() / sizeof(float));
        own = part_workspace.data();
      }
      for (int64_t tile0 = begin, count = 0; tile0 < end; tile0 += count) {
        count = g.ChunkIn(tile0, end);
        run_chunk(tile0, count, own, nullptr);
      }
    });
    return;
  }
  for (int64_t tile0 = 0, count = 0; tile0 < tiles; tile0 += count) {
    count = g.ChunkAt(tile0);
    run_chunk(tile0, count, workspace, pool);
  }
}

// U[xi] = (G g G^T)[xi] for weights (filters, channels, 3, 3), packed.
Status WinogradPackWeights(const float* weights, int64_t filters, int64_t channels,
                           std::vector<PackedMatrix>* packed);

// One image: input (channels, in_h, in_w) -> output (filters, out_h, out_w),
// output = clamp(conv + bias[f] + residual).
void WinogradConvolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
                      const float* input, const float* bias, const float* residual,
                      float lower, float upper, float* output, float* workspace,
                      ThreadPool* pool);

#if defined(__x86_64__) || defined(_M_X64)
namespace winograd_avx512 {
// WinogradConvolve with AVX-512 transforms (winograd_avx512.cc); the packed
// weights must be for the AVX-512 GEMM micro-kernel.
void Convolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
              const float* input, const float* bias, const float* residual, float lower,
              float upper, float* output, float* workspace, ThreadPool* pool);
}  // namespace winograd_avx512
namespace winograd_avx2 {
// The same with AVX2 transforms (winograd_avx2.cc), for the AVX2 GEMM
// micro-kernel (NR = 16).
void Convolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
              const float* input, const float* bias, const float* residual, float lower,
              float upper, float* output, float* workspace, ThreadPool* pool);
}  // namespace winograd_avx2
#endif  // defined(__x86_64__) || defined(_M_X64)

using WinogradConvolveFn = void (*)(const WinogradGeometry& g,
                                    const std::vector<PackedMatrix>& packed, const float* input,
                                    const float* bias, const float* residual, float lower,
                                    float upper, float* output, float* workspace,
                                    ThreadPool* pool);

// One implementation of the Winograd family (F(4x4, 3x3) here, F(2x2, 3x3)
// in winograd2x2.cc, the 1-D kernels in winograd1d.cc): a line of its table
// (kWinogradImplementations in winograd.cc).
struct WinogradImplementation {
  Isa isa;
  // F(4x4, 3x3) with vector transforms, for weights packed for the GEMM
  // micro-kernel of NR = vector_nr; null: the portable transforms.
  WinogradConvolveFn convolve;
  int vector_nr;
  // Channels in and out from which F(4x4, 3x3) pays on 16-25 tiles (see
  // WinogradPays).
  int64_t min_channels_wide;
  // F(2x2, 3x3) and the 1-D kernels run (AVX-512 kernels).
  bool small_tiles;
};

// The family's implementation for this machine, chosen once from
// SelectedIsa(): operators and algorithm tables ask it, never the ISA.
const WinogradImplementation& WinogradKernels();

}  // namespace mxlite

#endif  // MXLITE_KERNELS_WINOGRAD_H_
