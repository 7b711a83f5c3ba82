// Qwen2-MoE (Qwen1.5-MoE): Qwen2 attention (q/k/v bias); MoE layers per decoder_sparse_step and
// mlp_only_layers, each with routed experts plus a shared expert scaled by sigmoid(shared_expert_gate).
#include "core/layers/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_qwen2_moe(const ModelConfig& c, WeightLoader& w) {
  DecoderWeights d;
  load_embeddings_and_head(w, c, d);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    DecoderLayerWeights l;
    l.attn = load_attention(w, c, p, AttentionNames{.bias = true, .qk_norm = false});
    l.ffn_norm = w.vector(p + ".post_attention_layernorm.weight", c.hidden_size);
    l.is_moe = c.is_moe_layer(i);
    if (!l.is_moe) {
      l.dense = load_dense_ffn(w, p + ".mlp", c.hidden_size, c.intermediate_size);
    } else {
      const std::string m = p + ".mlp";
      l.moe.router = w.matrix(m + ".gate.weight", c.num_experts, c.hidden_size);
      for (int64_t e = 0; e < c.num_experts; ++e)
        l.moe.experts.push_back(load_dense_ffn(w, m + ".experts." + std::to_string(e),
                                               c.hidden_size, c.moe_intermediate_size));
      if (c.shared_expert_intermediate_size > 0) {
        l.moe.shared = load_dense_ffn(w, m + ".shared_expert", c.hidden_size,
                                      c.shared_expert_intermediate_size);
        l.moe.shared_gate = w.matrix(m + ".shared_expert_gate.weight", 1, c.hidden_size);
      }
      finish_moe(l.moe);
    }
    d.layers.push_back(std::move(l));
  }
  return make_decoder_model(c, std::move(d));
}

}  // namespace inferdesk
