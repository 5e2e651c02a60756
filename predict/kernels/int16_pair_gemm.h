/*
 * The integer product of MXNet's int8 convolution (_sg_mkldnn_conv): int32
 * sums of int16 products, wrapping past the int32 range as oneDNN's int32
 * accumulators do. Both operands hold their values in pairs, two int16 in one
 * 32-bit word (PackInt16Pair: element 2i in the low half, 2i + 1 in the
 * high), which is what x86's pmaddwd multiplies and adds in one step:
 *
 *   acc[f][p] = sum over kp of  lo(w[f][kp]) * lo(x[kp][p])
 *                             + hi(w[f][kp]) * hi(x[kp][p])       (mod 2^32)
 *
 * w is [filters][pairs], x is [pairs][columns] with columns a multiple of
 * kInt16PairColumnStep, acc is [filters][columns]. A pair's two products
 * and their sum never leave the int32 range for int8/uint8 codes times int8
 * weights, so every order of the additions gives the same bits: the scalar
 * reference and the vector kernels agree exactly.
 */
#ifndef MXLITE_KERNELS_INT16_PAIR_GEMM_H_
#define MXLITE_KERNELS_INT16_PAIR_GEMM_H_

#include <cstdint>

namespace mxlite {

// The column count of x and acc must be a multiple of this.
constexpr int64_t kInt16PairColumnStep = 16;

inline int32_t PackInt16Pair(int16_t low, int16_t high) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(low)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(high)) << 16));
}

// The two values of a pair, as PackInt16Pair took them.
inline int32_t Int16PairLow(int32_t pair) { return static_cast<int16_t>(pair & 0xffff); }
inline int32_t Int16PairHigh(int32_t pair) {
  return static_cast<int16_t>(static_cast<uint32_t>(pair) >> 16);
}

// acc rows [0, filters) of the product above, picked once per process from
// the instruction set (SelectedIsa).
void Int16PairGemm(const int32_t* w, const int32_t* x, int64_t filters, int64_t pairs,
                   int64_t columns, int32_t* acc);

// The implementations (int16_pair_gemm_avx2.cc), for the table in
// int16_pair_gemm.cc only.
void Int16PairGemmAvx2(const int32_t* w, const int32_t* x, int64_t filters, int64_t pairs,
                       int64_t columns, int32_t* acc);

}  // namespace mxlite

#endif  // MXLITE_KERNELS_INT16_PAIR_GEMM_H_
