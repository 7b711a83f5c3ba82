// The `quantization_config` of a checkpoint's config.json: which linear modules are quantized and
// how (core/backend/quant.h), read from the two FP8 formats the Hub publishes:
//   - compressed-tensors (quant_method "compressed-tensors", format "float-quantized"): config
//     groups of 8-bit float weights (strategy tensor / channel / block) and activations (dynamic
//     token or group, or static tensor), targets ("Linear", names, "re:" regexes), an ignore list,
//     and an optional kv_cache_scheme; scales in `<module>.weight_scale` / `.input_scale`;
//   - block-wise FP8 (quant_method "fp8", weight_block_size [bn, bk], activation_scheme dynamic):
//     Qwen3-*-FP8 and DeepSeek checkpoints, scales in `<module>.weight_scale_inv`;
//   - integer weights (quant_config_int.cpp): AWQ (quant_method "awq", version "gemm", 4-bit,
//     group_size, zero_point), GPTQ (quant_method "gptq", bits 4/8, group_size or -1 for
//     per-channel, desc_act, sym, checkpoint_format "gptq" / "gptq_v2"), compressed-tensors
//     "pack-quantized" (W4A16 / W8A16, group or channel) and "int-quantized" (W8A8: int8 channel
//     weights, dynamic per-token int8 activations). How each packs its tensors: core/io/int_weights.h.
// A method we do not run, or a field out of range, is a typed error naming it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/backend/quant.h"

namespace inferdesk {

enum class QuantFormat : uint8_t { None, CompressedTensors, Fp8Block, Awq, Gptq };

// How a checkpoint's integer weights are packed on disk (core/io/int_weights.h reads each).
enum class IntPacking : uint8_t {
  None,
  Awq,       // qweight [K, N/8] int32 in AWQ's interleaved order, qzeros, scales [G, N]
  Gptq,      // qweight [K*bits/32, N], qzeros [G, N*bits/32] holding zero - 1, scales [G, N], g_idx [K]
  GptqV2,    // GPTQModel's gptq_v2: the same with the zero points as they are
  CtPacked,  // compressed-tensors pack-quantized: weight_packed [N, K*bits/32], weight_scale [N, G]
  CtInt8,    // compressed-tensors int-quantized: weight I8 [N, K], weight_scale [N, 1]
};

struct QuantConfig {
  struct Group {
    QuantInfo scheme;                  // scales unset: they come with each tensor
    std::vector<std::string> targets;  // "Linear", module names, or "re:<regex>"
  };
  QuantFormat format = QuantFormat::None;
  std::vector<Group> groups;
  std::vector<std::string> ignore;            // module names or "re:<regex>"
  bool kv_cache_fp8 = false;                  // kv_cache_scheme: FP8 K/V with per-layer k_scale / v_scale tensors
  IntPacking int_packing = IntPacking::None;  // integer weights: how they are packed

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
