/*
 * The int16 pair GEMM (see int16_pair_gemm.h): the scalar reference and the
 * table that picks the implementation once. The AVX2 kernel serves the
 * AVX-512 level too: a 512-bit pmaddwd needs AVX-512BW, which the kAvx512
 * level (AVX-512F) does not promise.
 */
#include "int16_pair_gemm.h"

#include "cpu_features.h"
#include "x86_simd.h"

namespace mxlite {
namespace int16_pair_gemm_cc {

// Unsigned sums: they wrap as the hardware's int32 additions do, without
// signed overflow.
void GemmScalar(const int32_t* w, const int32_t* x, int64_t filters, int64_t pairs,
                int64_t columns, int32_t* acc) {
  for (int64_t f = 0; f < filters; ++f) {
    uint32_t* row = reinterpret_cast<uint32_t*>(acc + f * columns);
    for (int64_t p = 0; p < columns; ++p) row[p] = 0;
    for (int64_t kp = 0; kp < pairs; ++kp) {
      const int32_t pair = w[f * pairs + kp];
      const int32_t wl = Int16PairLow(pair), wh = Int16PairHigh(pair);
      if (wl == 0 && wh == 0) continue;
      const int32_t* xr = x + kp * columns;
      for (int64_t p = 0; p < columns; ++p) {
        row[p] += static_cast<uint32_t>(wl * Int16PairLow(xr[p]) + wh * Int16PairHigh(xr[p]));
      }
    }
  }
}

using GemmFn = void (*)(const int32_t* w, const int32_t* x, int64_t filters, int64_t pairs,
                        int64_t columns, int32_t* acc);

struct Int16PairGemmImplementation {
  Isa isa;
  GemmFn gemm;
};

const Int16PairGemmImplementation kInt16PairGemmImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, Int16PairGemmAvx2},
    {Isa::kAvx2, Int16PairGemmAvx2},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, GemmScalar},
};

}  // namespace int16_pair_gemm_cc

void Int16PairGemm(const int32_t* w, const int32_t* x, int64_t filters, int64_t pairs,
                   int64_t columns, int32_t* acc) {
  static const int16_pair_gemm_cc::Int16PairGemmImplementation& chosen =
      ChooseImplementation(int16_pair_gemm_cc::kInt16PairGemmImplementations);
  chosen.gemm(w, x, filters, pairs, columns, acc);
}

}  // namespace mxlite
