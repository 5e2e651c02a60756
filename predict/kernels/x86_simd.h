/*
 * What every x86-64 SIMD kernel needs: the intrinsics, per-function target
 * attributes (the file is compiled without -m flags; a caller must run such
 * a function only where GetCpuFeatures() allows it), and small helpers that
 * several kernels share. Defines MXLITE_X86_64 on x86-64 only.
 */
#ifndef MXLITE_KERNELS_X86_SIMD_H_
#define MXLITE_KERNELS_X86_SIMD_H_

#if defined(__x86_64__) || defined(_M_X64)
#define MXLITE_X86_64 1

#include <immintrin.h>

#if defined(__GNUC__) || defined(__clang__)
#define MXLITE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define MXLITE_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
// GCC does not inline across a target attribute on its own judgement.
#define MXLITE_TARGET_AVX512_INLINE MXLITE_TARGET_AVX512 __attribute__((always_inline)) inline
#else
#define MXLITE_TARGET_AVX2
#define MXLITE_TARGET_AVX512
#define MXLITE_TARGET_AVX512_INLINE inline
#endif

namespace mxlite {

// min(upper, max(lower, x)) per lane; a NaN in x passes through, as with
// std::min(std::max(x, lower), upper) in the scalar code. The masked forms
// with a full mask, because GCC 12 warns about an undefined operand inside
// the plain _mm512_max_ps/_mm512_min_ps.
MXLITE_TARGET_AVX512 inline __m512 ClampAvx512(__m512 lower, __m512 upper, __m512 x) {
  const __mmask16 all = 0xffff;
  return _mm512_maskz_min_ps(all, upper, _mm512_maskz_max_ps(all, lower, x));
}

}  // namespace mxlite

#endif  // x86-64

#endif  // MXLITE_KERNELS_X86_SIMD_H_
