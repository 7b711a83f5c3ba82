// Small-batch GEMVs (gemv.cu): y = x @ W^T for up to kGemvMaxRows rows, with SwiGLU or the q|k|v
// projection's rope + KV-cache write in the epilogue.
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/kv_format.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// Small-batch y = x @ W^T (+ bias) for rows(x) <= kGemvMaxRows, memory-bound path: W BF16
// [N, K] contiguous, x BF16 [M, K], y BF16 or F32 [M, N]; bias BF16 [N] or null.
constexpr int32_t kGemvMaxRows = 8;
void gemv(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y, const Launch& launch);
// Same with the SwiGLU epilogue: W stacks gate [I, K] over up [I, K]; out[m, i] =
// silu(x.gate_i) * (x.up_i), BF16 [M, I].
void gemv_swiglu(const Mat& x, const bf16* w_gate_up, int64_t inter, int64_t k, Mat out, const Launch& launch);
// The fused q|k|v projection for decode rows (<= kGemvMaxRows) with qk_norm_rope_write_kv's work
// (without per-head norms) in its epilogue: y = x @ W^T (+ bias) with W [(Hq + 2 Hk) D, K], q and k
// heads rotated (rotate_half over the whole head, angle position * inv_freq[i] in F32, times
// attention_scaling), k and v heads written to the cache at slot_mapping (-1: not written). y keeps
// the rotated q and k and v. One kernel instead of two per layer.
struct GemvRope {
  const float* inv_freq = nullptr;  // [head_dim / 2]
  float attention_scaling = 1.0f;
  const int32_t* positions = nullptr;     // [M]
  const int32_t* slot_mapping = nullptr;  // [M]
  void* k_cache = nullptr;                // this layer's [blocks][num_kv_heads][block_size][head_dim]
  void* v_cache = nullptr;
  KvFormat kv;  // E4M3: k (F32, rotated) and v quantized with the scales
  int32_t num_q_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 16;
};
// Whether gemv_qkv_rope serves these arguments (BF16, 16-byte aligned W and x rows, K % 8 == 0,
// head_dim % 16 == 0, rows <= kGemvMaxRows, y [M, (Hq + 2 Hk) head_dim]).
bool gemv_qkv_rope_supported(const Mat& x, const bf16* w, int64_t k, const Mat& y, const GemvRope& r);
// Throws Error(Unsupported) where gemv_qkv_rope_supported is false.
void gemv_qkv_rope(const Mat& x, const bf16* w, int64_t k, const bf16* bias, Mat y, const GemvRope& r,
                   const Launch& launch);

}  // namespace inferdesk::cuda
