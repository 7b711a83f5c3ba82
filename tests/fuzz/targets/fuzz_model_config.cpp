// config.json and generation_config.json: the text is parsed leniently (duplicate keys allowed,
// which ModelFolder::open refuses, so the readers after it see more shapes), then read as both
// files, and the rotary embedding of an accepted config is derived (rope_scaling's arithmetic runs
// on untrusted numbers). Input: one JSON document.
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/model/config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  const std::optional<nlohmann::json> parsed = fuzz::parse_config_json(data, size);
  if (!parsed) return 0;
  const nlohmann::json& j = *parsed;
  fuzz::expect_typed_errors([&] {
    const ModelConfig config = ModelConfig::from_json(j);
    (void)make_rope_config(config);
    for (int64_t i = 0; i < config.num_hidden_layers && i < 1024; ++i) (void)config.is_moe_layer(i);
  });
  fuzz::expect_typed_errors([&] { (void)GenerationConfig::from_json(j); });
  return 0;
}
