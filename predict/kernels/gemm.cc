#include "gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_features.h"

namespace mxlite {

namespace gemm_cc {

// Register tile of the generic micro-kernel and the cache blocking.
constexpr int kMr = 6;
constexpr int kNr = 8;
constexpr int64_t kKc = 256;  // A strip and B strip of this depth stay in L1
constexpr int64_t kMc = 120;  // MC x KC block of A stays in L2
constexpr int64_t kNc = 2048; // KC x NC panel of B stays in L3

// Packs rows [i0, i0+mc) x depth [p0, p0+kc) of op(A) into MR-tall strips,
// each strip laid out depth-major: strip[p * MR + r]. Rows past the edge are
// zero so that the micro-kernel never branches.
void PackA(bool trans_a, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
           int64_t kc, float* packed) {
  for (int64_t strip = 0; strip < mc; strip += kMr) {
    int64_t rows = std::min<int64_t>(kMr, mc - strip);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t r = 0; r < kMr; ++r) {
        float value = 0.f;
        if (r < rows) {
          int64_t i = i0 + strip + r, kk = p0 + p;
          value = trans_a ? a[kk * lda + i] : a[i * lda + kk];
        }
        *packed++ = value;
      }
    }
  }
}

// Packs depth [p0, p0+kc) x columns [j0, j0+nc) of op(B) into NR-wide strips,
// each laid out strip[p * NR + c], zero-padded past the edge.
void PackB(bool trans_b, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
           int64_t nc, float* packed) {
  for (int64_t strip = 0; strip < nc; strip += kNr) {
    int64_t cols = std::min<int64_t>(kNr, nc - strip);
    for (int64_t p = 0; p < kc; ++p) {
      int64_t kk = p0 + p;
      if (!trans_b && cols == kNr) {
        std::memcpy(packed, b + kk * ldb + j0 + strip, sizeof(float) * kNr);
        packed += kNr;
        continue;
      }
      for (int64_t c = 0; c < kNr; ++c) {
        float value = 0.f;
        if (c < cols) {
          int64_t j = j0 + strip + c;
          value = trans_b ? b[j * ldb + kk] : b[kk * ldb + j];
        }
        *packed++ = value;
      }
    }
  }
}

// C tile (MR x NR, row stride ldc) = [C tile * beta_is_one] + Apack * Bpack.
// Written with GCC/Clang vector extensions where available, so the same
// source becomes SSE, NEON or WebAssembly SIMD code.
#if defined(__GNUC__) || defined(__clang__)
typedef float Vec4 __attribute__((vector_size(16)));

void MicroKernelGeneric(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                        bool accumulate) {
  Vec4 acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = Vec4{0, 0, 0, 0};
  for (int64_t p = 0; p < kc; ++p) {
    Vec4 b0, b1;
    std::memcpy(&b0, b + p * kNr, sizeof(Vec4));
    std::memcpy(&b1, b + p * kNr + 4, sizeof(Vec4));
    for (int r = 0; r < kMr; ++r) {
      float av = a[p * kMr + r];
      Vec4 va = {av, av, av, av};
      acc[r][0] += va * b0;
      acc[r][1] += va * b1;
    }
  }
  for (int r = 0; r < kMr; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      Vec4 c0, c1;
      std::memcpy(&c0, row, sizeof(Vec4));
      std::memcpy(&c1, row + 4, sizeof(Vec4));
      acc[r][0] += c0;
      acc[r][1] += c1;
    }
    std::memcpy(row, &acc[r][0], sizeof(Vec4));
    std::memcpy(row + 4, &acc[r][1], sizeof(Vec4));
  }
}
#else   // no vector extensions
void MicroKernelGeneric(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                        bool accumulate) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int r = 0; r < kMr; ++r) {
      for (int col = 0; col < kNr; ++col) acc[r][col] += a[p * kMr + r] * b[p * kNr + col];
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int col = 0; col < kNr; ++col) {
      c[r * ldc + col] = (accumulate ? c[r * ldc + col] : 0.f) + acc[r][col];
    }
  }
}
#endif  // vector extensions

using MicroKernel = void (*)(int64_t, const float*, const float*, float*, int64_t, bool);

MicroKernel SelectMicroKernel() { return &MicroKernelGeneric; }

// Scales C by beta before accumulation (beta 0 must clear NaNs too).
void ScaleC(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  if (beta == 1.f) return;
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.f) {
      std::fill(row, row + n, 0.f);
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

}  // namespace gemm_cc

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  using namespace gemm_cc;
  if (m <= 0 || n <= 0) return;
  ScaleC(m, n, beta, c, ldc);
  if (k <= 0) return;
  static const MicroKernel kernel = SelectMicroKernel();
  // Scratch reused across calls on this thread: packing buffers are the only
  // allocation, and they grow to the largest blocks once.
  thread_local std::vector<float> packed_a, packed_b;
  const int64_t kc_max = std::min(k, kKc);
  const int64_t nc_max = std::min(n, kNc);
  const int64_t mc_max = std::min(m, kMc);
  packed_b.resize(static_cast<size_t>(kc_max * ((nc_max + kNr - 1) / kNr * kNr)));
  packed_a.resize(static_cast<size_t>(kc_max * ((mc_max + kMr - 1) / kMr * kMr)));
  float edge_tile[kMr * kNr];

  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    int64_t nc = std::min(kNc, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      int64_t kc = std::min(kKc, k - p0);
      PackB(trans_b, b, ldb, p0, kc, j0, nc, packed_b.data());
      for (int64_t i0 = 0; i0 < m; i0 += kMc) {
        int64_t mc = std::min(kMc, m - i0);
        PackA(trans_a, a, lda, i0, mc, p0, kc, packed_a.data());
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          int64_t cols = std::min<int64_t>(kNr, nc - jr);
          const float* b_strip = packed_b.data() + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            int64_t rows = std::min<int64_t>(kMr, mc - ir);
            const float* a_strip = packed_a.data() + ir * kc;
            float* c_tile = c + (i0 + ir) * ldc + j0 + jr;
            if (rows == kMr && cols == kNr) {
              kernel(kc, a_strip, b_strip, c_tile, ldc, true);
              continue;
            }
            // Edge: compute the full tile aside, add the valid part.
            kernel(kc, a_strip, b_strip, edge_tile, kNr, false);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t col = 0; col < cols; ++col) {
                c_tile[r * ldc + col] += edge_tile[r * kNr + col];
              }
            }
          }
        }
      }
    }
  }
}

void SgemvRows(int64_t n, int64_t k, const float* w, const float* x, float* y) {
  for (int64_t row = 0; row < n; ++row) {
    const float* wr = w + row * k;
    // Eight partial sums break the dependency chain so the loop vectorises.
    float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
      for (int lane = 0; lane < 8; ++lane) partial[lane] += wr[i + lane] * x[i + lane];
    }
    float sum = 0.f;
    for (; i < k; ++i) sum += wr[i] * x[i];
    for (int lane = 0; lane < 8; ++lane) sum += partial[lane];
    y[row] = sum;
  }
}

const char* GemmKernelName() { return "generic-6x8"; }

}  // namespace mxlite
