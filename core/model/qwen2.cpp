// Qwen2 / Qwen2.5: like Llama with q/k/v biases (always present in this family).
#include "core/model/architectures.h"
#include "core/model/decoder.h"

namespace inferdesk {

namespace {

std::unique_ptr<Model> load_qwen2(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = true, .qk_norm = false}, load_dense_mlp);
}

}  // namespace

// Qwen2Config
extern constinit const Architecture kQwen2{
    .model_type = "qwen2",
    .causal_lm_class = "Qwen2ForCausalLM",
    .defaults = {.num_key_value_heads = 32,
                 .max_position_embeddings = 32768,
                 .rms_norm_eps = 1e-6,
                 .rope_theta = 10000.0,
                 .bias = BiasRule::Always,
                 .sliding = SlidingRule::FromMaxWindow,
                 .sliding_window = 4096},
    .load = load_qwen2,
};

}  // namespace inferdesk
