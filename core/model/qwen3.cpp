// Qwen3: per-head RMSNorm of q and k before rotary embedding; head_dim may differ from
// hidden_size / num_attention_heads; optional attention bias.
#include "core/model/architectures.h"
#include "core/model/decoder.h"

namespace inferdesk {

namespace {

std::unique_ptr<Model> load_qwen3(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = c.attention_bias, .qk_norm = true}, load_dense_mlp);
}

}  // namespace

// Qwen3Config
extern constinit const Architecture kQwen3{
    .model_type = "qwen3",
    .causal_lm_class = "Qwen3ForCausalLM",
    .defaults = {.num_key_value_heads = 32,
                 .head_dim = 128,
                 .max_position_embeddings = 32768,
                 .rms_norm_eps = 1e-6,
                 .rope_theta = 10000.0,
                 .bias = BiasRule::AttentionBias,
                 .qk_norm = true,
                 .sliding = SlidingRule::FromMaxWindow,
                 .sliding_window = 4096},
    .load = load_qwen3,
};

}  // namespace inferdesk
