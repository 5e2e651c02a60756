/*
 * ARM NEON micro-kernel, chosen at compile time on ARM (aarch64, and armv7
 * built with NEON, e.g. Android's armeabi-v7a).
 *
 * aarch64 has 32 quad registers: an 8x12 tile keeps 24 accumulators, three
 * B vectors and two A vectors in registers, and multiplies by lane (FMLA by
 * element), so each depth step costs 3 + 2 loads for 24 FMAs. armv7 has 16
 * quad registers: a 4x8 tile (8 accumulators) fits with room to spare, and
 * without VFPv4 the multiply-add is the unfused VMLA.
 */
#if defined(__aarch64__) || defined(__ARM_NEON)

#include <arm_neon.h>

#include "gemm_microkernels.h"

namespace mxlite {
namespace gemm_neon {

#if defined(__aarch64__)
constexpr int kMr = 8;
constexpr int kNr = 12;

void Run(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  float32x4_t acc[kMr][3];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = acc[r][2] = vdupq_n_f32(0.f);
  for (int64_t p = 0; p < kc; ++p) {
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
    b += kNr;
    a += kMr;
    acc[0][0] = vfmaq_laneq_f32(acc[0][0], b0, a0, 0);
    acc[0][1] = vfmaq_laneq_f32(acc[0][1], b1, a0, 0);
    acc[0][2] = vfmaq_laneq_f32(acc[0][2], b2, a0, 0);
    acc[1][0] = vfmaq_laneq_f32(acc[1][0], b0, a0, 1);
    acc[1][1] = vfmaq_laneq_f32(acc[1][1], b1, a0, 1);
    acc[1][2] = vfmaq_laneq_f32(acc[1][2], b2, a0, 1);
    acc[2][0] = vfmaq_laneq_f32(acc[2][0], b0, a0, 2);
    acc[2][1] = vfmaq_laneq_f32(acc[2][1], b1, a0, 2);
    acc[2][2] = vfmaq_laneq_f32(acc[2][2], b2, a0, 2);
    acc[3][0] = vfmaq_laneq_f32(acc[3][0], b0, a0, 3);
    acc[3][1] = vfmaq_laneq_f32(acc[3][1], b1, a0, 3);
    acc[3][2] = vfmaq_laneq_f32(acc[3][2], b2, a0, 3);
    acc[4][0] = vfmaq_laneq_f32(acc[4][0], b0, a1, 0);
    acc[4][1] = vfmaq_laneq_f32(acc[4][1], b1, a1, 0);
    acc[4][2] = vfmaq_laneq_f32(acc[4][2], b2, a1, 0);
    acc[5][0] = vfmaq_laneq_f32(acc[5][0], b0, a1, 1);
    acc[5][1] = vfmaq_laneq_f32(acc[5][1], b1, a1, 1);
    acc[5][2] = vfmaq_laneq_f32(acc[5][2], b2, a1, 1);
    acc[6][0] = vfmaq_laneq_f32(acc[6][0], b0, a1, 2);
    acc[6][1] = vfmaq_laneq_f32(acc[6][1], b1, a1, 2);
    acc[6][2] = vfmaq_laneq_f32(acc[6][2], b2, a1, 2);
    acc[7][0] = vfmaq_laneq_f32(acc[7][0], b0, a1, 3);
    acc[7][1] = vfmaq_laneq_f32(acc[7][1], b1, a1, 3);
    acc[7][2] = vfmaq_laneq_f32(acc[7][2], b2, a1, 3);
  }
  for (int r = 0; r < kMr; ++r) {
    float* row = c + r * ldc;
    for (int v = 0; v < 3; ++v) {
      float32x4_t value = acc[r][v];
      if (accumulate) value = vaddq_f32(value, vld1q_f32(row + 4 * v));
      vst1q_f32(row + 4 * v, value);
    }
  }
}

const MicroKernel kKernel = {"neon-8x12", kMr, kNr, &Run, nullptr, nullptr,
                             0, 0, false, nullptr, 0};

#else  // armv7 NEON
constexpr int kMr = 4;
constexpr int kNr = 8;

void Run(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  float32x4_t acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.f);
  for (int64_t p = 0; p < kc; ++p) {
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4);
    const float32x4_t av = vld1q_f32(a);
    b += kNr;
    a += kMr;
    const float32x2_t low = vget_low_f32(av), high = vget_high_f32(av);
    acc[0][0] = vmlaq_lane_f32(acc[0][0], b0, low, 0);
    acc[0][1] = vmlaq_lane_f32(acc[0][1], b1, low, 0);
    acc[1][0] = vmlaq_lane_f32(acc[1][0], b0, low, 1);
    acc[1][1] = vmlaq_lane_f32(acc[1][1], b1, low, 1);
    acc[2][0] = vmlaq_lane_f32(acc[2][0], b0, high, 0);
    acc[2][1] = vmlaq_lane_f32(acc[2][1], b1, high, 0);
    acc[3][0] = vmlaq_lane_f32(acc[3][0], b0, high, 1);
    acc[3][1] = vmlaq_lane_f32(acc[3][1], b1, high, 1);
  }
  for (int r = 0; r < kMr; ++r) {
    float* row = c + r * ldc;
    for (int v = 0; v < 2; ++v) {
      float32x4_t value = acc[r][v];
      if (accumulate) value = vaddq_f32(value, vld1q_f32(row + 4 * v));
      vst1q_f32(row + 4 * v, value);
    }
  }
}

const MicroKernel kKernel = {"neon-4x8", kMr, kNr, &Run, nullptr, nullptr,
                             0, 0, false, nullptr, 0};
#endif  // aarch64 / armv7

}  // namespace gemm_neon
}  // namespace mxlite

#endif  // ARM NEON
