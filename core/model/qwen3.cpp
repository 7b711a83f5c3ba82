// Qwen3: per-head RMSNorm of q and k before rotary embedding; head_dim may differ from
// hidden_size / num_attention_heads; optional attention bias.
#include "core/model/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_qwen3(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = c.attention_bias, .qk_norm = true},
                       load_dense_mlp);
}

}  // namespace inferdesk
