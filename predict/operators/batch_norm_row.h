/*
 * The BatchNorm expression on one run of a channel's values, shared by the
 * BatchNorm operator and by the 1x1 convolutions that normalise their input
 * as they read it (a pre-activation BatchNorm the graph optimiser folded
 * into the convolution after it):
 *
 *   dst[i] = clamp(((src[i] - mean) * invstd) * gamma + beta, lower, upper)
 *
 * (without the gamma factor when has_gamma is false, the clamp only when
 * clamps is true), MXNet's operations in MXNet's order on every ISA path, so
 * the two users produce the same bits.
 */
#ifndef MXLITE_OPERATORS_BATCH_NORM_ROW_H_
#define MXLITE_OPERATORS_BATCH_NORM_ROW_H_

#include <cmath>
#include <cstdint>

namespace mxlite {

void BatchNormRow(const float* src, float* dst, int64_t count, float mean, float invstd,
                  bool has_gamma, float gamma, float beta, bool clamps, float lower,
                  float upper);

// The implementations per instruction set (batch_norm_row_avx512.cc,
// batch_norm_row_avx2.cc), for the family's table in batch_norm_row.cc only.
void BatchNormRowAvx512(const float* src, float* dst, int64_t count, float mean, float invstd,
                        bool has_gamma, float gamma, float beta, bool clamps, float lower,
                        float upper);
void BatchNormRowAvx2(const float* src, float* dst, int64_t count, float mean, float invstd,
                      bool has_gamma, float gamma, float beta, bool clamps, float lower,
                      float upper);

// MXNet's inverse standard deviation: the float square root of the float
// sum var + eps, inverted in double, stored as float.
inline float BatchNormInvStd(float var, double eps) {
  const float root = std::sqrt(var + static_cast<float>(eps));
  return static_cast<float>(1.0 / root);
}

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_BATCH_NORM_ROW_H_
