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

#include <algorithm>
#include <cstdint>

#include "cpu_features.h"

#if defined(__GNUC__) || defined(__clang__)
#define MXLITE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define MXLITE_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
// GCC does not inline across a target attribute on its own judgement.
#define MXLITE_TARGET_AVX2_INLINE MXLITE_TARGET_AVX2 __attribute__((always_inline)) inline
#define MXLITE_TARGET_AVX512_INLINE MXLITE_TARGET_AVX512 __attribute__((always_inline)) inline
#define MXLITE_ANY_ISA_INLINE __attribute__((always_inline)) inline
// One copy of a function however many callers it has (a shared epilogue).
#define MXLITE_NOINLINE __attribute__((noinline))
#else
#define MXLITE_TARGET_AVX2
#define MXLITE_TARGET_AVX512
#define MXLITE_TARGET_AVX2_INLINE inline
#define MXLITE_TARGET_AVX512_INLINE inline
#define MXLITE_ANY_ISA_INLINE inline
#define MXLITE_NOINLINE
#endif  // defined(__GNUC__) || defined(__clang__)

// Full unrolling of a loop over an array of vectors (the GEMM tile's rows)
// is what keeps the array in registers; -O2 alone does not unroll it.
#if defined(__clang__)
#define MXLITE_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define MXLITE_UNROLL _Pragma("GCC unroll 16")
#else
#define MXLITE_UNROLL
#endif  // defined(__clang__)

// Keeps a vector in a register from here on. GCC folds a load into every
// FMA that reads its result, so a vector read by several FMAs is loaded
// again for each; where the load crosses a cache line (costing about two)
// that made the depthwise stride-1 kernel twice as slow.
#if defined(__GNUC__) || defined(__clang__)
#define MXLITE_KEEP_IN_REGISTER(vector) __asm__("" : "+v"(vector))
#else
#define MXLITE_KEEP_IN_REGISTER(vector) (void)0
#endif  // defined(__GNUC__) || defined(__clang__)

namespace mxlite {

// min(upper, max(lower, x)) per lane; a NaN in x passes through, as with
// std::min(std::max(x, lower), upper) in the scalar code. The masked forms
// with a full mask, because GCC 12 warns about an undefined operand inside
// the plain _mm512_max_ps/_mm512_min_ps.
MXLITE_TARGET_AVX512 inline __m512 ClampAvx512(__m512 lower, __m512 upper, __m512 x) {
  const __mmask16 all = 0xffff;
  return _mm512_maskz_min_ps(all, upper, _mm512_maskz_max_ps(all, lower, x));
}

// row + offset, computed on the address: for a masked load whose window
// starts before the row or runs past the end of the array, where the
// masked-off lanes read nothing (pointer arithmetic outside the array would
// be undefined behaviour).
inline const float* OffsetAddress(const float* row, int64_t offset) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) +
                                        offset * static_cast<int64_t>(sizeof(float)));
}

// Prefetches the line `bytes` past `at`. The address is computed as an
// integer, because it may lie past the end of the buffer `at` points into
// (a prefetch never faults; there it just fetches nothing useful). Kernels
// that walk planes in order use it to fetch the same place a plane or a
// few lines further on without checking for the last plane.
// (No target attribute: prefetching is SSE, in every x86-64, so kernels of
// either ISA inline it.)
MXLITE_ANY_ISA_INLINE void PrefetchAhead(const float* at, int64_t bytes) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(at) + static_cast<uintptr_t>(bytes);
  _mm_prefetch(reinterpret_cast<const char*>(address), _MM_HINT_T0);
}

// Whether PrefetchAheadForWrite can fetch with ownership: read once, at
// load time (a flag, not a kernel choice: every ISA's kernels use it).
inline const bool kWritePrefetch = GetCpuFeatures().prefetchw;

// PrefetchAhead for a line the caller is about to write: with PREFETCHW,
// fetched with ownership. A read prefetch of a line that the other core
// wrote last brings it in shared, and the store then waits a second time,
// for the other core to give it up. Measured at two threads on the
// model-167 Xeon (BENCHMARKS.md): mobilenetv2_1.0's first depthwise layer
// 112 -> 78-81 us; whole passes about 1% faster. Where the processor lacks
// PREFETCHW this is PrefetchAhead.
MXLITE_ANY_ISA_INLINE void PrefetchAheadForWrite(const float* at, int64_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
  if (kWritePrefetch) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(at) + static_cast<uintptr_t>(bytes);
    // An asm statement: the intrinsic needs a target attribute ("prfchw")
    // that the AVX2 and AVX-512 kernels inlining this do not carry.
    __asm__ volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char*>(address)));
    return;
  }
#endif  // defined(__GNUC__) || defined(__clang__)
  PrefetchAhead(at, bytes);
}

// Prefetches, `bytes` further on, every line that the `width` floats from
// `row` touch, from the line holding the first: what a gather that walks
// plane after plane fetches of the next plane's row.
MXLITE_ANY_ISA_INLINE void PrefetchRowAhead(const float* row, int64_t width, int64_t bytes) {
  const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) % 64);
  for (int64_t b = -misalign; b < width * int64_t{sizeof(float)}; b += 64) {
    PrefetchAhead(row, bytes + b);
  }
}

// The three taps of a 3-wide, stride-2 window for sixteen outputs, from
// the 32 columns starting at the first window's first column (low, high)
// and the column after them in lane 0 of `next`: tap 0 is the even lanes,
// tap 1 the odd ones, tap 2 the even ones shifted down a lane with that
// column on top. Two loads, a broadcast and three shuffles, where loading
// each tap's two vectors takes six loads, three of them crossing a line.
MXLITE_TARGET_AVX512_INLINE void StrideTwoTapsAvx512(__m512 low, __m512 high, __m512 next,
                                                     __m512 taps[3]) {
  const __m512i even =
      _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd =
      _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  taps[0] = _mm512_permutex2var_ps(low, even, high);
  taps[1] = _mm512_permutex2var_ps(low, odd, high);
  taps[2] = _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(
      0xffff, _mm512_castps_si512(next), _mm512_castps_si512(taps[0]), 1));
}

// min(upper, max(lower, x)) per lane: a NaN in x passes through, as with
// std::min(std::max(x, lower), upper) in the scalar code.
MXLITE_TARGET_AVX2_INLINE __m256 ClampAvx2(__m256 lower, __m256 upper, __m256 x) {
  return _mm256_min_ps(upper, _mm256_max_ps(lower, x));
}

// Transposes the 8x8 matrix whose rows are rows[0..7] in place.
MXLITE_TARGET_AVX2_INLINE void Transpose8x8Avx2(__m256 rows[8]) {
  __m256 pairs[8], quads[8];
  MXLITE_UNROLL for (int i = 0; i < 8; i += 2) {
    pairs[i] = _mm256_unpacklo_ps(rows[i], rows[i + 1]);
    pairs[i + 1] = _mm256_unpackhi_ps(rows[i], rows[i + 1]);
  }
  // quads[4g + j], 128-bit lane c: rows 4g..4g+3, element 4c + j.
  MXLITE_UNROLL for (int g = 0; g < 8; g += 4) {
    quads[g] = _mm256_shuffle_ps(pairs[g], pairs[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    quads[g + 1] = _mm256_shuffle_ps(pairs[g], pairs[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    quads[g + 2] = _mm256_shuffle_ps(pairs[g + 1], pairs[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    quads[g + 3] = _mm256_shuffle_ps(pairs[g + 1], pairs[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  MXLITE_UNROLL for (int j = 0; j < 4; ++j) {
    rows[j] = _mm256_permute2f128_ps(quads[j], quads[4 + j], 0x20);
    rows[4 + j] = _mm256_permute2f128_ps(quads[j], quads[4 + j], 0x31);
  }
}

// Lanes [0, count) of an 8-float vector as a _mm256_maskload_ps /
// _mm256_maskstore_ps mask: none for count <= 0, all for count >= 8.
// (Pass masks between functions that are not inlined as counts: a function
// with a 256-bit argument returns without vzeroupper, and the SSE code after
// it then ran at half speed on Zen 3.)
MXLITE_TARGET_AVX2_INLINE __m256i LanesBelowAvx2(int64_t count) {
  const int lanes = static_cast<int>(std::min<int64_t>(8, std::max<int64_t>(0, count)));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Lanes whose column first + lane lies in [0, width).
MXLITE_TARGET_AVX2_INLINE __m256i LanesInsideAvx2(int64_t first, int64_t width) {
  return _mm256_andnot_si256(LanesBelowAvx2(-first), LanesBelowAvx2(width - first));
}

// Lanes [0, count) (count may be <= 0 or >= 16). Clamped, not branched:
// the depthwise kernels call it per vector, where branches cost ~8%.
MXLITE_TARGET_AVX512_INLINE __mmask16 LanesBelowAvx512(int64_t count) {
  const unsigned lanes = static_cast<unsigned>(std::min<int64_t>(16, std::max<int64_t>(0, count)));
  return static_cast<__mmask16>((1u << lanes) - 1u);
}

// Lanes l with 0 <= first + l < width: the lanes of a 16-float load at
// row + first that fall inside a row of `width` floats.
MXLITE_TARGET_AVX512_INLINE __mmask16 LanesInsideAvx512(int64_t first, int64_t width) {
  return static_cast<__mmask16>(LanesBelowAvx512(width - first) & ~LanesBelowAvx512(-first));
}

// Transposes the 16x16 matrix whose rows are rows[0..15] in place: after
// it, rows[j] holds element j of every original row. Four stages of
// in-register shuffles, no memory round trip (the masked forms with full
// masks because GCC 12 warns inside the plain ones).
MXLITE_TARGET_AVX512_INLINE void Transpose16x16Avx512(__m512 rows[16]) {
  __m512 pairs[16], quads[16], halves[16];
  // Rows 2i, 2i+1 interleaved within 128-bit chunks.
  MXLITE_UNROLL
  for (int i = 0; i < 16; i += 2) {
    pairs[i] = _mm512_maskz_unpacklo_ps(0xffff, rows[i], rows[i + 1]);
    pairs[i + 1] = _mm512_maskz_unpackhi_ps(0xffff, rows[i], rows[i + 1]);
  }
  // quads[4g + j], chunk c: rows 4g..4g+3, element 4c + j.
  MXLITE_UNROLL
  for (int g = 0; g < 16; g += 4) {
    const __m512d a = _mm512_castps_pd(pairs[g]), b = _mm512_castps_pd(pairs[g + 1]);
    const __m512d c = _mm512_castps_pd(pairs[g + 2]), d = _mm512_castps_pd(pairs[g + 3]);
    quads[g] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, a, c));
    quads[g + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, a, c));
    quads[g + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, b, d));
    quads[g + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, b, d));
  }
  // halves[j] (rows 0-7) and halves[8 + j] (rows 8-15): chunks hold
  // elements j, j + 8 of the two row groups; halves[4 + j], [12 + j] the
  // same for elements j + 4, j + 12.
  MXLITE_UNROLL
  for (int j = 0; j < 4; ++j) {
    halves[j] = _mm512_maskz_shuffle_f32x4(0xffff, quads[j], quads[4 + j], 0x88);
    halves[4 + j] = _mm512_maskz_shuffle_f32x4(0xffff, quads[j], quads[4 + j], 0xdd);
    halves[8 + j] = _mm512_maskz_shuffle_f32x4(0xffff, quads[8 + j], quads[12 + j], 0x88);
    halves[12 + j] = _mm512_maskz_shuffle_f32x4(0xffff, quads[8 + j], quads[12 + j], 0xdd);
  }
  MXLITE_UNROLL
  for (int j = 0; j < 4; ++j) {
    rows[j] = _mm512_maskz_shuffle_f32x4(0xffff, halves[j], halves[8 + j], 0x88);
    rows[8 + j] = _mm512_maskz_shuffle_f32x4(0xffff, halves[j], halves[8 + j], 0xdd);
    rows[4 + j] = _mm512_maskz_shuffle_f32x4(0xffff, halves[4 + j], halves[12 + j], 0x88);
    rows[12 + j] = _mm512_maskz_shuffle_f32x4(0xffff, halves[4 + j], halves[12 + j], 0xdd);
  }
}

}  // namespace mxlite

#endif  // x86-64

#endif  // MXLITE_KERNELS_X86_SIMD_H_
