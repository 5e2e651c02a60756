/*
 * The BatchNorm row kernels (see batch_norm_row.h): the scalar reference
 * and the table that picks the family's implementation once, from the
 * instruction set (SelectedIsa). The vector kernels live one file per
 * instruction set (batch_norm_row_avx512.cc, batch_norm_row_avx2.cc); a new
 * one is a file and a line of kBatchNormRowImplementations.
 */
#include "batch_norm_row.h"

#include <algorithm>
#include <cstdint>

#include "../kernels/cpu_features.h"
#include "../kernels/x86_simd.h"

namespace mxlite {
namespace batch_norm_row_cc {

// The portable path: the same expression, element by element.
void RowScalar(const float* src, float* dst, int64_t count, float mean, float invstd,
               bool has_gamma, float gamma, float beta, bool clamps, float lower, float upper) {
  if (has_gamma) {
    for (int64_t i = 0; i < count; ++i) dst[i] = ((src[i] - mean) * invstd) * gamma + beta;
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = ((src[i] - mean) * invstd) + beta;
  }
  // A following relu/clip folded in by the graph optimizer.
  if (clamps) {
    for (int64_t i = 0; i < count; ++i) dst[i] = std::min(std::max(dst[i], lower), upper);
  }
}

using RowFn = void (*)(const float* src, float* dst, int64_t count, float mean, float invstd,
                       bool has_gamma, float gamma, float beta, bool clamps, float lower,
                       float upper);

// One implementation of the family.
struct BatchNormRowImplementation {
  Isa isa;
  RowFn row;
};

// In order of preference: the first whose instruction set is selected.
const BatchNormRowImplementation kBatchNormRowImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, BatchNormRowAvx512},
    {Isa::kAvx2, BatchNormRowAvx2},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, RowScalar},
};

const BatchNormRowImplementation& Chosen() {
  static const BatchNormRowImplementation& chosen =
      ChooseImplementation(kBatchNormRowImplementations);
  return chosen;
}

}  // namespace batch_norm_row_cc

void BatchNormRow(const float* src, float* dst, int64_t count, float mean, float invstd,
                  bool has_gamma, float gamma, float beta, bool clamps, float lower,
                  float upper) {
  batch_norm_row_cc::Chosen().row(src, dst, count, mean, invstd, has_gamma, gamma, beta, clamps,
                                  lower, upper);
}

}  // namespace mxlite
