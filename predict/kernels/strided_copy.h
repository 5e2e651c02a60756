/*
 * Gathering every stride-th float of a row: the inner copy of im2col for
 * strided convolutions (a ResNet or MobileNet stem reads every second input
 * column). With AVX-512, stride 2 takes two loads and one permute per
 * sixteen floats instead of sixteen scalar moves.
 */
#ifndef MXLITE_KERNELS_STRIDED_COPY_H_
#define MXLITE_KERNELS_STRIDED_COPY_H_

#include <cstdint>

namespace mxlite {

// dst[i] = src[i * stride] for i in [0, count); reads no element past
// src[(count - 1) * stride].
void CopyStrided(const float* src, int64_t stride, int64_t count, float* dst);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_STRIDED_COPY_H_
