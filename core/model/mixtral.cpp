// Mixtral: Mistral attention with a sparse MoE FFN in every layer. Router softmax → top-k →
// renormalised weights; experts stored one by one as block_sparse_moe.experts.N.{w1,w3,w2}
// (w1 = gate, w3 = up, w2 = down).
#include "core/layers/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_mixtral(const ModelConfig& c, WeightLoader& w) {
  DecoderWeights d;
  load_embeddings_and_head(w, c, d);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    DecoderLayerWeights l;
    l.attn = load_attention(w, c, p, AttentionNames{.bias = false, .qk_norm = false});
    l.ffn_norm = w.vector(p + ".post_attention_layernorm.weight", c.hidden_size);
    l.is_moe = true;
    const std::string m = p + ".block_sparse_moe";
    l.moe.router = w.matrix(m + ".gate.weight", c.num_experts, c.hidden_size);
    for (int64_t e = 0; e < c.num_experts; ++e)
      l.moe.experts.push_back(load_dense_ffn(w, m + ".experts." + std::to_string(e), c.hidden_size,
                                             c.moe_intermediate_size, "w1", "w3", "w2"));
    finish_moe(l.moe);
    d.layers.push_back(std::move(l));
  }
  return make_decoder_model(c, std::move(d));
}

}  // namespace inferdesk
