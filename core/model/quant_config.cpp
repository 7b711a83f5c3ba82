#include "core/model/quant_config.h"

#include <regex>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/model/quant_config_fields.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using nlohmann::json;
using namespace quant_fields;

// A [bn, bk] block structure: positive, at most 4096 (every published checkpoint uses 128).
void parse_block(const json& v, const std::string& path, QuantInfo& q) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer())
    bad(path, "must be [rows, cols], got " + v.dump());
  const int64_t bn = v[0].get<int64_t>(), bk = v[1].get<int64_t>();
  if (bn <= 0 || bk <= 0 || bn > 4096 || bk > 4096) bad(path, "block sizes must be in 1..4096, got " + v.dump());
  q.block_n = static_cast<int32_t>(bn);
  q.block_k = static_cast<int32_t>(bk);
}

// The 8-bit float weights of a compressed-tensors group.
void parse_ct_weights(const json& w, const std::string& path, QuantInfo& q) {
  if (!w.is_object()) bad(path, "must be an object");
  const std::string type = opt_string(w, "type", path);
  const int64_t bits = opt_int(w, "num_bits", path, 8);
  if (type != "float" || bits != 8)
    unsupported(path + ": " + std::to_string(bits) + "-bit " + (type.empty() ? "?" : type) +
                " weights (InferDesk runs 8-bit float weights in this format)");
  if (!opt_bool(w, "symmetric", path, true)) unsupported(path + ": asymmetric FP8 weights");
  const std::string strategy = opt_string(w, "strategy", path);
  q.scheme = QuantScheme::Fp8;
  if (strategy == "tensor") {
    q.granularity = ScaleGranularity::Tensor;
  } else if (strategy == "channel") {
    q.granularity = ScaleGranularity::Channel;
  } else if (strategy == "block") {
    q.granularity = ScaleGranularity::Block;
    const json* bs = field(w, "block_structure");
    if (!bs) bad(path + ".block_structure", "missing for strategy \"block\"");
    parse_block(*bs, path + ".block_structure", q);
  } else {
    unsupported(path + ".strategy \"" + strategy + "\" for FP8 weights (tensor, channel and block are supported)");
  }
}

// The activations of a compressed-tensors group (absent: weight-only).
void parse_ct_activations(const json* a, const std::string& path, QuantInfo& q) {
  if (!a) {
    q.act = ActQuant::None;
    return;
  }
  if (!a->is_object()) bad(path, "must be an object");
  const std::string type = opt_string(*a, "type", path);
  if (type != "float" || opt_int(*a, "num_bits", path, 8) != 8)
    unsupported(path + ": activations other than 8-bit float with FP8 weights");
  const std::string strategy = opt_string(*a, "strategy", path);
  const bool dynamic = opt_bool(*a, "dynamic", path, false);
  if (dynamic && strategy == "token") {
    q.act = ActQuant::DynamicToken;
  } else if (dynamic && strategy == "group") {
    const int64_t g = opt_int(*a, "group_size", path, 0);
    if (q.granularity != ScaleGranularity::Block || g != q.block_k)
      unsupported(path + ": group activations need block weights of the same width");
    q.act = ActQuant::DynamicGroup;
  } else if (!dynamic && strategy == "tensor") {
    q.act = ActQuant::Static;
  } else {
    unsupported(path + ": " + (dynamic ? "dynamic" : "static") + " activations with strategy \"" + strategy + "\"");
  }
  if (q.granularity == ScaleGranularity::Block && q.act != ActQuant::DynamicGroup)
    unsupported(path + ": block weights need dynamic group activations");
}

void parse_compressed_tensors(const json& qc, QuantConfig& c) {
  const std::string format = opt_string(qc, "format", "quantization_config");
  if (format != "float-quantized" && format != "naive-quantized" && format != "pack-quantized" &&
      format != "int-quantized")
    unsupported("compressed-tensors format \"" + format +
                "\" (InferDesk runs \"float-quantized\", \"naive-quantized\", \"pack-quantized\" and "
                "\"int-quantized\" checkpoints)");
  const json* groups = field(qc, "config_groups");
  if (!groups || !groups->is_object() || groups->empty()) bad("config_groups", "missing or empty");
  for (auto it = groups->begin(); it != groups->end(); ++it) {
    const std::string path = "config_groups." + it.key();
    if (!it->is_object()) bad(path, "must be an object");
    QuantConfig::Group g;
    const json* w = field(*it, "weights");
    if (!w) bad(path + ".weights", "missing");
    if (w->is_object() && opt_string(*w, "type", path + ".weights") == "int") {
      quant_int::parse_ct_int_group(*w, field(*it, "input_activations"), path, format, g.scheme);
      const IntPacking p = format == "pack-quantized" ? IntPacking::CtPacked : IntPacking::CtInt8;
      if (c.int_packing != IntPacking::None && c.int_packing != p) unsupported(path + ": mixed integer packings");
      c.int_packing = p;
    } else {
      if (format == "pack-quantized" || format == "int-quantized")
        unsupported(path + ".weights: format \"" + format + "\" holds integer weights, not " + w->dump());
      parse_ct_weights(*w, path + ".weights", g.scheme);
      parse_ct_activations(field(*it, "input_activations"), path + ".input_activations", g.scheme);
    }
    g.targets = string_list(*it, "targets", path);
    if (g.targets.empty()) bad(path + ".targets", "missing or empty");
    c.groups.push_back(std::move(g));
  }
  c.ignore = string_list(qc, "ignore", "quantization_config");
  if (const json* kv = field(qc, "kv_cache_scheme")) {
    if (!kv->is_object() || opt_string(*kv, "type", "kv_cache_scheme") != "float" ||
        opt_int(*kv, "num_bits", "kv_cache_scheme", 8) != 8)
      unsupported("kv_cache_scheme " + kv->dump() + " (InferDesk runs 8-bit float K/V)");
    c.kv_cache_fp8 = true;
  }
}

void parse_fp8_block(const json& qc, QuantConfig& c) {
  const std::string fmt = opt_string(qc, "fmt", "quantization_config");
  if (!fmt.empty() && fmt != "e4m3") unsupported("fp8 fmt \"" + fmt + "\" (e4m3 is supported)");
  const std::string act = opt_string(qc, "activation_scheme", "quantization_config");
  if (!act.empty() && act != "dynamic") unsupported("fp8 activation_scheme \"" + act + "\" (dynamic is supported)");
  QuantConfig::Group g;
  g.scheme.scheme = QuantScheme::Fp8;
  const json* bs = field(qc, "weight_block_size");
  if (!bs) unsupported("quant_method \"fp8\" without weight_block_size (per-tensor fp8 checkpoints)");
  g.scheme.granularity = ScaleGranularity::Block;
  parse_block(*bs, "weight_block_size", g.scheme);
  g.scheme.act = ActQuant::DynamicGroup;
  g.targets = {"Linear"};
  c.groups.push_back(std::move(g));
  c.ignore = string_list(qc, "modules_to_not_convert", "quantization_config");
}

}  // namespace

std::string weight_module(const std::string& name) {
  constexpr std::string_view kSuffix = ".weight";
  if (name.size() <= kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return "";
  return name.substr(0, name.size() - kSuffix.size());
}

bool is_projection_module(const std::string& module) {
  const size_t dot = module.rfind('.');
  const std::string last = dot == std::string::npos ? module : module.substr(dot + 1);
  for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3"})
    if (last == p) return true;
  return false;
}

bool module_matches(const std::string& name, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    if (p.rfind("re:", 0) == 0) {
      try {
        if (std::regex_match(name, std::regex(p.substr(3)))) return true;
      } catch (const std::regex_error&) {
        throw Error(ErrorCode::Format, "quantization_config: pattern \"" + p + "\" is not a valid regex");
      }
    } else if (p == name) {
      return true;
    }
  }
  return false;
}

std::optional<QuantInfo> QuantConfig::scheme_for(const std::string& module) const {
  if (!quantized() || module_matches(module, ignore)) return std::nullopt;
  // modules_to_not_convert and ignore lists often name a module's last part only ("lm_head").
  const size_t dot = module.rfind('.');
  if (dot != std::string::npos && module_matches(module.substr(dot + 1), ignore)) return std::nullopt;
  for (const Group& g : groups) {
    for (const std::string& t : g.targets)
      if (t == "Linear" || module_matches(module, {t})) return g.scheme;
  }
  return std::nullopt;
}

std::string QuantConfig::weight_scale_name(const std::string& module) const {
  return module + (format == QuantFormat::Fp8Block ? ".weight_scale_inv" : ".weight_scale");
}

std::string QuantConfig::input_scale_name(const std::string& module) const { return module + ".input_scale"; }

std::string QuantConfig::describe() const {
  if (!quantized()) return "none";
  std::string s = format == QuantFormat::CompressedTensors ? "compressed-tensors: "
                  : format == QuantFormat::Awq             ? "awq: "
                  : format == QuantFormat::Gptq            ? "gptq: "
                                                           : "fp8 checkpoint: ";
  for (size_t i = 0; i < groups.size(); ++i) s += (i ? "; " : "") + inferdesk::describe(groups[i].scheme);
  if (kv_cache_fp8) s += "; fp8 kv cache";
  return s;
}

QuantConfig QuantConfig::from_json(const json& qc) {
  if (!qc.is_object()) bad("quantization_config", "must be an object");
  const std::string method = opt_string(qc, "quant_method", "quantization_config");
  QuantConfig c;
  if (method == "compressed-tensors") {
    c.format = QuantFormat::CompressedTensors;
    parse_compressed_tensors(qc, c);
  } else if (method == "fp8") {
    c.format = QuantFormat::Fp8Block;
    parse_fp8_block(qc, c);
  } else if (method == "awq") {
    c.format = QuantFormat::Awq;
    quant_int::parse_awq(qc, c);
  } else if (method == "gptq") {
    c.format = QuantFormat::Gptq;
    quant_int::parse_gptq(qc, c);
  } else {
    unsupported("quant_method \"" + method +
                "\" is not supported (InferDesk runs \"compressed-tensors\", block-wise \"fp8\", \"awq\" and "
                "\"gptq\" checkpoints)");
  }
  return c;
}

}  // namespace inferdesk
