/*
 * GEMM micro-kernels: the innermost loop of every matrix multiply.
 *
 * A micro-kernel multiplies an MR x KC strip of packed A (depth-major:
 * a[p * MR + r]) by a KC x NR strip of packed B (b[p * NR + c]) and writes
 * or adds the MR x NR result to C (row stride ldc). It keeps that tile of C
 * in registers for the whole depth, so its speed is the speed of the FMA
 * units. One variant per instruction set, a line of the GEMM family's
 * table (kGemmImplementations in gemm.cc); GemmKernels() picks the widest
 * the processor has, once (see cpu_features.h). Variants for x86 are
 * compiled with per-function target attributes, so one build runs on any
 * x86-64.
 */
#ifndef MXLITE_KERNELS_GEMM_MICROKERNELS_H_
#define MXLITE_KERNELS_GEMM_MICROKERNELS_H_

#include <cstdint>

#include "cpu_features.h"

namespace mxlite {

using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                               bool accumulate);

// The output stage of a GEMM (see GemmEpilogue in gemm.h) for one full
// MR x NR tile, applied in registers before the tile is stored, so a
// convolution's bias, residual add and activation cost no extra pass.
struct TileEpilogue {
  const float* bias;        // MR per-row values, or null
  const float* residual;    // the tile's origin in the residual matrix, or null
  int64_t residual_stride;  // row stride of the residual
  bool clamp;               // clamp to [lower, upper] (NaN passes through)
  float lower, upper;
};

using MicroKernelEpilogueFn = void (*)(int64_t kc, const float* a, const float* b, float* c,
                                       int64_t ldc, bool accumulate, const TileEpilogue& ep);

// Any tile: rows x cols (1..MR, 1..NR) of C are read and written, and B's
// rows are ldb floats apart (NR for a packed strip, or the row stride of an
// unpacked B read in place); the A strip keeps its full MR layout. ep is
// applied before the store unless null.
using MicroKernelTileFn = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb,
                                   float* c, int64_t ldc, bool accumulate, int rows, int cols,
                                   const TileEpilogue* ep);

// The last `cols` columns of a panel for `strips` full strips of packed A
// (a_stride floats apart), their rows consecutive in C; ep (if not null) is
// the first strip's epilogue.
using MicroKernelTailFn = void (*)(int64_t kc, const float* a, int64_t a_stride, const float* b,
                                   int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                   int64_t strips, int cols, const TileEpilogue* ep);

// Floats readable past the end of a packed A matrix (zeros), so a kernel
// may load one whole vector at any step of a strip.
constexpr int kPackedSlack = 16;

struct MicroKernel {
  const char* name;
  int mr;  // rows of the register tile
  int nr;  // columns of the register tile
  // A whole tile; null only where run_tile is set (the driver then calls
  // run_tile for every tile).
  MicroKernelFn run;
  // run + the epilogue in registers; null where the kernel has no such
  // variant (the driver then applies the epilogue after the store).
  MicroKernelEpilogueFn run_epilogue;
  // Every tile, full or partial, packed or unpacked B (masked loads and
  // stores). Null where the kernel has no such variant: the driver then
  // packs B, computes partial tiles into scratch and copies them out.
  MicroKernelTileFn run_tile;
  // Wider tiles run_tile takes when B is read in place: a row's last
  // wide_min_cols...wide_max_cols columns go to one call (0, 0: none).
  int wide_min_cols;
  int wide_max_cols;
  // Whether run_tile reads a plain B in place, at its row stride, rather
  // than from packed strips (see GemmRange).
  bool reads_b_in_place;
  // A panel's last tile for `strips` full row strips at once, where it has
  // at most tail_max_cols columns (null, 0: none; the driver then runs those
  // tiles one by one).
  MicroKernelTailFn run_tail;
  int tail_max_cols;
};

struct GemmEpilogue;

// y[rows] = W[rows,k] . x[k] (W row-major): the batch-1 FullyConnected loop.
using GemvRowsFn = void (*)(int64_t rows, int64_t k, const float* w, const float* x, float* y);

// C[r0, r1) = epilogue(addend + C), addend n columns per row, ld_add apart:
// what the micro-kernels do to a tile whose depth ends in a second block.
using AddRowsAndFinishFn = void (*)(const GemmEpilogue& ep, const float* addend, int64_t ld_add,
                                    int64_t r0, int64_t r1, int64_t n, float* c, int64_t ldc);

// One implementation of the GEMM family: a line of its table.
struct GemmImplementation {
  Isa isa;
  const MicroKernel* kernel;
  GemvRowsFn gemv_rows;                    // null: the portable loop
  AddRowsAndFinishFn add_rows_and_finish;  // null: the portable loop
};

// The family's implementation for this machine, chosen once from
// SelectedIsa(): operators and other families ask it, never the ISA.
const GemmImplementation& GemmKernels();

namespace gemm_generic {
extern const MicroKernel kKernel;
}
#if defined(__aarch64__) || defined(__ARM_NEON)
namespace gemm_neon {
extern const MicroKernel kKernel;
}
#endif  // ARM NEON
#if defined(__x86_64__) || defined(_M_X64)
namespace gemm_avx2 {
extern const MicroKernel kKernel;
void GemvRows(int64_t rows, int64_t k, const float* w, const float* x, float* y);
}
namespace gemm_avx512 {
extern const MicroKernel kKernel;
extern const MicroKernel kWideKernel;  // kKernel with wide tiles
void GemvRows(int64_t rows, int64_t k, const float* w, const float* x, float* y);
}
#endif  // x86-64

}  // namespace mxlite

#endif  // MXLITE_KERNELS_GEMM_MICROKERNELS_H_
