// Small helpers shared by the kernel files (device code only; not part of the public contract).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

#include "core/util/error.h"
#include "cuda/kernels/kernels.h"

namespace inferdesk::cuda {

// Throws Error(Internal) naming `what` when the last launch failed.
void check_launch(const char* what);
[[noreturn]] void unsupported_config(const std::string& what);

__device__ __forceinline__ float load_as_float(const void* p, Dt dt, int64_t i) {
  return dt == Dt::F32 ? static_cast<const float*>(p)[i]
                       : __bfloat162float(static_cast<const bf16*>(p)[i]);
}
__device__ __forceinline__ void store_from_float(void* p, Dt dt, int64_t i, float v) {
  if (dt == Dt::F32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<bf16*>(p)[i] = __float2bfloat16(v);
}

// Sum over a warp (all 32 lanes active).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace inferdesk::cuda
