// Llama 2/3/3.1/3.2 and Mistral: GQA attention (bias only where attention_bias says so), dense
// SwiGLU FFN. Llama 3 rope scaling and Mistral's sliding window come from the config (rope.cpp,
// layer_sliding_window).
#include "core/model/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_llama(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = c.attention_bias, .qk_norm = false},
                       load_dense_mlp);
}

}  // namespace inferdesk
