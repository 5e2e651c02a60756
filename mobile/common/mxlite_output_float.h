/*
 * Output conversion shared by the mobile wrappers (Android JNI, iOS).
 *
 * MXPredGetOutput writes an output in its own element type, which
 * MXPredGetOutputType gives as an mshadow flag (0 float32, 1 float64,
 * 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64). The Java and Objective-C
 * APIs hand every output out as float32; these two functions size the raw
 * buffer and widen or narrow its values. Plain C, header-only, so that each
 * wrapper compiles it with its own compiler.
 */
#ifndef MXLITE_MOBILE_OUTPUT_FLOAT_H_
#define MXLITE_MOBILE_OUTPUT_FLOAT_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bytes per element of an mshadow type flag; 0 for a flag the C API does
 * not hand out. */
static inline size_t mxlite_element_size(int dtype) {
  switch (dtype) {
    case 0: case 4: return 4;
    case 1: case 6: return 8;
    case 2: return 2;
    case 3: case 5: return 1;
    default: return 0;
  }
}

/* IEEE half-precision bits to float, subnormals, infinities and NaN kept. */
static inline float mxlite_half_to_float(uint16_t half) {
  const uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  float value;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  /* subnormal: shift until the hidden bit appears */
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* Converts `count` elements of type `dtype` (one mxlite_element_size
 * knows) from `raw` to float. */
static inline void mxlite_output_to_float(int dtype, const unsigned char *raw, size_t count,
                                          float *out) {
  size_t i;
  for (i = 0; i < count; ++i) {
    const unsigned char *at = raw + i * mxlite_element_size(dtype);
    switch (dtype) {
      case 0: { float v; memcpy(&v, at, sizeof v); out[i] = v; break; }
      case 1: { double v; memcpy(&v, at, sizeof v); out[i] = (float)v; break; }
      case 2: { uint16_t v; memcpy(&v, at, sizeof v); out[i] = mxlite_half_to_float(v); break; }
      case 3: out[i] = (float)*at; break;
      case 4: { int32_t v; memcpy(&v, at, sizeof v); out[i] = (float)v; break; }
      case 5: out[i] = (float)(int8_t)*at; break;
      case 6: { int64_t v; memcpy(&v, at, sizeof v); out[i] = (float)v; break; }
      default: out[i] = 0.0f; break;
    }
  }
}

#endif /* MXLITE_MOBILE_OUTPUT_FLOAT_H_ */
