#include "dtype.h"

namespace mxlite {

namespace dtype_cc {
template <typename T>
void CastAll(const void* src, size_t count, float* dst) {
  const T* typed = static_cast<const T*>(src);
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(typed[i]);
}
}  // namespace dtype_cc

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
