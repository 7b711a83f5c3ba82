// The decoder-only transformer shared by every supported architecture: pre-norm attention with
// rotary embeddings and GQA, then a dense SwiGLU or a mixture-of-experts FFN (the blocks of
// core/layers). Architecture files (core/model/<arch>.cpp) only say which tensors exist and what
// they are called.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/layers/attention.h"
#include "core/layers/ffn.h"
#include "core/model/config.h"
#include "core/model/model.h"

namespace inferdesk {

struct DecoderLayerWeights {
  AttentionWeights attn;
  Buffer ffn_norm;  // post_attention_layernorm
  bool is_moe = false;
  DenseFfnWeights dense;
  MoeWeights moe;
};

struct DecoderWeights {
  Buffer embed;
  std::vector<DecoderLayerWeights> layers;
  Buffer final_norm;
  Buffer lm_head;  // may share memory with embed (tied embeddings)
};

// Hub tensor names of the parts that differ between families.
struct AttentionNames {
  bool bias = false;     // q/k/v biases
  bool qk_norm = false;  // self_attn.q_norm / k_norm
};

// Loading helpers for architecture files.
AttentionWeights load_attention(WeightLoader& w, const ModelConfig& c, const std::string& layer_prefix,
                                const AttentionNames& names);
// Separate gate/up/down.
DenseFfnWeights load_dense_ffn(WeightLoader& w, const std::string& prefix, int64_t hidden, int64_t inter,
                               const char* gate = "gate_proj", const char* up = "up_proj",
                               const char* down = "down_proj");
// `prefix`.{gate,up,down}_proj with gate and up stacked when the backend wants fused weights
// (dense MLPs, shared experts and each routed expert alike).
DenseFfnWeights load_swiglu_mlp(WeightLoader& w, const std::string& prefix, int64_t hidden, int64_t inter,
                                const char* gate = "gate_proj", const char* up = "up_proj",
                                const char* down = "down_proj");
// Embedding, final norm and lm_head (tied or not) under the standard "model." names.
void load_embeddings_and_head(WeightLoader& w, const ModelConfig& c, DecoderWeights& out);

std::unique_ptr<Model> make_decoder_model(const ModelConfig& config, DecoderWeights weights);

// Fills the FFN part of layer `layer` (tensor names under `prefix` = "model.layers.N").
using FfnLoader = std::function<void(WeightLoader& w, const ModelConfig& c, int64_t layer, const std::string& prefix,
                                     DecoderLayerWeights& out)>;

// The whole decoder: embeddings and head, then per layer input norm + attention (`names`),
// post-attention norm, and the FFN that `ffn` loads.
std::unique_ptr<Model> build_decoder(WeightLoader& w, const ModelConfig& c, const AttentionNames& names,
                                     const FfnLoader& ffn);

// Stock FFN loaders: `mlp.{gate,up,down}_proj` (dense), and the Qwen-MoE layout
// (`mlp.gate`, `mlp.experts.N.*`, optional `mlp.shared_expert*`; dense on non-MoE layers).
void load_dense_mlp(WeightLoader& w, const ModelConfig& c, int64_t layer, const std::string& prefix,
                    DecoderLayerWeights& out);
void load_qwen_moe_mlp(WeightLoader& w, const ModelConfig& c, int64_t layer, const std::string& prefix,
                       DecoderLayerWeights& out);

}  // namespace inferdesk
