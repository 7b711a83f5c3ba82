// Qwen3-MoE: Qwen3 attention (q/k norm, optional bias) with routed experts and no shared expert;
// norm_topk_prob decides whether the top-k weights are renormalised.
#include "core/model/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_qwen3_moe(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = c.attention_bias, .qk_norm = true},
                       load_qwen_moe_mlp);
}

}  // namespace inferdesk
