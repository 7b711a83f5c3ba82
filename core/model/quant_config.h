// The `quantization_config` of a checkpoint's config.json: which linear modules are quantized and
// how (core/backend/quant.h), read from the two FP8 formats the Hub publishes:
//   - compressed-tensors (quant_method "compressed-tensors", format "float-quantized"): config
//     groups of 8-bit float weights (strategy tensor / channel / block) and activations (dynamic
//     token or group, or static tensor), targets ("Linear", names, "re:" regexes), an ignore list,
//     and an optional kv_cache_scheme; scales in `<module>.weight_scale` / `.input_scale`;
//   - block-wise FP8 (quant_method "fp8", weight_block_size [bn, bk], activation_scheme dynamic):
//     Qwen3-*-FP8 and DeepSeek checkpoints, scales in `<module>.weight_scale_inv`.
// A method we do not run, or a field out of range, is a typed error naming it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/backend/quant.h"

namespace inferdesk {

enum class QuantFormat : uint8_t { None, CompressedTensors, Fp8Block };

struct QuantConfig {
  struct Group {
    QuantInfo scheme;                  // scales unset: they come with each tensor
    std::vector<std::string> targets;  // "Linear", module names, or "re:<regex>"
  };
  QuantFormat format = QuantFormat::None;
  std::vector<Group> groups;
  std::vector<std::string> ignore;  // module names or "re:<regex>"
  bool kv_cache_fp8 = false;        // kv_cache_scheme: FP8 K/V with per-layer k_scale / v_scale tensors

  bool quantized() const { return format != QuantFormat::None; }
  // The scheme of linear module `module` (e.g. "model.layers.0.self_attn.q_proj"), or nullopt
  // when it is ignored or no group targets it.
  std::optional<QuantInfo> scheme_for(const std::string& module) const;
  // Names of the scale tensors beside `<module>.weight` in this format.
  std::string weight_scale_name(const std::string& module) const;
  std::string input_scale_name(const std::string& module) const;
  // "compressed-tensors fp8 e4m3 per-channel, dynamic per-token activations" and the like.
  std::string describe() const;

  // Parses config.json's "quantization_config" object. Throws Error: Unsupported for a method or
  // scheme we do not run (naming it), Format for malformed fields.
  static QuantConfig from_json(const nlohmann::json& qc);
};

// The module of a weight tensor: "<module>" for "<module>.weight", "" for any other name.
std::string weight_module(const std::string& name);

// The linear modules quantize-on-load covers, as llm-compressor's FP8_DYNAMIC recipe does: the
// attention and MLP projections and the experts, not lm_head, the embeddings or MoE routers.
bool is_projection_module(const std::string& module);

// Whether `name` matches one of `patterns` (exact module names, or "re:" full-match regexes).
bool module_matches(const std::string& name, const std::vector<std::string>& patterns);

}  // namespace inferdesk
