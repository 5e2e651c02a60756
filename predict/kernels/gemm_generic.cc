/*
 * The portable 6x8 micro-kernel. Written with GCC/Clang vector extensions
 * where available, so the same source becomes SSE, NEON or WebAssembly
 * SIMD128 code; plain loops otherwise.
 */
#include <cstring>

#include "gemm_microkernels.h"

namespace mxlite {
namespace gemm_generic {

#if defined(__clang__)
#define MXLITE_GENERIC_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define MXLITE_GENERIC_UNROLL _Pragma("GCC unroll 8")
#else
#define MXLITE_GENERIC_UNROLL
#endif  // defined(__clang__)

constexpr int kMr = 6;
constexpr int kNr = 8;

#if defined(__GNUC__) || defined(__clang__)
typedef float Vec4 __attribute__((vector_size(16)));

void Run(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  Vec4 acc[kMr][2];
  MXLITE_GENERIC_UNROLL for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = Vec4{0, 0, 0, 0};
  for (int64_t p = 0; p < kc; ++p) {
    Vec4 b0, b1;
    std::memcpy(&b0, b + p * kNr, sizeof(Vec4));
    std::memcpy(&b1, b + p * kNr + 4, sizeof(Vec4));
    MXLITE_GENERIC_UNROLL for (int r = 0; r < kMr; ++r) {
      const float av = a[p * kMr + r];
      const Vec4 va = {av, av, av, av};
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
void Run(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
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

const MicroKernel kKernel = {"generic-6x8", kMr, kNr, &Run, nullptr, nullptr,
                             0, 0, false, nullptr, 0};

}  // namespace gemm_generic
}  // namespace mxlite
