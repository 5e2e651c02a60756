// Does a blocked channel layout pay for 1x1 convolutions? A probe, not part
// of the library: one 1x1 layer (relu(W x + bias)) through mxlite's NCHW GEMM,
// through a plain NCHW16c kernel and through an NCHW kernel with the NCHW16c
// kernel's register tile, one thread, operands warm, the three alternating,
// median microseconds of 60 runs in each of 3 rounds.
//
// The NCHW16c kernel keeps 4 output blocks x 6 pixels in 24 accumulators: per
// input channel it loads 64 filter values (4 vectors) and broadcasts 6 input
// values, 10 loads for 24 FMAs, and reads both operands contiguously (the
// input block is [channel / 16][pixel][channel % 16], the filters
// [output group of 64][input channel][64]). Input channels go in blocks of
// `block` so the filters of a block stay in L1; the output is read back and
// added between blocks.
//
// The channel-vector kernel keeps the same kind of tile (4 vectors of 16
// output channels x 7 pixels, 28 accumulators) on NCHW data: per input
// channel it loads 64 filter values and broadcasts 7 consecutive values of
// that channel's row of the input, over the whole depth; the finished tile
// is transposed in registers (16 channels x 8 pixels at a time) and stored as
// 7-float runs of 64 output rows. It asks whether the tile, not the layout,
// is what the blocked kernel gains (it is not: see BENCHMARKS.md).
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

// Stores pixels[0..count) (count <= 8; 16 channels each) as rows: channel c's
// values at y + c * ldy. Three shuffle steps turn 8 vectors of 16 channels
// into 16 runs of 8 pixels, two channels per vector.
__attribute__((target("avx512f,avx512vl,fma"))) inline void StoreTransposed(const __m512* pixels,
                                                                             int count, float* y,
                                                                             int64_t ldy) {
  __m512 pairs[8], quads[8];
  for (int i = 0; i < 4; ++i) {
    pairs[2 * i] = _mm512_maskz_unpacklo_ps(0xffff, pixels[2 * i], pixels[2 * i + 1]);
    pairs[2 * i + 1] = _mm512_maskz_unpackhi_ps(0xffff, pixels[2 * i], pixels[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    const __m512d p0 = _mm512_castps_pd(pairs[4 * h]), p1 = _mm512_castps_pd(pairs[4 * h + 1]),
                  p2 = _mm512_castps_pd(pairs[4 * h + 2]), p3 = _mm512_castps_pd(pairs[4 * h + 3]);
    quads[4 * h] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, p0, p2));
    quads[4 * h + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, p0, p2));
    quads[4 * h + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, p1, p3));
    quads[4 * h + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, p1, p3));
  }
  // (The masked forms of the shuffles: GCC 12 warns about an undefined
  // operand inside the plain ones.)
  // 128-bit lane L of quads[j] holds pixels 0-3 of channel 4L + j, of
  // quads[4 + j] pixels 4-7; pick lanes into channel j | 4 + j and 8 + j | 12 + j.
  const __m512i low = _mm512_set_epi32(23, 22, 21, 20, 7, 6, 5, 4, 19, 18, 17, 16, 3, 2, 1, 0);
  const __m512i high =
      _mm512_set_epi32(31, 30, 29, 28, 15, 14, 13, 12, 27, 26, 25, 24, 11, 10, 9, 8);
  const __mmask8 mask = static_cast<__mmask8>((1u << count) - 1);
  for (int j = 0; j < 4; ++j) {
    const __m512d first = _mm512_castps_pd(_mm512_permutex2var_ps(quads[j], low, quads[4 + j]));
    const __m512d second = _mm512_castps_pd(_mm512_permutex2var_ps(quads[j], high, quads[4 + j]));
    _mm256_mask_storeu_ps(y + j * ldy, mask, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, first, 0)));
    _mm256_mask_storeu_ps(y + (4 + j) * ldy, mask,
                          _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, first, 1)));
    _mm256_mask_storeu_ps(y + (8 + j) * ldy, mask, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, second, 0)));
    _mm256_mask_storeu_ps(y + (12 + j) * ldy, mask,
                          _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, second, 1)));
  }
}

// 64 output channels x kPixels pixels of relu(W x + bias) in NCHW, w packed
// [input channel][64], x at the tile's first pixel of channel 0.
template <int kPixels>
__attribute__((target("avx512f,avx512vl,fma"))) void ChannelVectorTile(
    const float* w, const float* x, int64_t channels, int64_t pixels, const float* bias,
    float* y) {
  __m512 acc[4][kPixels];
  _Pragma("GCC unroll 8") for (int v = 0; v < 4; ++v) {
    _Pragma("GCC unroll 8") for (int p = 0; p < kPixels; ++p) acc[v][p] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < channels; ++c, w += 64, x += pixels) {
    const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16),
                 w2 = _mm512_loadu_ps(w + 32), w3 = _mm512_loadu_ps(w + 48);
    _Pragma("GCC unroll 8") for (int p = 0; p < kPixels; ++p) {
      const __m512 xv = _mm512_set1_ps(x[p]);
      acc[0][p] = _mm512_fmadd_ps(w0, xv, acc[0][p]);
      acc[1][p] = _mm512_fmadd_ps(w1, xv, acc[1][p]);
      acc[2][p] = _mm512_fmadd_ps(w2, xv, acc[2][p]);
      acc[3][p] = _mm512_fmadd_ps(w3, xv, acc[3][p]);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int v = 0; v < 4; ++v) {
    const __m512 b = _mm512_loadu_ps(bias + 16 * v);
    __m512 finished[8];
    for (int p = 0; p < 8; ++p) {
      finished[p] = p < kPixels ? _mm512_maskz_max_ps(0xffff, _mm512_add_ps(acc[v][p], b), zero)
                                : zero;
    }
    StoreTransposed(finished, kPixels, y + 16 * v * pixels, pixels);
  }
}

using ChannelVectorTileFn = void (*)(const float*, const float*, int64_t, int64_t, const float*,
                                     float*);
// [pixels - 1]
const ChannelVectorTileFn kChannelVectorTiles[7] = {
    &ChannelVectorTile<1>, &ChannelVectorTile<2>, &ChannelVectorTile<3>, &ChannelVectorTile<4>,
    &ChannelVectorTile<5>, &ChannelVectorTile<6>, &ChannelVectorTile<7>};

// w: [output group of 64][input channel][64], as for Conv1x1Blocked.
void Conv1x1ChannelVectors(const float* w, const float* x, const float* bias, int64_t channels,
                           int64_t filters, int64_t pixels, float* y) {
  for (int64_t group = 0; group < filters / 64; ++group) {
    for (int64_t p = 0; p < pixels; p += 7) {
      const int64_t count = std::min<int64_t>(7, pixels - p);
      kChannelVectorTiles[count - 1](w + group * channels * 64, x + p, channels, pixels,
                                     bias + group * 64, y + group * 64 * pixels + p);
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
  std::vector<float> w_blocked(w.size()), x_blocked(x.size()), y_blocked(y.size()),
      y_vectors(y.size());
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
  double gemm = 0, blocked = 0, vectors = 0;
  for (int round = 0; round < 3; ++round) {
    gemm += MedianMicroseconds(
        [&] { GemmPacked(packed, x.data(), pixels, pixels, y.data(), pixels, epilogue, nullptr); });
    blocked += MedianMicroseconds([&] {
      Conv1x1Blocked(w_blocked.data(), x_blocked.data(), bias.data(), channels, filters, pixels,
                     y_blocked.data(), block);
    });
    vectors += MedianMicroseconds([&] {
      Conv1x1ChannelVectors(w_blocked.data(), x.data(), bias.data(), channels, filters, pixels,
                            y_vectors.data());
    });
  }
  double largest_difference = 0;
  for (int64_t o = 0; o < filters; ++o) {
    for (int64_t p = 0; p < pixels; ++p) {
      const float blocked_value = y_blocked[((o / 16) * pixels + p) * 16 + o % 16];
      const double d = std::max(std::fabs(y[o * pixels + p] - blocked_value),
                                std::fabs(y[o * pixels + p] - y_vectors[o * pixels + p]));
      largest_difference = std::max(largest_difference, d);
    }
  }
  const double flops = 2.0 * filters * channels * pixels;
  std::printf("%ld x %ld x %ld, block %ld: NCHW GEMM %.1f us (%.0f GFLOP/s), NCHW16c %.1f us "
              "(%.0f GFLOP/s), NCHW channel vectors %.1f us (%.0f GFLOP/s), largest difference "
              "%.2g\n",
              static_cast<long>(filters), static_cast<long>(channels), static_cast<long>(pixels),
              static_cast<long>(block), gemm / 3, flops / (gemm / 3) / 1e3, blocked / 3,
              flops / (blocked / 3) / 1e3, vectors / 3, flops / (vectors / 3) / 1e3,
              largest_difference);
  return 0;
}

}  // namespace nchwc_probe

int main(int argc, char** argv) { return nchwc_probe::Main(argc, argv); }
