#include "dtype.h"

#include <cmath>

namespace mxlite {

namespace dtype_cc {
template <typename T>
void CastAll(const void* src, size_t count, float* dst) {
  const T* typed = static_cast<const T*>(src);
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(typed[i]);
}
template <typename T>
void StoreAll(const float* src, size_t count, void* dst, int flag) {
  T* typed = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) typed[i] = static_cast<T>(RoundToDType(flag, src[i]));
}

// Truncates towards zero into int64 (NaN gives 0, out-of-range values
// saturate), the first step of every float-to-integer conversion.
int64_t TruncateToInt64(float value) {
  if (std::isnan(value)) return 0;
  const double truncated = std::trunc(static_cast<double>(value));
  if (truncated >= 9223372036854775807.0) return INT64_MAX;
  if (truncated <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(truncated);
}
}  // namespace dtype_cc

uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity or NaN (kept quiet)
    return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u);
  }
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (magnitude < 0x38800000u) {
    // Below half's smallest normal (2^-14): a subnormal, in units of 2^-24.
    if (magnitude < 0x33000000u) return sign;  // below 2^-25: rounds to zero
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;
    uint32_t result = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round away 13 mantissa bits;
  // a carry out of the mantissa correctly bumps the exponent.
  uint32_t result = (magnitude - 0x38000000u) >> 13;
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

uint16_t FloatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float RoundToDType(int flag, float value) {
  using dtype_cc::TruncateToInt64;
  switch (flag) {
    case kFloat16: return HalfToFloat(FloatToHalf(value));
    case kBfloat16: return Bfloat16ToFloat(FloatToBfloat16(value));
    case kBool: return value != 0.f ? 1.f : 0.f;
    case kUint8: return static_cast<float>(static_cast<uint8_t>(TruncateToInt64(value)));
    case kInt8: return static_cast<float>(static_cast<int8_t>(TruncateToInt64(value)));
    case kInt16: return static_cast<float>(static_cast<int16_t>(TruncateToInt64(value)));
    case kUint16: return static_cast<float>(static_cast<uint16_t>(TruncateToInt64(value)));
    case kInt32: return static_cast<float>(static_cast<int32_t>(TruncateToInt64(value)));
    case kUint32: return static_cast<float>(static_cast<uint32_t>(TruncateToInt64(value)));
    case kInt64: return static_cast<float>(TruncateToInt64(value));
    case kUint64: return static_cast<float>(static_cast<uint64_t>(TruncateToInt64(value)));
    default: return value;
  }
}

bool ConvertFromFloat32(int flag, const float* src, size_t count, void* dst) {
  using dtype_cc::StoreAll;
  switch (flag) {
    case kFloat32: std::memcpy(dst, src, count * sizeof(float)); return true;
    case kFloat64: StoreAll<double>(src, count, dst, flag); return true;
    case kUint8: StoreAll<uint8_t>(src, count, dst, flag); return true;
    case kInt32: StoreAll<int32_t>(src, count, dst, flag); return true;
    case kInt8: StoreAll<int8_t>(src, count, dst, flag); return true;
    case kInt64: {
      // Straight from the truncation (no detour through a float).
      int64_t* typed = static_cast<int64_t*>(dst);
      for (size_t i = 0; i < count; ++i) typed[i] = dtype_cc::TruncateToInt64(src[i]);
      return true;
    }
    case kBool: StoreAll<uint8_t>(src, count, dst, flag); return true;
    case kInt16: StoreAll<int16_t>(src, count, dst, flag); return true;
    case kUint16: StoreAll<uint16_t>(src, count, dst, flag); return true;
    case kUint32: StoreAll<uint32_t>(src, count, dst, flag); return true;
    case kUint64: StoreAll<uint64_t>(src, count, dst, flag); return true;
    case kFloat16:
    case kBfloat16: {
      uint16_t* raw = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) {
        raw[i] = flag == kFloat16 ? FloatToHalf(src[i]) : FloatToBfloat16(src[i]);
      }
      return true;
    }
    default: return false;
  }
}

bool ConvertToFloat32(int flag, const void* src, size_t count, float* dst) {
  using dtype_cc::CastAll;
  switch (flag) {
    case kFloat32: std::memcpy(dst, src, count * sizeof(float)); return true;
    case kFloat64: CastAll<double>(src, count, dst); return true;
    case kUint8: CastAll<uint8_t>(src, count, dst); return true;
    case kInt32: CastAll<int32_t>(src, count, dst); return true;
    case kInt8: CastAll<int8_t>(src, count, dst); return true;
    case kInt64: CastAll<int64_t>(src, count, dst); return true;
    case kBool: CastAll<uint8_t>(src, count, dst); return true;
    case kInt16: CastAll<int16_t>(src, count, dst); return true;
    case kUint16: CastAll<uint16_t>(src, count, dst); return true;
    case kUint32: CastAll<uint32_t>(src, count, dst); return true;
    case kUint64: CastAll<uint64_t>(src, count, dst); return true;
    case kFloat16:
    case kBfloat16: {
      const uint16_t* raw = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) {
        dst[i] = flag == kFloat16 ? HalfToFloat(raw[i]) : Bfloat16ToFloat(raw[i]);
      }
      return true;
    }
    default: return false;
  }
}

}  // namespace mxlite
