// model_type → architecture. Adding a family = one new file (core/model/<arch>.cpp, defining its
// Architecture) + its line here.
#include <algorithm>
#include <iterator>

#include "core/model/architectures.h"
#include "core/util/error.h"

namespace inferdesk {

extern const Architecture kLlama, kMistral;  // llama.cpp
extern const Architecture kQwen2;            // qwen2.cpp
extern const Architecture kQwen3;            // qwen3.cpp
extern const Architecture kMixtral;          // mixtral.cpp
extern const Architecture kQwen2Moe;         // qwen2_moe.cpp
extern const Architecture kQwen3Moe;         // qwen3_moe.cpp

namespace {

constexpr const Architecture* kRegistry[] = {
    &kLlama, &kMistral, &kQwen2, &kQwen3, &kMixtral, &kQwen2Moe, &kQwen3Moe,
};

}  // namespace

std::span<const Architecture* const> architectures() { return kRegistry; }

const Architecture* find_architecture(std::string_view model_type) {
  const auto* it = std::find_if(std::begin(kRegistry), std::end(kRegistry),
                                [&](const Architecture* a) { return a->model_type == model_type; });
  return it == std::end(kRegistry) ? nullptr : *it;
}

std::string supported_model_types_list() {
  std::string list;
  for (const Architecture* a : kRegistry) list += (list.empty() ? "" : ", ") + std::string(a->model_type);
  return list;
}

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const Architecture* a : kRegistry) out.emplace_back(a->model_type);
  return out;
}

std::unique_ptr<Model> load_model(const ModelConfig& config, WeightSource& weights, Backend& backend,
                                  const LoadProgress& progress) {
  const Architecture* arch = find_architecture(config.model_type);
  if (!arch) {
    throw Error(ErrorCode::Unsupported, "model_type '" + config.model_type +
                                            "' is not supported (supported: " + supported_model_types_list() + ")");
  }
  WeightLoader loader(weights, backend, progress);
  std::unique_ptr<Model> model = arch->load(config, loader);
  backend.init_expert_counters(static_cast<int32_t>(config.num_hidden_layers),
                               static_cast<int32_t>(std::max<int64_t>(config.num_experts, 1)));
  return model;
}

}  // namespace inferdesk
