// Helpers shared by the paged-attention kernels (attention_prefill.cu, attention_decode.cu):
// host-side argument checks, PTX wrappers (cp.async, ldmatrix, mma.sync m16n8k16 BF16) and the
// paged-cache addressing. Not part of the public contract (attention.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"

namespace inferdesk::cuda::attn {

// ------------------------------------------------------------------------------------- host side

inline bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
inline int log2_pow2(int64_t v) {
  int l = 0;
  while ((int64_t{1} << l) < v) ++l;
  return l;
}
inline bool aligned_to(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// What both launchers implement: head_dim 32/64/128/256, GQA, power-of-two block sizes (1..1024),
// grid limits. Anything else is a configuration the kernels do not have (Error(Internal)).
inline void check_attention_args(const PagedAttentionArgs& a, const char* who) {
  const std::string w = who;
  if (a.head_dim != 32 && a.head_dim != 64 && a.head_dim != 128 && a.head_dim != 256)
    unsupported_config(w + ": head_dim " + std::to_string(a.head_dim) + " (instantiated: 32, 64, 128, 256)");
  if (a.num_heads <= 0 || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0)
    unsupported_config(w + ": " + std::to_string(a.num_heads) + " query heads over " + std::to_string(a.num_kv_heads) +
                       " kv heads");
  if (!is_pow2(a.block_size) || a.block_size > 1024)
    unsupported_config(w + ": block_size " + std::to_string(a.block_size) + " (a power of two up to 1024)");
  if (a.num_seqs > 65535) unsupported_config(w + ": " + std::to_string(a.num_seqs) + " sequences (at most 65535)");
  if (a.sliding_window < 0) unsupported_config(w + ": negative sliding_window " + std::to_string(a.sliding_window));
}

// ----------------------------------------------------------------------------------- device side

constexpr float kLog2e = 1.4426950408889634f;

// 2^x with the hardware approximation (relative error ~2^-22); 2^-inf = 0.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Element offset of (kv head, key) in one layer's cache [num_blocks][num_kv_heads][bs][D].
__device__ __forceinline__ int64_t cache_offset(int32_t block_id, int32_t num_kv_heads, int32_t kv_head, int32_t key,
                                                int32_t log2_bs, int32_t head_dim) {
  const int64_t slot_row = ((static_cast<int64_t>(block_id) * num_kv_heads + kv_head) << log2_bs) +
                           (key & ((1 << log2_bs) - 1));
  return slot_row * head_dim;
}

// 16 bytes (8 bf16) from global memory: one vector load when `vec` (address 16-byte aligned),
// else eight scalar loads.
__device__ __forceinline__ uint4 load8_bf16(const bf16* p, bool vec) {
  if (vec) return __ldg(reinterpret_cast<const uint4*>(p));
  uint4 r;
  uint16_t h[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) h[i] = __bfloat16_as_ushort(p[i]);
  r.x = h[0] | (static_cast<uint32_t>(h[1]) << 16);
  r.y = h[2] | (static_cast<uint32_t>(h[3]) << 16);
  r.z = h[4] | (static_cast<uint32_t>(h[5]) << 16);
  r.w = h[6] | (static_cast<uint32_t>(h[7]) << 16);
  return r;
}

// 16-byte asynchronous copy global -> shared; when !valid the destination is zero-filled and
// nothing is read (src must still be a valid address).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(n));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}

// c[16x8] += a[16x16] * b[16x8], BF16 inputs, F32 accumulate (fragment layouts of the PTX ISA).
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace inferdesk::cuda::attn
