// The integer formats of quantization_config (quant_config.h): AWQ, GPTQ and compressed-tensors'
// integer groups, each read into a QuantInfo of scheme Int (core/backend/quant.h). Field names are
// the ones the Hub's configs use (AutoAWQ, AutoGPTQ / GPTQModel via transformers, llm-compressor).
#include <nlohmann/json.hpp>

#include "core/model/quant_config.h"
#include "core/model/quant_config_fields.h"

namespace inferdesk::quant_int {
namespace {

using nlohmann::json;
using namespace quant_fields;

constexpr int64_t kMaxGroupSize = 1 << 16;

// group_size > 0: groups of that many input columns; -1 (GPTQ) or strategy channel: per channel.
void set_groups(int64_t group_size, const std::string& path, QuantInfo& q) {
  if (group_size == -1) {
    q.granularity = ScaleGranularity::Channel;
    q.group_size = 0;
    return;
  }
  if (group_size <= 0 || group_size > kMaxGroupSize || group_size % 2 != 0)
    bad(path, "must be -1 (per channel) or an even group size in 2.." + std::to_string(kMaxGroupSize) + ", got " +
                  std::to_string(group_size));
  q.granularity = ScaleGranularity::Group;
  q.group_size = static_cast<int32_t>(group_size);
}

int32_t bits_of(const json& j, const char* key, const std::string& path, std::initializer_list<int> allowed) {
  const json* v = field(j, key);
  if (!v) bad(path + "." + key, "missing");
  const int64_t b = opt_int(j, key, path, 0);
  for (int a : allowed)
    if (b == a) return static_cast<int32_t>(b);
  unsupported(path + "." + key + " = " + std::to_string(b) + " (InferDesk runs " +
              (allowed.size() == 1 ? "4" : "4 and 8") + "-bit integer weights here)");
}

}  // namespace

void parse_awq(const json& qc, QuantConfig& c) {
  const std::string version = opt_string(qc, "version", "quantization_config");
  if (version != "gemm" && version != "GEMM")
    unsupported("awq version \"" + version + "\" (InferDesk runs the \"gemm\" packing)");
  QuantConfig::Group g;
  g.scheme.scheme = QuantScheme::Int;
  // AutoAWQ writes "bits" (transformers' AwqConfig) or "w_bit" (its own quant_config.json).
  g.scheme.bits = bits_of(qc, field(qc, "bits") ? "bits" : "w_bit", "quantization_config", {4});
  const char* gkey = field(qc, "group_size") ? "group_size" : "q_group_size";
  if (!field(qc, gkey)) bad("quantization_config.group_size", "missing");
  const int64_t gs = opt_int(qc, gkey, "quantization_config", 0);
  if (gs == -1) unsupported("awq group_size -1 (AWQ GEMM checkpoints are grouped)");
  set_groups(gs, std::string("quantization_config.") + gkey, g.scheme);
  g.scheme.has_zero_point = opt_bool(qc, "zero_point", "quantization_config", true);
  if (!g.scheme.has_zero_point) unsupported("awq zero_point false (AWQ GEMM checkpoints have zero points)");
  g.targets = {"Linear"};
  c.groups.push_back(std::move(g));
  c.ignore = string_list(qc, "modules_to_not_convert", "quantization_config");
  c.int_packing = IntPacking::Awq;
}

void parse_gptq(const json& qc, QuantConfig& c) {
  QuantConfig::Group g;
  g.scheme.scheme = QuantScheme::Int;
  g.scheme.bits = bits_of(qc, "bits", "quantization_config", {4, 8});
  if (!field(qc, "group_size")) bad("quantization_config.group_size", "missing");
  set_groups(opt_int(qc, "group_size", "quantization_config", 0), "quantization_config.group_size", g.scheme);
  g.scheme.act_order = opt_bool(qc, "desc_act", "quantization_config", false);
  // Both conventions keep zero points in qzeros; symmetric ones hold 2^(bits-1) there.
  g.scheme.has_zero_point = !opt_bool(qc, "sym", "quantization_config", true);
  if (opt_bool(qc, "lm_head", "quantization_config", false)) unsupported("gptq lm_head true (a quantized lm_head)");
  const std::string fmt = opt_string(qc, "checkpoint_format", "quantization_config");
  if (fmt.empty() || fmt == "gptq") {
    c.int_packing = IntPacking::Gptq;
  } else if (fmt == "gptq_v2") {
    c.int_packing = IntPacking::GptqV2;
  } else {
    unsupported("gptq checkpoint_format \"" + fmt + "\" (InferDesk runs \"gptq\" and \"gptq_v2\")");
  }
  g.targets = {"Linear"};
  c.groups.push_back(std::move(g));
  c.ignore = string_list(qc, "modules_to_not_convert", "quantization_config");
}

void parse_ct_int_group(const json& w, const json* a, const std::string& path, const std::string& format,
                        QuantInfo& q) {
  const std::string wp = path + ".weights";
  q.scheme = QuantScheme::Int;
  const bool packed = format == "pack-quantized";
  q.bits = bits_of(w, "num_bits", wp, packed ? std::initializer_list<int>{4, 8} : std::initializer_list<int>{8});
  if (!opt_bool(w, "symmetric", wp, true)) unsupported(wp + ": asymmetric compressed-tensors integer weights");
  if (opt_bool(w, "dynamic", wp, false)) unsupported(wp + ": dynamic weight quantization");
  if (!opt_string(w, "actorder", wp).empty())
    unsupported(wp + ".actorder (activation-ordered compressed-tensors checkpoints)");
  const std::string strategy = opt_string(w, "strategy", wp);
  if (strategy == "channel") {
    set_groups(-1, wp, q);
  } else if (strategy == "group" && packed) {
    if (!field(w, "group_size")) bad(wp + ".group_size", "missing for strategy \"group\"");
    set_groups(opt_int(w, "group_size", wp, 0), wp + ".group_size", q);
  } else {
    unsupported(wp + ".strategy \"" + strategy + "\" for " + format + " weights (" +
                (packed ? "group and channel" : "channel") + " are supported)");
  }
  if (!a) {
    q.act = ActQuant::None;
    return;
  }
  const std::string ap = path + ".input_activations";
  if (!a->is_object()) bad(ap, "must be an object");
  const bool int8_tokens = opt_string(*a, "type", ap) == "int" && opt_int(*a, "num_bits", ap, 0) == 8 &&
                           opt_string(*a, "strategy", ap) == "token" && opt_bool(*a, "dynamic", ap, false) &&
                           opt_bool(*a, "symmetric", ap, true);
  if (packed || q.bits != 8 || !int8_tokens)
    unsupported(ap + " " + a->dump() +
                " (InferDesk runs int8 weights with dynamic symmetric per-token int8 activations, or weight-only)");
  q.act = ActQuant::DynamicToken;
}

}  // namespace inferdesk::quant_int
