// FP8 scalars: E4M3 ("fn": no infinities, NaN = S.1111.111, max 448) and E5M2 (IEEE-like, with
// infinities), as the OCP FP8 spec, safetensors' F8_E4M3 / F8_E5M2 and PyTorch's float8_e4m3fn /
// float8_e5m2 define them. Conversions from float round to nearest even and saturate finite values
// to the largest finite one, as CUDA's __NV_SATFINITE conversion does, so the CPU reference and the
// GPU kernels quantize alike.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

namespace inferdesk {

inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kFp8E5M2Max = 57344.0f;

namespace fp8_detail {
constexpr float pow2(int e) {
  float r = 1.0f;
  for (; e > 0; --e) r *= 2.0f;
  for (; e < 0; ++e) r *= 0.5f;
  return r;
}
constexpr float e4m3_value(uint8_t v) {
  const int exp = (v >> 3) & 0xf, mant = v & 0x7;
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  if (exp == 0xf && mant == 0x7) return __builtin_nanf("");
  if (exp == 0) return sign * static_cast<float>(mant) * pow2(-9);  // subnormal: mant/8 * 2^-6
  return sign * (1.0f + static_cast<float>(mant) / 8.0f) * pow2(exp - 7);
}
constexpr std::array<float, 256> make_e4m3_table() {
  std::array<float, 256> t{};
  for (int i = 0; i < 256; ++i) t[static_cast<size_t>(i)] = e4m3_value(static_cast<uint8_t>(i));
  return t;
}
inline constexpr std::array<float, 256> kE4M3Table = make_e4m3_table();
}  // namespace fp8_detail

inline float fp8_e4m3_to_f32(uint8_t v) { return fp8_detail::kE4M3Table[v]; }

// E5M2 is the top byte of an IEEE half.
float fp8_e5m2_to_f32(uint8_t v);

// Round to nearest even; magnitudes beyond the largest finite value (infinities too) saturate to
// it, NaN stays NaN (CUDA's SATFINITE mode).
uint8_t f32_to_fp8_e4m3(float f);
uint8_t f32_to_fp8_e5m2(float f);

}  // namespace inferdesk
