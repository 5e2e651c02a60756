/*
 * Element types, numbered as MXNet's (mshadow's) type flags, the numbers that
 * appear in .params files, in "__dtype__" attributes and in the C API.
 */
#ifndef MXLITE_BASE_DTYPE_H_
#define MXLITE_BASE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mxlite {

enum DType : int {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
  kBool = 7,
  kInt16 = 8,
  kUint16 = 9,
  kUint32 = 10,
  kUint64 = 11,
  kBfloat16 = 12,
  kNumDTypes = 13,
  kUnknownDType = -1,
};

inline bool IsValidDType(int flag) { return flag >= 0 && flag < kNumDTypes; }

// Bytes per element; 0 for an invalid flag.
inline size_t DTypeSize(int flag) {
  static const unsigned char kSizes[kNumDTypes] = {4, 8, 2, 1, 4, 1, 8, 1, 2, 2, 4, 8, 2};
  return IsValidDType(flag) ? kSizes[flag] : 0;
}

// numpy-style name ("float32"); "unknown" for an invalid flag.
inline const char* DTypeName(int flag) {
  static const char* const kNames[kNumDTypes] = {
      "float32", "float64", "float16", "uint8",  "int32",  "int8",    "int64",
      "bool",    "int16",   "uint16",  "uint32", "uint64", "bfloat16"};
  return IsValidDType(flag) ? kNames[flag] : "unknown";
}

// Flag for a numpy-style name, or kUnknownDType.
inline int DTypeFromName(const char* name) {
  for (int flag = 0; flag < kNumDTypes; ++flag) {
    if (std::strcmp(DTypeName(flag), name) == 0) return flag;
  }
  return kUnknownDType;
}

// IEEE half and bfloat16 to float, exact for every input value.
inline float HalfToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1f;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal half: normalise it into a float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline float Bfloat16ToFloat(uint16_t raw) {
  uint32_t bits = static_cast<uint32_t>(raw) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Converts `count` elements of type `flag` at `src` to float32. Returns false
// for an invalid flag.
bool ConvertToFloat32(int flag, const void* src, size_t count, float* dst);

// float to IEEE half and to bfloat16, rounding to nearest even (overflow
// gives infinity, NaN stays NaN).
uint16_t FloatToHalf(float value);
uint16_t FloatToBfloat16(float value);

// The value `value` becomes when stored as type `flag`, read back as float:
// float16/bfloat16 round to nearest even; integer types truncate towards
// zero and wrap to their width (the C cast MXNet's Cast performs, as x86
// does it); bool is 1 for any non-zero value. float32/float64 keep it.
float RoundToDType(int flag, float value);

// Converts `count` floats to type `flag` at `dst` (RoundToDType's values).
// Returns false for an invalid flag.
bool ConvertFromFloat32(int flag, const float* src, size_t count, void* dst);

}  // namespace mxlite

#endif  // MXLITE_BASE_DTYPE_H_
