// Qwen2-MoE (Qwen1.5-MoE): Qwen2 attention (q/k/v bias); MoE layers per decoder_sparse_step and
// mlp_only_layers, each with routed experts plus a shared expert scaled by
// sigmoid(shared_expert_gate); norm_topk_prob decides whether top-k weights are renormalised.
#include "core/model/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_qwen2_moe(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = true, .qk_norm = false}, load_qwen_moe_mlp);
}

}  // namespace inferdesk
