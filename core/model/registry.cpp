// model_type → architecture loader. Adding a family = one new file + one row here.
#include <algorithm>

#include "core/model/architectures.h"
#include "core/util/error.h"

namespace inferdesk {

namespace {

using Loader = std::unique_ptr<Model> (*)(const ModelConfig&, WeightLoader&);

struct Entry {
  const char* model_type;
  Loader load;
};

constexpr Entry kRegistry[] = {
    {"llama", load_llama},     {"mistral", load_llama},       {"qwen2", load_qwen2},
    {"qwen3", load_qwen3},     {"mixtral", load_mixtral},     {"qwen2_moe", load_qwen2_moe},
    {"qwen3_moe", load_qwen3_moe},
};

}  // namespace

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const Entry& e : kRegistry) out.emplace_back(e.model_type);
  return out;
}

std::unique_ptr<Model> load_model(const ModelConfig& config, WeightSource& weights,
                                  Backend& backend, const LoadProgress& progress) {
  const auto* it = std::find_if(std::begin(kRegistry), std::end(kRegistry), [&](const Entry& e) {
    return config.model_type == e.model_type;
  });
  if (it == std::end(kRegistry)) {
    std::string list;
    for (const Entry& e : kRegistry) list += std::string(list.empty() ? "" : ", ") + e.model_type;
    throw Error(ErrorCode::Unsupported, "model_type '" + config.model_type +
                                            "' is not supported (supported: " + list + ")");
  }
  WeightLoader loader(weights, backend, progress);
  std::unique_ptr<Model> model = it->load(config, loader);
  backend.init_expert_counters(static_cast<int32_t>(config.num_hidden_layers),
                               static_cast<int32_t>(std::max<int64_t>(config.num_experts, 1)));
  return model;
}

}  // namespace inferdesk
