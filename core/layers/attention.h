// The attention block of a pre-norm decoder layer over Backend ops: q/k/v projections (stacked or
// separate, optional biases), per-head q/k RMSNorm, rotary embedding and the KV-cache write,
// paged attention with GQA and an optional sliding window, and the o projection, which closes the
// residual branch and applies the next norm in one op (Backend::linear_add_rms_norm).
#pragma once

#include <cstdint>

#include "core/backend/backend.h"
#include "core/layers/activations.h"

namespace inferdesk {

struct AttentionWeights {
  Buffer norm;                    // input_layernorm
  Buffer q, k, v, o;              // projections (q, k, v empty when stacked into qkv)
  Buffer q_bias, k_bias, v_bias;  // empty when the model has none
  Buffer qkv, qkv_bias;           // q, k, v stacked (backends that want fused weights)
  Buffer q_norm, k_norm;          // per-head RMSNorm (qwen3); empty otherwise
};

struct AttentionShape {
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t sliding_window = 0;  // 0: full causal attention (AttentionParams::sliding_window)
  float eps = 1e-6f;           // RMSNorm epsilon of the q/k norms and of next_norm
};

// Rows [0, T) of acts.h hold the layer's normalised input. Afterwards acts.x += o(attention) and
// acts.h = rms_norm(acts.x) * next_norm (the layer's post-attention norm).
void attention_block(Backend& b, int32_t layer, const AttentionWeights& a, const AttentionShape& s,
                     const RopeConfig& rope, const Tensor& next_norm, const ActivationBuffers& acts, int64_t T);

}  // namespace inferdesk
