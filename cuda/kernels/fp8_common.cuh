// Device helpers of the FP8 kernels (fp8_linear.h): activation scales and quantization exactly as
// the CPU reference computes them (core/backend/cpu/cpu_quant_linear.cpp), E4M3 decoding, and the
// E4M3 tensor-core MMA. Kernels are built without fast math, so `/` is the IEEE division the CPU's
// `1.0f / s` is.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/mma_stream.cuh"

namespace inferdesk::cuda {

// s = max(amax / 448, kFp8MinScale): the dynamic scale of a row or group whose largest magnitude
// is amax.
__device__ __forceinline__ float fp8_dynamic_scale(float amax) { return fmaxf(amax / 448.0f, kFp8MinScale); }

// sat_e4m3(a * inv) and sat_e4m3(b * inv) as two bytes (a in the low one): the product rounded
// once in F32, then to nearest even E4M3, saturating to +-448 (as f32_to_fp8_e4m3 on the CPU).
__device__ __forceinline__ uint32_t fp8_quant2(float a, float b, float inv) {
  return __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(a, inv), __fmul_rn(b, inv)), __NV_SATFINITE, __NV_E4M3);
}

// Four values quantized into one 32-bit word (element 0 in the low byte).
__device__ __forceinline__ uint32_t fp8_quant4(float a, float b, float c, float d, float inv) {
  return fp8_quant2(a, b, inv) | (fp8_quant2(c, d, inv) << 16);
}

// The 8 BF16 of a 16-byte chunk quantized into 8 bytes (element 0 lowest).
__device__ __forceinline__ uint2 fp8_quant_bf16x8(const uint4& v, float inv) {
  auto lo = [](uint32_t w) { return __uint_as_float(w << 16); };
  auto hi = [](uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); };
  return make_uint2(fp8_quant4(lo(v.x), hi(v.x), lo(v.y), hi(v.y), inv),
                    fp8_quant4(lo(v.z), hi(v.z), lo(v.w), hi(v.w), inv));
}

// Largest magnitude among the 8 BF16 of a chunk (|bf16| by clearing the sign bits).
__device__ __forceinline__ float bf16x8_amax(const uint4& v) {
  const uint32_t m = 0x7FFF7FFFu;
  const uint32_t w[4] = {v.x & m, v.y & m, v.z & m, v.w & m};
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) a = fmaxf(a, fmaxf(__uint_as_float(w[i] << 16), __uint_as_float(w[i] & 0xFFFF0000u)));
  return a;
}

// One E4M3 byte as a float (exact: E4M3 values are F16 values).
__device__ __forceinline__ float fp8_to_float(uint8_t v) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(v), __NV_E4M3)));
}

// c += A (16 x 32, row) * B (32 x 8, col), E4M3 in, F32 accumulate: a0/a2 row g, a1/a3 row g + 8
// (k 4t..4t+3 and 16+4t..), b0/b1 column g. Native on sm_89 and later (sm_90 runs it as F16 MMAs
// after a conversion, as the compiler lowers it there); below sm_89 the same conversion by hand:
// E4M3 values are exact in F16, and each F16 MMA takes the bytes in the same order for A and B,
// so the products pair up whatever logical k each lands on.
__device__ __forceinline__ uint32_t fp8x2_to_f16x2(uint32_t w, int half_sel) {
  const auto pair = static_cast<__nv_fp8x2_storage_t>(half_sel ? (w >> 16) : (w & 0xFFFFu));
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}
__device__ __forceinline__ void mma_e4m3(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  const uint32_t a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
#pragma unroll
  for (int q = 0; q < 2; ++q)  // (a0, a1, b0) then (a2, a3, b1)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(fp8x2_to_f16x2(a[2 * q], 0)), "r"(fp8x2_to_f16x2(a[2 * q + 1], 0)), "r"(fp8x2_to_f16x2(a[2 * q], 1)),
          "r"(fp8x2_to_f16x2(a[2 * q + 1], 1)), "r"(fp8x2_to_f16x2(b[q], 0)), "r"(fp8x2_to_f16x2(b[q], 1)));
#endif
}

// One 16-byte chunk per lane: lo = W row g, hi = W row g + 8, b = quantized activations of token g,
// all at the same 16 k's, as two MMAs (bytes 0-7, then 8-15).
__device__ __forceinline__ void mma_e4m3_chunk(float (&c)[4], const uint4& lo, const uint4& hi, const uint4& b) {
  mma_e4m3(c, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
  mma_e4m3(c, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
}

// Streaming 16-byte weight load (mma_stream.cuh's: L1 no-allocate, 256-byte L2 prefetch; kPinned
// keeps it before pdl_wait()), of E4M3 bytes.
template <bool kPinned = false>
__device__ __forceinline__ uint4 load_fp8_stream(const uint8_t* p) {
  return load_w_stream<kPinned>(reinterpret_cast<const bf16*>(p));
}

}  // namespace inferdesk::cuda
