// Llama 2/3/3.1/3.2 and Mistral: GQA attention (bias only where attention_bias says so), dense
// SwiGLU FFN. Llama 3 rope scaling and Mistral's sliding window come from the config (rope.cpp,
// layer_sliding_window).
#include "core/model/architectures.h"
#include "core/model/decoder.h"

namespace inferdesk {

namespace {

std::unique_ptr<Model> load_llama(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = c.attention_bias, .qk_norm = false}, load_dense_mlp);
}

}  // namespace

// LlamaConfig
extern constinit const Architecture kLlama{
    .model_type = "llama",
    .causal_lm_class = "LlamaForCausalLM",
    .defaults = {.num_key_value_heads = -1,
                 .max_position_embeddings = 2048,
                 .rms_norm_eps = 1e-6,
                 .rope_theta = 10000.0,
                 .bos_token_id = 1,
                 .eos_token_id = 2,
                 .bias = BiasRule::AttentionBias},
    .load = load_llama,
};

// MistralConfig: Llama's layers without biases, a sliding window on every layer.
extern constinit const Architecture kMistral{
    .model_type = "mistral",
    .causal_lm_class = "MistralForCausalLM",
    .defaults = {.num_key_value_heads = 8,
                 .max_position_embeddings = 131072,
                 .rms_norm_eps = 1e-6,
                 .rope_theta = 10000.0,
                 .bos_token_id = 1,
                 .eos_token_id = 2,
                 .bias = BiasRule::Never,
                 .sliding = SlidingRule::EveryLayer,
                 .sliding_window = 4096},
    .load = load_llama,
};

}  // namespace inferdesk
