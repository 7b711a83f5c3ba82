// An architecture family as its own file (core/model/<arch>.cpp) defines it: the model_type, the
// defaults of its transformers config class for keys a config.json leaves out (ModelConfig's
// parsing applies them), and the loader that says which tensors the family has and what they are
// called. registry.cpp lists the families; see README.md beside this file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/model/model.h"

namespace inferdesk {

// Where a family's q/k/v biases come from.
enum class BiasRule {
  AttentionBias,  // the attention_bias key (default false)
  QkvBias,        // the qkv_bias key (default true), as transformers 5 writes qwen2_moe
  Always,
  Never,
};

// Which layers use the sliding window (a config's layer_types overrides the rule).
enum class SlidingRule {
  None,                // no sliding window
  EveryLayer,          // sliding_window on every layer (null: none)
  FromMaxWindow,       // use_sliding_window && layer >= max_window_layers
  EvenBelowMaxWindow,  // use_sliding_window && layer even && layer < max_window_layers
  AllWhenEnabled,      // use_sliding_window: every layer
};

enum class MoeLayout {
  Dense,
  // num_local_experts; experts as wide as intermediate_size; top-k weights always renormalised.
  Mixtral,
  // num_experts, moe_intermediate_size, norm_topk_prob, decoder_sparse_step, mlp_only_layers.
  Qwen,
};

// A transformers config class's defaults, named after the config.json keys they stand in for.
// Fields a family leaves out keep the values below.
struct ConfigDefaults {
  int64_t num_key_value_heads = -1;  // -1: num_attention_heads
  int64_t head_dim = 0;              // 0: hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t bos_token_id = -1;  // -1: none
  int64_t eos_token_id = -1;  // -1: none
  BiasRule bias = BiasRule::AttentionBias;
  bool qk_norm = false;  // per-head RMSNorm of q and k (no key: the family has it or not)
  SlidingRule sliding = SlidingRule::None;
  int64_t sliding_window = 0;  // when the key is absent (0: none)
  MoeLayout moe = MoeLayout::Dense;
  int64_t num_experts = 0;  // num_experts, or num_local_experts (Mixtral)
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  bool shared_expert = false;  // reads shared_expert_intermediate_size (else it stays 0)
  int64_t shared_expert_intermediate_size = 0;
};

using ArchitectureLoader = std::unique_ptr<Model> (*)(const ModelConfig& c, WeightLoader& w);

struct Architecture {
  std::string_view model_type;
  // The transformers class config.json's `architectures` names for this family: another class
  // there (GPT2LMHeadModel with model_type qwen2) means the weights are not this family's.
  std::string_view causal_lm_class;
  ConfigDefaults defaults;
  ArchitectureLoader load = nullptr;
};

// Every supported family, in the order messages list them (registry.cpp).
std::span<const Architecture* const> architectures();
// nullptr when no family has this model_type.
const Architecture* find_architecture(std::string_view model_type);
// "llama, mistral, ..." for messages.
std::string supported_model_types_list();

}  // namespace inferdesk
