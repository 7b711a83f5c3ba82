// Qwen3: per-head RMSNorm of q and k before rotary embedding; head_dim may differ from
// hidden_size / num_attention_heads; optional attention bias.
#include "core/layers/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_qwen3(const ModelConfig& c, WeightLoader& w) {
  DecoderWeights d;
  load_embeddings_and_head(w, c, d);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    DecoderLayerWeights l;
    l.attn = load_attention(w, c, p, AttentionNames{.bias = c.attention_bias, .qk_norm = true});
    l.ffn_norm = w.vector(p + ".post_attention_layernorm.weight", c.hidden_size);
    l.dense = load_dense_ffn(w, p + ".mlp", c.hidden_size, c.intermediate_size);
    d.layers.push_back(std::move(l));
  }
  return make_decoder_model(c, std::move(d));
}

}  // namespace inferdesk
