// config.json and generation_config.json: the text is parsed as ModelFolder::open parses it
// (parse_json_lenient), then read as both files, and the rotary embedding of an accepted config is
// derived (rope_scaling's arithmetic runs on untrusted numbers). Input: one JSON document.
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/io/json_util.h"
#include "core/model/config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = parse_json_lenient(text, "config.json");
  } catch (const Error&) {
    return 0;
  }
  fuzz::expect_typed_errors([&] {
    const ModelConfig config = ModelConfig::from_json(j);
    (void)make_rope_config(config);
    for (int64_t i = 0; i < config.num_hidden_layers && i < 1024; ++i) (void)config.is_moe_layer(i);
  });
  fuzz::expect_typed_errors([&] { (void)GenerationConfig::from_json(j); });
  return 0;
}
