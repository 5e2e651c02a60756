// Does a blocked channel layout pay for 1x1 convolutions? A probe, not part
// of the library: one 1x1 layer (relu(W x + bias)) through mxlite's NCHW GEMM
// and through a plain NCHW16c kernel, one thread, operands warm, the two
// alternating, median microseconds of 60 runs in each of 3 rounds.
//
// The NCHW16c kernel keeps 4 output blocks x 6 pixels in 24 accumulators: per
// input channel it loads 64 filter values (4 vectors) and broadcasts 6 input
// values, 10 loads for 24 FMAs, and reads both operands contiguously (the
// input block is [channel / 16][pixel][channel % 16], the filters
// [output group of 64][input channel][64]). Input channels go in blocks of
// `block` so the filters of a block stay in L1; the output is read back and
// added between blocks.
//
//   make amalgamation
//   g++ -std=c++17 -O2 -I build scripts/bench/nchwc_probe.cc -o build/nchwc_probe -lpthread
//   build/nchwc_probe 512 512 196 [block=128]     (filters, channels, pixels)
//
// Results on the model-167 Xeon: BENCHMARKS.md, "Where the time goes on the
// model-167 Xeon".
#include "mxlite-all.cc"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace nchwc_probe {

using mxlite::GemmEpilogue;
using mxlite::PackedMatrix;

template <int kPixels>
__attribute__((target("avx512f,fma"))) inline void Block(const float* w, const float* x,
                                                          int64_t pixels, int64_t c0, int64_t c1,
                                                          float* y, bool first, bool last,
                                                          const float* bias, int64_t p0) {
  __m512 acc[4][kPixels];
  _Pragma("GCC unroll 8") for (int v = 0; v < 4; ++v) {
    _Pragma("GCC unroll 8") for (int p = 0; p < kPixels; ++p) {
      acc[v][p] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + (v * pixels + p0 + p) * 16);
    }
  }
  for (int64_t c = c0; c < c1; ++c) {
    const float* wc = w + c * 64;
    const __m512 w0 = _mm512_loadu_ps(wc), w1 = _mm512_loadu_ps(wc + 16),
                 w2 = _mm512_loadu_ps(wc + 32), w3 = _mm512_loadu_ps(wc + 48);
    const float* xc = x + ((c >> 4) * pixels + p0) * 16 + (c & 15);
    _Pragma("GCC unroll 8") for (int p = 0; p < kPixels; ++p) {
      const __m512 xv = _mm512_set1_ps(xc[p * 16]);
      acc[0][p] = _mm512_fmadd_ps(w0, xv, acc[0][p]);
      acc[1][p] = _mm512_fmadd_ps(w1, xv, acc[1][p]);
      acc[2][p] = _mm512_fmadd_ps(w2, xv, acc[2][p]);
      acc[3][p] = _mm512_fmadd_ps(w3, xv, acc[3][p]);
    }
  }
  _Pragma("GCC unroll 8") for (int v = 0; v < 4; ++v) {
    const __m512 b = _mm512_loadu_ps(bias + v * 16), zero = _mm512_set1_ps(0.f);
    _Pragma("GCC unroll 8") for (int p = 0; p < kPixels; ++p) {
      __m512 r = acc[v][p];
      // Masked max: GCC 12 warns about an undefined operand in _mm512_max_ps.
      if (last) r = _mm512_maskz_max_ps(0xffff, _mm512_add_ps(r, b), zero);
      _mm512_storeu_ps(y + (v * pixels + p0 + p) * 16, r);
    }
  }
}

__attribute__((target("avx512f,fma"))) void Conv1x1Blocked(const float* w, const float* x,
                                                            const float* bias, int64_t channels,
                                                            int64_t filters, int64_t pixels,
                                                            float* y, int64_t block) {
  for (int64_t group = 0; group < filters / 64; ++group) {
    const float* wg = w + group * channels * 64;
    float* yg = y + group * 4 * pixels * 16;
    for (int64_t c0 = 0; c0 < channels; c0 += block) {
      const int64_t c1 = std::min(channels, c0 + block);
      const bool first = c0 == 0, last = c1 == channels;
      int64_t p = 0;
      const float* group_bias = bias + group * 64;
      for (; p + 6 <= pixels; p += 6) {
        Block<6>(wg, x, pixels, c0, c1, yg, first, last, group_bias, p);
      }
      for (; p < pixels; ++p) Block<1>(wg, x, pixels, c0, c1, yg, first, last, group_bias, p);
    }
  }
}

template <class F>
double MedianMicroseconds(F&& run) {
  std::vector<double> times;
  for (int r = 0; r < 60; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    times.push_back(std::chrono::duration<double>(elapsed).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] * 1e6;
}

int Main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s filters channels pixels [block]\n", argv[0]);
    return 2;
  }
  const int64_t filters = std::atol(argv[1]), channels = std::atol(argv[2]),
                pixels = std::atol(argv[3]), block = argc > 4 ? std::atol(argv[4]) : 128;
  if (filters <= 0 || filters % 64 != 0 || channels <= 0 || channels % 16 != 0 || pixels <= 0 ||
      block <= 0) {
    std::fprintf(stderr, "filters must be a multiple of 64, channels of 16, all positive\n");
    return 2;
  }
  std::srand(1);
  auto random = [](std::vector<float>* values) {
    for (float& v : *values) v = static_cast<float>(std::rand() % 200 - 100) / 100.f;
  };
  std::vector<float> w(filters * channels), x(channels * pixels), bias(filters),
      y(filters * pixels);
  random(&w);
  random(&x);
  random(&bias);
  std::vector<float> w_blocked(w.size()), x_blocked(x.size()), y_blocked(y.size());
  for (int64_t o = 0; o < filters; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      w_blocked[(o / 64) * channels * 64 + c * 64 + o % 64] = w[o * channels + c];
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t p = 0; p < pixels; ++p) {
      x_blocked[((c / 16) * pixels + p) * 16 + c % 16] = x[c * pixels + p];
    }
  }
  PackedMatrix packed;
  if (!packed.Pack(w.data(), channels, filters, channels).ok()) return 1;
  GemmEpilogue epilogue;
  epilogue.bias = bias.data();
  epilogue.lower = 0.f;
  double gemm = 0, blocked = 0;
  for (int round = 0; round < 3; ++round) {
    gemm += MedianMicroseconds(
        [&] { GemmPacked(packed, x.data(), pixels, pixels, y.data(), pixels, epilogue, nullptr); });
    blocked += MedianMicroseconds([&] {
      Conv1x1Blocked(w_blocked.data(), x_blocked.data(), bias.data(), channels, filters, pixels,
                     y_blocked.data(), block);
    });
  }
  double largest_difference = 0;
  for (int64_t o = 0; o < filters; ++o) {
    for (int64_t p = 0; p < pixels; ++p) {
      const float blocked_value = y_blocked[((o / 16) * pixels + p) * 16 + o % 16];
      const double d = std::fabs(y[o * pixels + p] - blocked_value);
      largest_difference = std::max(largest_difference, d);
    }
  }
  const double flops = 2.0 * filters * channels * pixels;
  std::printf("%ld x %ld x %ld, block %ld: NCHW GEMM %.1f us (%.0f GFLOP/s), NCHW16c %.1f us "
              "(%.0f GFLOP/s), largest difference %.2g\n",
              static_cast<long>(filters), static_cast<long>(channels), static_cast<long>(pixels),
              static_cast<long>(block), gemm / 3, flops / (gemm / 3) / 1e3, blocked / 3,
              flops / (blocked / 3) / 1e3, largest_difference);
  return 0;
}

}  // namespace nchwc_probe

int main(int argc, char** argv) { return nchwc_probe::Main(argc, argv); }
