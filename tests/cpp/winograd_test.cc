/*
 * winograd_test: F(4x4, 3x3) convolution against a naive double-precision
 * direct convolution, on sizes that leave partial tiles on both edges
 * (1..13, and rows of 6, 9 and 15 tiles), paddings 0..2, several channel
 * counts, chunked and unchunked, with bias, residual and clamp, and with the
 * bias alone. The GEMM inside and the transforms are whichever MXLITE_ISA
 * allows.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/winograd.h"
#include "conv_reference.h"
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
  TestRandom next(777u);
  ThreadPool pool(2);
  // 72 -> 20 splits its depth on two threads (WinogradSplitsDepth).
  const int64_t channel_cases[][2] = {{1, 1}, {3, 5}, {16, 8}, {40, 33}, {72, 20}};
  for (const auto& cf : channel_cases) {
    for (int64_t pad = 0; pad <= 2; ++pad) {
      // 141 with 73 channels in and out needs more than one chunk of tiles;
      // at 79 (400 tiles) the last chunk also takes a remainder of 16. 23,
      // 35 and 57 give rows of 6, 9 and 15 tiles: runs of eight tiles (the
      // AVX2 lanes) that end short of the row, and tile rows that end inside
      // a 16-column strip.
      const int64_t sizes[] = {3, 5, 7, 9, 11, 13, 23, 35, 57, 79, 141};
      for (int64_t size : sizes) {
        if (size > 13 && size < 79 && cf[0] > 16) continue;
        if (size >= 79 && (cf[0] < 40 || pad != 1)) continue;
        WinogradGeometry g;
        g.channels = cf[0];
        g.filters = cf[1];
        g.in_h = size;
        g.in_w = size + 1;
        g.pad_h = g.pad_w = pad;
        g.out_h = g.in_h + 2 * pad - 2;
        g.out_w = g.in_w + 2 * pad - 2;
        std::vector<float> w(g.filters * g.channels * 9), in(g.channels * g.in_h * g.in_w),
            bias(g.filters), residual(g.filters * g.out_h * g.out_w),
            out(residual.size(), NAN);
        for (float& v : w) v = next();
        for (float& v : in) v = next();
        for (float& v : bias) v = next();
        for (float& v : residual) v = next();
        if ((size == 57 || size == 141) && !WinogradSplitsTiles(g.Tiles(), pool.size())) {
          ++failures;
          std::printf("FAIL: size %lld was meant to split its tiles between the threads\n",
                      static_cast<long long>(size));
        }
        if (size == 141 && g.ChunkTiles() >= g.Tiles()) {
          ++failures;
          std::printf("FAIL: the large case was meant to be chunked\n");
        }
        if (size == 79) {
          int64_t last = 0;
          for (int64_t tile0 = 0; tile0 < g.Tiles(); tile0 += last) last = g.ChunkAt(tile0);
          if (!(last > g.ChunkTiles() && g.Tiles() % g.ChunkTiles() != 0)) {
            ++failures;
            std::printf("FAIL: 79 did not merge its remainder (chunk %lld, last %lld)\n",
                        static_cast<long long>(g.ChunkTiles()), static_cast<long long>(last));
          }
        }
        std::vector<PackedMatrix> packed;
        WinogradPackWeights(w.data(), g.filters, g.channels, &packed);
        std::vector<float> workspace(g.WorkspaceBytes() / sizeof(float));
        // Every other size runs without residual and without clamp.
        const bool plain = size % 4 == 3;
        if (plain) std::fill(residual.begin(), residual.end(), 0.f);
        const float lower = plain ? -INFINITY : -2.f, upper = plain ? INFINITY : 2.f;
        WinogradConvolve(g, packed, in.data(), bias.data(), plain ? nullptr : residual.data(),
                         lower, upper, out.data(), workspace.data(),
                         size % 4 == 1 ? &pool : nullptr);
        ++checks;
        const double worst = WorstConvError(
            {g.channels, g.filters, g.in_h, g.in_w, g.out_h, g.out_w, g.pad_h, g.pad_w}, w, in,
            bias, residual, lower, upper, out);
        // Inputs and weights in [-1, 1): errors scale with the channel count.
        if (!(worst <= 2e-5 * (g.channels * 9))) {
          ++failures;
          std::printf("FAIL C=%lld F=%lld pad=%lld size=%lld: max error %g\n",
                      (long long)g.channels, (long long)g.filters, (long long)pad,
                      (long long)size, worst);
        }
        if (size % 4 == 1) {
          // Two threads give one thread's bits: a split depth's two halves
          // add up to the whole sum, and with enough tiles (57, and 141
          // where the depth does not split: WinogradSplitsTiles) each
          // thread's own part of the tiles, in its own chunks, computes
          // each tile as one thread does.
          std::vector<float> one_thread(out.size(), NAN);
          WinogradConvolve(g, packed, in.data(), bias.data(), plain ? nullptr : residual.data(),
                           lower, upper, one_thread.data(), workspace.data(), nullptr);
          ++checks;
          if (std::memcmp(one_thread.data(), out.data(), out.size() * sizeof(float)) != 0) {
            ++failures;
            std::printf("FAIL C=%lld F=%lld pad=%lld size=%lld: two threads differ from one\n",
                        (long long)g.channels, (long long)g.filters, (long long)pad,
                        (long long)size);
          }
        }
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
