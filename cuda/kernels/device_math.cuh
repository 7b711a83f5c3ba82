// Device math shared by the kernels, defined once so that every kernel rounds alike: SiLU and the
// sigmoid, the RMSNorm row scale (and WideNorm's sum of partial sums), the rotary embedding's
// cos/sin and rotate_half, and BF16 <-> F32 conversions. The kernels are built without fast math
// (cuda/CMakeLists.txt), so expf, sqrtf, sincosf and `/` are the accurate, IEEE-rounded forms;
// each function follows the CPU backend's formula (core/backend/cpu). Tested once against double
// precision: tests/gpu/kernels/test_device_math.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/wide_norm.h"

namespace inferdesk::cuda {

// ----------------------------------------------------------------------------- activations

// silu(g) = g / (1 + e^-g), the CPU's formula with the accurate expf and an IEEE division (not
// __expf / __fdividef): the epilogues that use it are short next to their weight streams.
__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }

// 1 / (1 + e^-g), as the CPU computes the shared expert's gate.
__device__ __forceinline__ float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

// ---------------------------------------------------------------------------------- RMSNorm

// The RMSNorm row scale 1 / sqrt(sum_sq / n + eps) with an IEEE square root and division, as the
// CPU computes it (not rsqrtf's approximation: it is evaluated once per row).
__device__ __forceinline__ float rms_scale(float sum_sq, float n, float eps) { return 1.0f / sqrtf(sum_sq / n + eps); }

// WideNorm (wide_norm.h): the sum of a row's per-tile partial sums of squares, in the one order both
// the consumer GEMMs and wide_norm_scale_rows use (four running sums over tiles t % 4, then
// (0 + 1) + (2 + 3)), so that both give the row the same scale bit for bit.
__device__ __forceinline__ float wide_norm_row_sum(const float* ss, int tiles, int row) {
  float p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 = 0.0f;
  int t = 0;
  for (; t + 3 < tiles; t += 4) {
    p0 += ss[t * kWideNormRows + row];
    p1 += ss[(t + 1) * kWideNormRows + row];
    p2 += ss[(t + 2) * kWideNormRows + row];
    p3 += ss[(t + 3) * kWideNormRows + row];
  }
  if (t < tiles) p0 += ss[t * kWideNormRows + row];
  if (t + 1 < tiles) p1 += ss[(t + 1) * kWideNormRows + row];
  if (t + 2 < tiles) p2 += ss[(t + 2) * kWideNormRows + row];
  return (p0 + p1) + (p2 + p3);
}

// ------------------------------------------------------------------------- rotary embedding

// cos and sin of the angle pos * inv_freq (the product rounded once in F32, as the CPU forms it),
// each times `scaling` (attention_scaling). The accurate sincosf: positions reach 1e5+, far out of
// the fast intrinsic's range.
__device__ __forceinline__ void rope_cos_sin(float inv_freq, float pos, float scaling, float& c, float& s) {
  float sn, cs;
  sincosf(__fmul_rn(inv_freq, pos), &sn, &cs);
  c = __fmul_rn(cs, scaling);
  s = __fmul_rn(sn, scaling);
}

// rotate_half of one element x of a pair whose other element is `partner`: [x1, x2] ->
// [x1 c - x2 s, x2 c + x1 s], x the first of the pair (x1) when `first`. partner * s is rounded,
// then x * c joins it in one fused multiply-add.
__device__ __forceinline__ float rotate_half(float x, float partner, float c, float s, bool first) {
  const float ps = partner * s;
  return fmaf(x, c, first ? -ps : ps);
}

// ------------------------------------------------------------------------ BF16 <-> F32

// To F32 (exact from BF16 and F16).
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

// From F32: to BF16 rounded to nearest even.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16(v);
}

// v as storing it in BF16 and reading it back gives it.
__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16(v)); }

// Element i of an F32 or BF16 array, as F32; and v stored there (rounded for BF16).
__device__ __forceinline__ float load_as_float(const void* p, Dt dt, int64_t i) {
  return dt == Dt::F32 ? static_cast<const float*>(p)[i] : to_float(static_cast<const bf16*>(p)[i]);
}
__device__ __forceinline__ void store_from_float(void* p, Dt dt, int64_t i, float v) {
  if (dt == Dt::F32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<bf16*>(p)[i] = from_float<bf16>(v);
}

// Two floats as a BF16 pair in one 32-bit word (lo at the lower address), each rounded to nearest
// even; and stored at p (4-byte aligned).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ void store_bf16x2(bf16* p, float lo, float hi) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(lo, hi);
}

// The 8 BF16 of a 16-byte chunk as floats (element 0 in the low half of v.x), and back (rounded).
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}
__device__ __forceinline__ uint4 pack_bf16x8(const float (&f)[8]) {
  uint4 r;
  auto* e = reinterpret_cast<bf16*>(&r);
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = from_float<bf16>(f[i]);
  return r;
}

}  // namespace inferdesk::cuda
