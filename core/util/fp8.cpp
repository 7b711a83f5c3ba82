#include "core/util/fp8.h"

#include <cmath>

#include "core/util/dtype.h"

namespace inferdesk {

namespace {

// Rounds |f| (finite, below the format's saturation bound) to `mant_bits` of mantissa with
// exponent bias `bias`; subnormals below 2^(1-bias).
uint8_t round_to_fp8(float a, int mant_bits, int bias) {
  const float min_normal = std::ldexp(1.0f, 1 - bias);
  if (a < min_normal) {
    // Subnormal steps of 2^(1-bias-mant_bits); a result of 2^mant_bits is the smallest normal.
    const float steps = std::nearbyint(std::ldexp(a, bias - 1 + mant_bits));
    return static_cast<uint8_t>(steps);
  }
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  int exp = static_cast<int>((bits >> 23) & 0xffu) - 127;
  const int drop = 23 - mant_bits;
  uint32_t mant = (bits & 0x7fffffu) >> drop;
  const uint32_t rest = bits & ((1u << drop) - 1u), half = 1u << (drop - 1);
  if (rest > half || (rest == half && (mant & 1u))) ++mant;
  if (mant == (1u << mant_bits)) {
    mant = 0;
    ++exp;
  }
  return static_cast<uint8_t>(((exp + bias) << mant_bits) | static_cast<int>(mant));
}

}  // namespace

float fp8_e5m2_to_f32(uint8_t v) { return f16_to_f32(static_cast<uint16_t>(v) << 8); }

uint8_t f32_to_fp8_e4m3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | 0x7f;
  const float a = std::fabs(f);
  if (a >= kFp8E4M3Max) return sign | 0x7e;
  return sign | round_to_fp8(a, 3, 7);
}

uint8_t f32_to_fp8_e5m2(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | 0x7e;
  const float a = std::fabs(f);
  if (a >= kFp8E5M2Max) return sign | 0x7b;
  return sign | round_to_fp8(a, 2, 15);
}

}  // namespace inferdesk
