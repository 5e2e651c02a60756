/*
 * The piecewise-linear activations on one run of values, shared by
 * Activation (relu), the unary relu, and LeakyReLU (leaky, rrelu, and prelu
 * one channel plane at a time):
 *
 *   relu:   dst[i] = src[i] <= 0 ? +0 : src[i]   (NaN passes, -0 gives +0)
 *   leaky:  dst[i] = src[i] > 0 ? src[i] : slope * src[i]
 *
 * MXNet's definitions (mshadow_op.h: relu keeps NaN; leaky_relu-inl.h),
 * with the same bits on every ISA path. Written as C++ ternaries the
 * compilers branch on the sign, which with mixed signs mispredicts about
 * every other element (BENCHMARKS.md); the vector paths select without
 * branches.
 */
#ifndef MXLITE_OPERATORS_ACTIVATION_ROW_H_
#define MXLITE_OPERATORS_ACTIVATION_ROW_H_

#include <cstdint>

namespace mxlite {

enum class RowActivation { kRelu, kLeaky };

// `slope` is the leaky form's (unused by relu). src may equal dst.
void ActivationRow(RowActivation kind, const float* src, float* dst, int64_t count, float slope);

// The implementations per instruction set (activation_row_avx512.cc,
// activation_row_avx2.cc), for the family's table in activation_row.cc only.
void ActivationRowAvx512(RowActivation kind, const float* src, float* dst, int64_t count,
                         float slope);
void ActivationRowAvx2(RowActivation kind, const float* src, float* dst, int64_t count,
                       float slope);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_ACTIVATION_ROW_H_
