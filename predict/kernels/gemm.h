/*
 * Single-precision matrix multiply, the engine under Convolution and
 * FullyConnected.
 *
 *   C[M,N] = op(A)[M,K] * op(B)[K,N] + beta * C        (row-major)
 *
 * Algorithm (Goto/BLIS style): B is packed one KC x NC panel at a time into
 * NR-wide column strips, A one MC x KC block at a time into MR-tall row
 * strips, so that the micro-kernel streams both from cache with unit
 * stride. The micro-kernel keeps an MR x NR tile of C in registers for the
 * whole KC loop. Edge tiles are computed into a scratch tile and copied out.
 * The micro-kernel is chosen at run time (see cpu_features.h); the blocking
 * around it is shared by every variant.
 */
#ifndef MXLITE_KERNELS_GEMM_H_
#define MXLITE_KERNELS_GEMM_H_

#include <cstdint>

namespace mxlite {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// y[n] = W[n,k] . x[k] (+ y if accumulate): the batch-1 FullyConnected case,
// bound by reading W once.
void SgemvRows(int64_t n, int64_t k, const float* w, const float* x, float* y);

// Name of the micro-kernel in use (for reports and tests).
const char* GemmKernelName();

}  // namespace mxlite

#endif  // MXLITE_KERNELS_GEMM_H_
