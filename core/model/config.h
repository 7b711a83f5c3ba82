// ModelConfig: what the engine needs from a Hugging Face config.json, validated.
// Parsing (config.cpp) applies the defaults of the matching transformers config class and rejects
// absurd values with ErrorCode::Format naming the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/layers/rope_scaling.h"
#include "core/model/quant_config.h"

namespace inferdesk {

struct ModelConfig {
  std::string model_type;    // "llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"
  std::string architecture;  // architectures[0], e.g. "LlamaForCausalLM" (may be empty)
  std::string torch_dtype;   // as written ("bfloat16", "float16", "float32") or ""
  std::string hidden_act = "silu";

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP width (for mixtral: the expert width)
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // explicit; absent: the class default (qwen3: 128), else hidden / heads
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (always true for qwen2 / qwen2_moe)
  bool qk_norm = false;         // per-head RMSNorm of q and k (qwen3, qwen3_moe)

  // Sliding-window attention per layer: 0 = full attention, else the window in tokens.
  std::vector<int64_t> layer_sliding_window;  // size num_hidden_layers

  // Mixture of experts (num_experts == 0: dense model).
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;            // expert width
  int64_t shared_expert_intermediate_size = 0;  // qwen2_moe shared expert width (0: none)
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  // The checkpoint's quantization_config (format None: unquantized).
  QuantConfig quantization;

  std::vector<int64_t> eos_token_ids;  // from config.json (generation_config.json may add more)
  int64_t bos_token_id = -1;

  bool is_moe() const { return num_experts > 0; }
  // True when layer `i` uses the MoE block (HF rule: not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0).
  bool is_moe_layer(int64_t i) const;

  // Parse and validate. Throws inferdesk::Error (Format / Unsupported) naming the field.
  static ModelConfig from_json(const nlohmann::json& j);
};

struct RopeConfig;  // core/backend/backend.h

// The rotary embedding of `config` (make_rope_config of core/layers/rope.h over its head_dim,
// rope_theta and rope_scaling).
RopeConfig make_rope_config(const ModelConfig& config);

// generation_config.json: defaults the model's authors chose.
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  double temperature = -1;  // < 0: not given
  double top_p = -1;
  int64_t top_k = -1;
  double repetition_penalty = -1;
  double min_p = -1;
  int64_t max_new_tokens = -1;
  // Parse and validate (types, and ranges of the sampling values). Throws Error(Format) naming
  // the field.
  static GenerationConfig from_json(const nlohmann::json& j);
};

}  // namespace inferdesk
