// Qwen2-MoE (Qwen1.5-MoE): Qwen2 attention (q/k/v bias); MoE layers per decoder_sparse_step and
// mlp_only_layers, each with routed experts plus a shared expert scaled by
// sigmoid(shared_expert_gate); norm_topk_prob decides whether top-k weights are renormalised.
#include "core/model/architectures.h"
#include "core/model/decoder.h"

namespace inferdesk {

namespace {

std::unique_ptr<Model> load_qwen2_moe(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = true, .qk_norm = false}, load_qwen_moe_mlp);
}

}  // namespace

// Qwen2MoeConfig
extern constinit const Architecture kQwen2Moe{
    .model_type = "qwen2_moe",
    .causal_lm_class = "Qwen2MoeForCausalLM",
    .defaults = {.num_key_value_heads = 16,
                 .max_position_embeddings = 32768,
                 .rms_norm_eps = 1e-6,
                 .rope_theta = 1e6,
                 .bias = BiasRule::QkvBias,
                 .sliding = SlidingRule::EvenBelowMaxWindow,
                 .sliding_window = 4096,
                 .moe = MoeLayout::Qwen,
                 .num_experts = 60,
                 .num_experts_per_tok = 4,
                 .moe_intermediate_size = 1408,
                 .shared_expert = true,
                 .shared_expert_intermediate_size = 5632},
    .load = load_qwen2_moe,
};

}  // namespace inferdesk
