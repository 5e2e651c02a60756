#include "winograd.h"

#include "winograd2x2.h"

#include <algorithm>

namespace mxlite {

namespace winograd_cc {

// Bytes for V and M of one chunk: small enough that they stay in L2/L3
// between the transforms and the GEMMs. On the AMD Zen 5 EPYC 2 MiB was up
// to 25% faster than 12 MiB on large maps, equal on small ones. Zen's L3 is
// close to the core; on the Intel Xeon of CPUID model 207 (2 MiB of L2, a
// slower L3) 2 MiB left the layers with 56x56 maps 4-12% slower than 1 MiB
// (BENCHMARKS.md, "Winograd chunks within half the L2"), 512 KiB a little
// slower again. So: 2 MiB on AMD, 1 MiB elsewhere.
int64_t WorkspaceBudget() {
  return GetCpuFeatures().vendor == CpuVendor::kAmd ? int64_t{2} << 20 : int64_t{1} << 20;
}
// A last chunk smaller than this joins the one before it (see ChunkAt).
constexpr int64_t kMergedTiles = 32;
// Tiles a thread from which threads split a layer's tiles (see
// WinogradSplitsTiles).
constexpr int64_t kMinTilesPerThreadPart = 64;
// Where Winograd beats im2col + GEMM (see WinogradPays).
constexpr int64_t kMinTiles = 49;
constexpr int64_t kMinChannels = 256;
constexpr int64_t kMinTilesVector = 32;
constexpr int64_t kMinChannelsVector = 16;
// Fewer tiles (14x14 to 17x17 outputs) leave most GEMM columns empty; there
// only wide layers gain. The AVX2 micro-kernel's strips are half as wide
// (NR 16 against 32), so sixteen tiles fill one, and layers gain from 32
// channels in and out.
constexpr int64_t kMinTilesVectorWide = 16;
constexpr int64_t kMinChannelsVectorWide = 128;
#if defined(__x86_64__) || defined(_M_X64)
constexpr int64_t kMinChannelsVectorWideAvx2 = 32;
#endif  // defined(__x86_64__) || defined(_M_X64)

// In order of preference: the first whose instruction set is selected.
// The vector transforms live in winograd_avx512.cc and winograd_avx2.cc.
const WinogradImplementation kWinogradImplementations[] = {
#if defined(__x86_64__) || defined(_M_X64)
    {Isa::kAvx512, winograd_avx512::Convolve, 32, kMinChannelsVectorWide, true},
    {Isa::kAvx2, winograd_avx2::Convolve, 16, kMinChannelsVectorWideAvx2, false},
#endif  // defined(__x86_64__) || defined(_M_X64)
    {Isa::kGeneric, nullptr, 0, kMinChannelsVectorWide, false},
};

// Whether vector transforms run here.
inline bool VectorTransforms() { return WinogradKernels().convolve != nullptr; }

// B^T (6x6), G (6x3), A^T (4x6) of F(4x4, 3x3), with interpolation points
// 0, +-1, +-2 and infinity.
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

// t = B^T d for one column of six values (the rows of B^T written out, so
// the compiler sees the zeros).
inline void InputColumn(const float d[6], float t[6]) {
  t[0] = 4 * d[0] - 5 * d[2] + d[4];
  t[1] = -4 * d[1] - 4 * d[2] + d[3] + d[4];
  t[2] = 4 * d[1] - 4 * d[2] - d[3] + d[4];
  t[3] = -2 * d[1] - d[2] + 2 * d[3] + d[4];
  t[4] = 2 * d[1] - d[2] - 2 * d[3] + d[4];
  t[5] = 4 * d[1] - 5 * d[3] + d[5];
}

// y = A^T m for one column of six values.
inline void OutputColumn(const float m[6], float y[4]) {
  y[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  y[1] = m[1] - m[2] + 2 * (m[3] - m[4]);
  y[2] = m[1] + m[2] + 4 * (m[3] + m[4]);
  y[3] = m[1] - m[2] + 8 * (m[3] - m[4]) + m[5];
}

// V[xi][c][t] for tiles [tile0, tile0 + count) of channel c.
void TransformInput(const WinogradGeometry& g, const float* plane, int64_t tile0, int64_t count,
                    int64_t c, float* v) {
  const int64_t tiles_w = g.TilesW();
  const int64_t xi_stride = g.channels * count;  // floats between two xi slices
  for (int64_t i = 0; i < count; ++i) {
    const int64_t tile = tile0 + i;
    const int64_t y0 = (tile / tiles_w) * 4 - g.pad_h, x0 = (tile % tiles_w) * 4 - g.pad_w;
    float d[6][6];
    for (int64_t r = 0; r < 6; ++r) {
      const int64_t y = y0 + r;
      for (int64_t k = 0; k < 6; ++k) {
        const int64_t x = x0 + k;
        d[r][k] = (y >= 0 && y < g.in_h && x >= 0 && x < g.in_w) ? plane[y * g.in_w + x] : 0.f;
      }
    }
    // Columns, then rows: (B^T d) B.
    float t[6][6];
    for (int k = 0; k < 6; ++k) {
      float column[6] = {d[0][k], d[1][k], d[2][k], d[3][k], d[4][k], d[5][k]}, out[6];
      InputColumn(column, out);
      for (int r = 0; r < 6; ++r) t[r][k] = out[r];
    }
    float* dst = v + c * count + i;
    for (int r = 0; r < 6; ++r) {
      float out[6];
      InputColumn(t[r], out);
      for (int k = 0; k < 6; ++k) dst[(r * 6 + k) * xi_stride] = out[k];
    }
  }
}

// Output tile from M[xi][f][t], with the epilogue.
void TransformOutput(const WinogradGeometry& g, const float* m, int64_t tile0, int64_t count,
                     int64_t f, const float* bias, const float* residual, float lower,
                     float upper, float* output) {
  const int64_t tiles_w = g.TilesW();
  const int64_t xi_stride = g.filters * count;
  const float b = bias ? bias[f] : 0.f;
  float* out_plane = output + f * g.out_h * g.out_w;
  const float* res_plane = residual ? residual + f * g.out_h * g.out_w : nullptr;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t tile = tile0 + i;
    const int64_t y0 = (tile / tiles_w) * 4, x0 = (tile % tiles_w) * 4;
    const float* src = m + f * count + i;
    float t[4][6];
    for (int k = 0; k < 6; ++k) {
      float column[6], out[4];
      for (int r = 0; r < 6; ++r) column[r] = src[(r * 6 + k) * xi_stride];
      OutputColumn(column, out);
      for (int r = 0; r < 4; ++r) t[r][k] = out[r];
    }
    for (int r = 0; r < 4; ++r) {
      const int64_t y = y0 + r;
      if (y >= g.out_h) break;
      float row[4];
      OutputColumn(t[r], row);
      for (int k = 0; k < 4; ++k) {
        const int64_t x = x0 + k;
        if (x >= g.out_w) break;
        float value = row[k] + b;
        if (res_plane) value += res_plane[y * g.out_w + x];
        out_plane[y * g.out_w + x] = std::min(std::max(value, lower), upper);
      }
    }
  }
}

}  // namespace winograd_cc

const WinogradImplementation& WinogradKernels() {
  static const WinogradImplementation& chosen =
      ChooseImplementation(winograd_cc::kWinogradImplementations);
  return chosen;
}

int64_t WinogradGeometry::ChunkTiles() const {
  const int64_t per_tile = 36 * (channels + filters) * int64_t{sizeof(float)};
  const int64_t chunk = std::max<int64_t>(1, winograd_cc::WorkspaceBudget() / per_tile);
  // At least 64 tiles (GEMM columns) per chunk, and whole 32-column strips.
  if (chunk >= Tiles()) return Tiles();
  return std::min(Tiles(), std::max<int64_t>(chunk / 32 * 32, 64));
}

int64_t WinogradGeometry::ChunkIn(int64_t tile0, int64_t end) const {
  const int64_t count = std::min(ChunkTiles(), end - tile0);
  return end - tile0 - count < winograd_cc::kMergedTiles ? end - tile0 : count;
}

bool WinogradSplitsTiles(int64_t tiles, int threads) {
  return threads > 1 && tiles >= winograd_cc::kMinTilesPerThreadPart * threads;
}

bool WinogradSplitsDepth(int64_t channels, int64_t filters) {
  return channels % 2 == 0 && channels >= 64 && channels >= 2 * filters;
}

bool WinogradGeometry::SplitsDepth() const { return WinogradSplitsDepth(channels, filters); }

size_t WinogradGeometry::WorkspaceBytes() const {
  // V's tile count is rounded up to whole 32-column strips for the AVX-512
  // path, which writes V in the GEMM's packed layout. The largest chunk is
  // a last one with a remainder merged in.
  const int64_t chunk = std::min(Tiles(), ChunkTiles() + winograd_cc::kMergedTiles - 1);
  const int64_t strip_tiles = (chunk + 31) / 32 * 32;
  // (+32: the AVX-512 path pads each xi's V and M by a cache line.)
  // (A split depth has a second M, see WinogradSplitsDepth.)
  const int64_t m_count = SplitsDepth() ? 2 : 1;
  return static_cast<size_t>(36 * (channels * strip_tiles + m_count * (filters * chunk + 32))) *
         sizeof(float);
}

bool WinogradPays(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                     int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                     int64_t filters, int64_t out_h, int64_t out_w) {
  if (kernel_h != 3 || kernel_w != 3 || stride_h != 1 || stride_w != 1 || dilate_h != 1 ||
      dilate_w != 1 || groups != 1) {
    return false;
  }
  // The transforms cost O(C + F) per tile and the GEMMs save O(C * F): with
  // scalar transforms the saving wins from about 256 channels in and out
  // (measured: 512->512 at 28x28 in 0.55x the time of im2col+GEMM,
  // 256->256 at 56x56 in 0.68x, but 64->64 at 56x56 in 1.4x), and the 36
  // GEMMs need enough tiles to fill the micro-kernel's columns.
  // With the AVX-512 transforms it wins much earlier (measured against the
  // GEMM alone, without im2col: 0.4-0.6x the time from 64 channels, 0.8-0.9x
  // at 16-32), except where few tiles leave the GEMM columns empty: at 16-25
  // tiles 0.6-0.9x from 128 channels in and out, 1.0-1.3x below; at 4 tiles
  // (7x7) 3-4x. With the AVX2 transforms (Zen 3, against the shifted-view
  // GEMM, one thread): 0.4-0.6x from 16 channels at 49-196 tiles; at 16-25
  // tiles 0.45-0.75x from 32 channels (16->16: 0.8-0.95x); at 9 tiles
  // 0.8-0.9x; at 4 tiles 1.3-1.55x.
  const int64_t tiles = ((out_h + 3) / 4) * ((out_w + 3) / 4);
  if (winograd_cc::VectorTransforms()) {
    if (tiles >= winograd_cc::kMinTilesVector) {
      return channels >= winograd_cc::kMinChannelsVector &&
             filters >= winograd_cc::kMinChannelsVector;
    }
    // Where F(2x2, 3x3) runs (AVX-512, maps of at most 14x14), it does
    // better on 16-25 tiles: 36% more multiplications, but 16 GEMMs of 49
    // columns instead of 36 of 16, and 16/36 of the transformed weights to
    // stream. With ResNets' 14x14 stages moved, in two runs alternating in
    // one process: resnet50_v2 15.09 -> 14.86 and 15.66 -> 15.46 ms at two
    // threads, 0.3-1% faster at one; resnet18_v1 2% at two, 0.5-0.7% at one.
    if (Winograd2x2Pays(kernel_h, kernel_w, stride_h, stride_w, dilate_h, dilate_w, groups,
                           channels, filters, out_h, out_w)) {
      return false;
    }
    const int64_t min_channels = WinogradKernels().min_channels_wide;
    return tiles >= winograd_cc::kMinTilesVectorWide && channels >= min_channels &&
           filters >= min_channels;
  }
  return tiles >= winograd_cc::kMinTiles && channels >= winograd_cc::kMinChannels &&
         filters >= winograd_cc::kMinChannels;
}

Status WinogradPackWeights(const float* weights, int64_t filters, int64_t channels,
                           std::vector<PackedMatrix>* packed) {
  using winograd_cc::kG;
  // u[xi][f][c], transformed in double and rounded once.
  std::vector<float> u(static_cast<size_t>(36 * filters * channels));
  for (int64_t f = 0; f < filters; ++f) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* g = weights + (f * channels + c) * 9;
      double t[6][3];  // G g
      for (int r = 0; r < 6; ++r) {
        for (int k = 0; k < 3; ++k) {
          t[r][k] = kG[r][0] * g[0 * 3 + k] + kG[r][1] * g[1 * 3 + k] + kG[r][2] * g[2 * 3 + k];
        }
      }
      for (int r = 0; r < 6; ++r) {
        for (int k = 0; k < 6; ++k) {
          const double value = t[r][0] * kG[k][0] + t[r][1] * kG[k][1] + t[r][2] * kG[k][2];
          u[((r * 6 + k) * filters + f) * channels + c] = static_cast<float>(value);
        }
      }
    }
  }
  packed->resize(36);
  for (int xi = 0; xi < 36; ++xi) {
    MXL_RETURN_IF_ERROR(
        (*packed)[xi].Pack(u.data() + xi * filters * channels, channels, filters, channels,
                           false, nullptr,
                           WinogradSplitsDepth(channels, filters) ? channels / 2 : 0));
  }
  return Status();
}

void WinogradConvolve(const WinogradGeometry& g, const std::vector<PackedMatrix>& packed,
                      const float* input, const float* bias, const float* residual,
                      float lower, float upper, float* output, float* workspace,
                      ThreadPool* pool) {
  // The vector paths write V in the packed-B layout of the micro-kernel the
  // weights were packed for: NR = 32 (AVX-512) or 16 (AVX2).
  const WinogradImplementation& kernels = WinogradKernels();
  if (kernels.convolve && !packed.empty() && packed[0].kernel().nr == kernels.vector_nr) {
    kernels.convolve(g, packed, input, bias, residual, lower, upper, output, workspace, pool);
    return;
  }
  const int64_t tiles = g.Tiles();
  const int64_t in_plane = g.in_h * g.in_w;
  const bool claim = WinogradClaims(pool);
  for (int64_t tile0 = 0, count = 0; tile0 < tiles; tile0 += count) {
    count = g.ChunkAt(tile0);
    float* v = workspace;                             // [36][channels][count]
    float* m = workspace + 36 * g.channels * count;   // [36][filters][count]
    ClaimWorkspace(claim, v, 36 * g.channels * count);
    ParallelFor(pool, g.channels, [&](int64_t c) {
      winograd_cc::TransformInput(g, input + c * in_plane, tile0, count, c, v);
    });
    GemmEpilogue plain;
    for (int xi = 0; xi < 36; ++xi) {
      ClaimWorkspace(claim, m + xi * g.filters * count, g.filters * count);
      GemmPacked(packed[xi], v + xi * g.channels * count, count, count,
                 m + xi * g.filters * count, count, plain, pool);
    }
    ParallelFor(pool, g.filters, [&](int64_t f) {
      winograd_cc::TransformOutput(g, m, tile0, count, f, bias, residual, lower, upper, output);
    });
  }
}

}  // namespace mxlite
