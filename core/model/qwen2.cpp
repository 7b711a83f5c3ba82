// Qwen2 / Qwen2.5: like Llama with q/k/v biases (always present in this family).
#include "core/model/decoder.h"
#include "core/model/architectures.h"

namespace inferdesk {

std::unique_ptr<Model> load_qwen2(const ModelConfig& c, WeightLoader& w) {
  return build_decoder(w, c, AttentionNames{.bias = true, .qk_norm = false}, load_dense_mlp);
}

}  // namespace inferdesk
