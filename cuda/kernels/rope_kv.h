// The rotary embedding of q and k with the optional per-head RMSNorm, and the KV-cache write of k
// and v (rope_kv.cu).
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/kv_format.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

struct RopeKvArgs {
  bf16* q = nullptr;  // [T, num_q_heads * head_dim], row stride q_stride (rotated in place)
  int64_t q_stride = 0;
  bf16* k = nullptr;  // [T, num_kv_heads * head_dim], stride k_stride (rotated in place)
  int64_t k_stride = 0;
  const bf16* v = nullptr;  // [T, num_kv_heads * head_dim], stride v_stride
  int64_t v_stride = 0;
  const bf16* q_norm = nullptr;  // [head_dim] per-head RMSNorm weights (qwen3), or null
  const bf16* k_norm = nullptr;
  float eps = 1e-6f;
  const float* inv_freq = nullptr;        // [rotary_dim / 2] device
  int32_t rotary_dim = 0;                 // rotate the first rotary_dim dims of each head (rotate_half)
  float attention_scaling = 1.0f;         // multiplies the rotated dims (llama3/yarn style)
  const int32_t* positions = nullptr;     // [T]
  const int32_t* slot_mapping = nullptr;  // [T]; -1: do not write
  void* k_cache = nullptr;                // this layer's cache (elements of kv.elem_bytes())
  void* v_cache = nullptr;
  KvFormat kv;  // E4M3: K and V quantized with the layer's scales
  int32_t num_tokens = 0, num_q_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 16;
};
// Per token and head: optional per-head RMSNorm of q and k (before rotation, as in Qwen3), rotary
// embedding of q and k in place (angle = position * inv_freq[i], computed in F32), then K (rotated)
// and V written into the cache at slot_mapping. Same maths as the CPU backend's rms_norm + rope +
// write_kv; an E4M3 cache gets sat_e4m3(value / scale) of the F32 rotated K (and of V).
void qk_norm_rope_write_kv(const RopeKvArgs& a, const Launch& launch);

}  // namespace inferdesk::cuda
