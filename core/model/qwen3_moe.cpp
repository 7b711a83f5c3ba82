// Qwen3-MoE: Qwen3 attention (q/k norm, optional bias) with routed experts and no shared expert;
// norm_topk_prob decides whether the top-k weights are renormalised.
#include "core/model/architectures.h"
#include "core/model/decoder.h"

namespace inferdesk {

namespace {

std::unique_ptr<Model> load_qwen3_moe(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = c.attention_bias, .qk_norm = true}, load_qwen_moe_mlp);
}

}  // namespace

// Qwen3MoeConfig
extern constinit const Architecture kQwen3Moe{
    .model_type = "qwen3_moe",
    .causal_lm_class = "Qwen3MoeForCausalLM",
    .defaults = {.num_key_value_heads = 4,
                 .max_position_embeddings = 32768,
                 .rms_norm_eps = 1e-6,
                 .rope_theta = 10000.0,
                 .bias = BiasRule::AttentionBias,
                 .qk_norm = true,
                 .sliding = SlidingRule::AllWhenEnabled,
                 .sliding_window = 4096,
                 .moe = MoeLayout::Qwen,
                 .num_experts = 128,
                 .num_experts_per_tok = 8,
                 .moe_intermediate_size = 768},
    .load = load_qwen3_moe,
};

}  // namespace inferdesk
