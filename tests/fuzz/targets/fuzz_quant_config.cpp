// quantization_config of every quantized format (fp8, compressed-tensors, awq, gptq): parsed by
// QuantConfig::from_json, then asked what the loader asks (the scheme of each projection, the
// scale tensor names, the description), so that fuzzed targets / ignore lists (including "re:"
// regexes) run through module_matches. Input: a config.json (its "quantization_config" is used)
// or a bare quantization_config object.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/model/quant_config.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// Module names of a small MoE decoder, as the loader asks about them.
const char* const kModules[] = {
    "model.layers.0.self_attn.q_proj",
    "model.layers.0.self_attn.k_proj",
    "model.layers.0.self_attn.v_proj",
    "model.layers.0.self_attn.o_proj",
    "model.layers.0.mlp.gate_proj",
    "model.layers.0.mlp.up_proj",
    "model.layers.1.mlp.down_proj",
    "model.layers.1.mlp.experts.7.w1",
    "model.layers.1.mlp.gate",
    "lm_head",
    "model.embed_tokens",
    "model.layers.12.mlp.shared_expert.up_proj",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  const std::optional<nlohmann::json> parsed = fuzz::parse_config_json(data, size);
  if (!parsed) return 0;
  const nlohmann::json& j = *parsed;
  const nlohmann::json& qc = j.is_object() && j.contains("quantization_config") ? j["quantization_config"] : j;
  fuzz::expect_typed_errors([&] {
    const QuantConfig config = QuantConfig::from_json(qc);
    (void)config.describe();
    for (const char* m : kModules) {
      (void)config.scheme_for(m);
      (void)config.weight_scale_name(m);
      (void)config.input_scale_name(m);
      (void)is_projection_module(m);
      (void)weight_module(std::string(m) + ".weight");
    }
  });
  return 0;
}
