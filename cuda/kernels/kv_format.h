// How the paged KV cache stores its values, for every kernel that writes or reads it (rope_kv.h,
// gemv.h, attention.h): BF16, or E4M3 with a per-layer scale for K and one for V (core's
// KvCacheShape): stored = sat_e4m3(value * (1 / scale)), round to nearest even, read back as
// stored * scale. An E4M3 cache has one byte per value, so its pointers are untyped.
#pragma once

#include <cstdint>

namespace inferdesk::cuda {

enum class KvDtype : uint8_t { Bf16, Fp8E4M3 };

struct KvFormat {
  KvDtype dtype = KvDtype::Bf16;
  float k_scale = 1.0f;  // this layer's; only read for Fp8E4M3
  float v_scale = 1.0f;
  constexpr bool fp8() const { return dtype == KvDtype::Fp8E4M3; }  // constexpr: callable in kernels
  constexpr int32_t elem_bytes() const { return fp8() ? 1 : 2; }
};

}  // namespace inferdesk::cuda
