// Device helpers of the E4M3 KV cache (kv_format.h): the quantizing stores of the KV writers
// (rope_kv.cu, gemv.cu) and the conversions of the attention kernels. The E4M3 <-> F32/F16
// conversions are single instructions on sm_89+ (cuda_fp8.h falls back to software below).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace inferdesk::cuda {

// sat_e4m3(v * inv_scale), rounded to nearest even: the value core's f32_to_fp8_e4m3 gives for
// the same float (NaN stays NaN).
__device__ __forceinline__ uint8_t quantize_e4m3(float v, float inv_scale) {
  return __nv_cvt_float_to_fp8(v * inv_scale, __NV_SATFINITE, __NV_E4M3);
}

// Eight values quantized into 8 bytes (element 0 in the low byte of .x).
__device__ __forceinline__ uint2 quantize_e4m3x8(const float (&f)[8], float inv_scale) {
  uint32_t w[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(f[4 * i] * inv_scale, f[4 * i + 1] * inv_scale),
                                                 __NV_SATFINITE, __NV_E4M3);
    const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(f[4 * i + 2] * inv_scale, f[4 * i + 3] * inv_scale),
                                                 __NV_SATFINITE, __NV_E4M3);
    w[i] = lo | (hi << 16);
  }
  return make_uint2(w[0], w[1]);
}

// Two E4M3 codes (the first in the low byte) as an f16x2 (the first in the low half): exact.
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t two_codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two_codes & 0xFFFFu), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

// The eight E4M3 codes of `v` (element 0 in the low byte of .x) as floats, unscaled.
__device__ __forceinline__ void unpack_e4m3x8(const uint2& v, float (&f)[8]) {
  const uint32_t w[2] = {v.x, v.y};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const uint32_t h = e4m3x2_to_f16x2(w[i] >> (16 * j));
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&h));
      f[4 * i + 2 * j] = p.x;
      f[4 * i + 2 * j + 1] = p.y;
    }
  }
}

__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// A pair of BF16 (the first in the low half) as f16x2, clamped to F16's finite range (a q value
// beyond +-65504 would otherwise become an infinity).
__device__ __forceinline__ uint32_t bf16x2_to_f16x2(uint32_t w) {
  constexpr float kMax = 65504.0f;
  const float lo = fminf(fmaxf(__uint_as_float(w << 16), -kMax), kMax);
  const float hi = fminf(fmaxf(__uint_as_float(w & 0xFFFF0000u), -kMax), kMax);
  return pack_f16x2(lo, hi);
}

// c[16x8] += a[16x16] * b[16x8], F16 inputs, F32 accumulate (the fragment layouts of the BF16
// mma: attention_common.cuh).
__device__ __forceinline__ void mma_f16_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace inferdesk::cuda
