// Mixtral: Mistral attention with a sparse MoE FFN in every layer. Router softmax → top-k →
// renormalised weights; experts stored one by one as block_sparse_moe.experts.N.{w1,w3,w2}
// (w1 = gate, w3 = up, w2 = down).
#include "core/model/architectures.h"
#include "core/model/decoder.h"

namespace inferdesk {

namespace {

void load_block_sparse_moe(WeightLoader& w, const ModelConfig& c, int64_t, const std::string& prefix,
                           DecoderLayerWeights& out) {
  out.is_moe = true;
  const std::string m = prefix + ".block_sparse_moe";
  out.moe.router = w.matrix(m + ".gate.weight", c.num_experts, c.hidden_size);
  for (int64_t e = 0; e < c.num_experts; ++e)
    out.moe.experts.push_back(load_swiglu_mlp(w, m + ".experts." + std::to_string(e), c.hidden_size,
                                              c.moe_intermediate_size, "w1", "w3", "w2"));
  finish_moe(out.moe);
}

std::unique_ptr<Model> load_mixtral(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = false, .qk_norm = false}, load_block_sparse_moe);
}

}  // namespace

// MixtralConfig
extern constinit const Architecture kMixtral{
    .model_type = "mixtral",
    .causal_lm_class = "MixtralForCausalLM",
    .defaults = {.num_key_value_heads = 8,
                 .max_position_embeddings = 131072,
                 .rms_norm_eps = 1e-5,
                 .rope_theta = 1e6,
                 .bos_token_id = 1,
                 .eos_token_id = 2,
                 .bias = BiasRule::Never,
                 .sliding = SlidingRule::EveryLayer,
                 .sliding_window = 0,
                 .moe = MoeLayout::Mixtral,
                 .num_experts = 8,
                 .num_experts_per_tok = 2},
    .load = load_mixtral,
};

}  // namespace inferdesk
