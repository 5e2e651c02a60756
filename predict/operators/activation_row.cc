/*
 * The activation row kernels (see activation_row.h): the scalar reference
 * and the table that picks the family's implementation once, from the
 * instruction set (SelectedIsa). The vector kernels live one file per
 * instruction set (activation_row_avx512.cc, activation_row_avx2.cc).
 */
#include "activation_row.h"

#include <cstdint>

#include "../kernels/cpu_features.h"
#include "../kernels/x86_simd.h"

namespace mxlite {
namespace activation_row_cc {

// The portable path: MXNet's expressions, element by element.
void RowScalar(RowActivation kind, const float* src, float* dst, int64_t count, float slope) {
  if (kind == RowActivation::kRelu) {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i] <= 0.f ? 0.f : src[i];
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i] > 0.f ? src[i] : slope * src[i];
  }
}

using RowFn = void (*)(RowActivation kind, const float* src, float* dst, int64_t count,
                       float slope);

// One implementation of the family.
struct ActivationRowImplementation {
  Isa isa;
  RowFn row;
};

// In order of preference: the first whose instruction set is selected.
const ActivationRowImplementation kActivationRowImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, ActivationRowAvx512},
    {Isa::kAvx2, ActivationRowAvx2},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, RowScalar},
};

const ActivationRowImplementation& Chosen() {
  static const ActivationRowImplementation& chosen =
      ChooseImplementation(kActivationRowImplementations);
  return chosen;
}

}  // namespace activation_row_cc

void ActivationRow(RowActivation kind, const float* src, float* dst, int64_t count, float slope) {
  activation_row_cc::Chosen().row(kind, src, dst, count, slope);
}

}  // namespace mxlite
