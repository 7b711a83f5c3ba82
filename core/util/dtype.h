// Element types of weights and activations, and scalar conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace inferdesk {

// F8E4M3 is the "fn" variant (no infinities, max 448) that safetensors calls F8_E4M3.
enum class DType : uint8_t { F32, F16, BF16, I32, I64, U8, I8, F8E4M3, F8E5M2 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
    case DType::I8: return 1;
    case DType::F8E4M3: return 1;
    case DType::F8E5M2: return 1;
  }
  return 0;
}

// Name as safetensors spells it ("F32", "BF16", "F8_E4M3", ...).
const char* dtype_name(DType t);
// Parse a safetensors dtype string; nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view s);

inline float bf16_to_f32(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, NaN kept quiet.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t h);
// Whether values of this dtype are floating point (F32, F16, BF16, the FP8 kinds).
constexpr bool dtype_is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 || t == DType::F8E5M2;
}
uint16_t f32_to_f16(float f);

}  // namespace inferdesk
