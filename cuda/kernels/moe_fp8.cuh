// Device helpers of the FP8 expert kernels (moe_fp8_small.cu, moe_fp8_grouped.cu): 16 activations
// of a BF16 or F32 row as floats, their magnitude and their E4M3 codes (fp8_common.cuh's rounding,
// the CPU reference's), and the scale of a weight row.
#pragma once

#include <cstdint>

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/fp8_common.cuh"
#include "cuda/kernels/moe_fp8.h"

namespace inferdesk::cuda {

// v = p[0 .. 16) (16-byte aligned).
__device__ __forceinline__ void load16(const bf16* p, float (&v)[16]) {
  float a[8], b[8];
  unpack_bf16x8(*reinterpret_cast<const uint4*>(p), a);
  unpack_bf16x8(*reinterpret_cast<const uint4*>(p + 8), b);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = a[i], v[8 + i] = b[i];
}
__device__ __forceinline__ void load16(const float* p, float (&v)[16]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float4 f = reinterpret_cast<const float4*>(p)[i];
    v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
  }
}

__device__ __forceinline__ float amax16(const float (&v)[16]) {
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) m = fmaxf(m, fabsf(v[i]));
  return m;
}

// The 16 codes sat_e4m3(v * inv) as one 16-byte chunk (element 0 lowest).
__device__ __forceinline__ uint4 quant16(const float (&v)[16], float inv) {
  return make_uint4(fp8_quant4(v[0], v[1], v[2], v[3], inv), fp8_quant4(v[4], v[5], v[6], v[7], inv),
                    fp8_quant4(v[8], v[9], v[10], v[11], inv), fp8_quant4(v[12], v[13], v[14], v[15], inv));
}

// Largest magnitude of a row of n values (n % 8 == 0, 16-byte aligned rows), this thread's share
// of it (elements 8 i .. 8 i + 8 for i = first, first + step, ...).
__device__ __forceinline__ float row_amax_part(const bf16* row, int64_t n, int first, int step) {
  float m = 0.0f;
  for (int64_t c = first; c < n / 8; c += step) m = fmaxf(m, bf16x8_amax(reinterpret_cast<const uint4*>(row)[c]));
  return m;
}
__device__ __forceinline__ float row_amax_part(const float* row, int64_t n, int first, int step) {
  float m = 0.0f;
  for (int64_t c = first; c < n / 8; c += step) {
    const float4 a = reinterpret_cast<const float4*>(row)[2 * c], b = reinterpret_cast<const float4*>(row)[2 * c + 1];
    m = fmaxf(m, fmaxf(fmaxf(fabsf(a.x), fabsf(a.y)), fmaxf(fabsf(a.z), fabsf(a.w))));
    m = fmaxf(m, fmaxf(fmaxf(fabsf(b.x), fabsf(b.y)), fmaxf(fabsf(b.z), fabsf(b.w))));
  }
  return m;
}

// The scale of output row `row` of a per-tensor or per-channel matrix.
__device__ __forceinline__ float row_scale(const float* s, bool per_row, int64_t row) { return s[per_row ? row : 0]; }

}  // namespace inferdesk::cuda
