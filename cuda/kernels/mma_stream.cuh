// Device helpers shared by the weight-streaming tensor-core kernels (gemv.cu, moe_grouped.cu,
// moe.cu): the streaming 16-byte weight load and the BF16 mma.m16n8k16 on one 16-byte chunk per
// lane, where the 8 values of a chunk are the logical k's {2t, 2t+1, 2t+8, 2t+9} of two mmas (the
// same permutation for A and B, so the products pair up; gemv.cu explains the layout).
#pragma once

#include <cstdint>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"

namespace inferdesk::cuda {

// Weights are read once: L1 no-allocate, 256-byte L2 prefetch. kPinned: volatile, so the compiler
// keeps the load where it is written (e.g. before pdl_wait()).
template <bool kPinned = false>
__device__ __forceinline__ uint4 load_w_stream(const bf16* p) {
  uint4 r;
  if constexpr (kPinned)
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
  return r;
}

// 8 BF16 values at p as one 16-byte word: a vector load where p is 16-byte aligned (kVec), else
// element by element.
template <bool kVec>
__device__ __forceinline__ uint4 load_bf16x8(const bf16* p) {
  if constexpr (kVec) {
    return *reinterpret_cast<const uint4*>(p);
  } else {
    alignas(16) bf16 e[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = p[i];
    return *reinterpret_cast<const uint4*>(e);
  }
}

// c += A(16x16, row) * B(16x8, col), BF16 inputs, F32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One 8-element chunk per lane: lo = W row g, hi = W row g + 8, b = activation row g, all at the
// same k's.
__device__ __forceinline__ void mma_chunk(float (&c)[4], const uint4& lo, const uint4& hi, const uint4& b) {
  mma_bf16(c, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
  mma_bf16(c, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
}

}  // namespace inferdesk::cuda
