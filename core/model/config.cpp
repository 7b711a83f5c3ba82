// ModelConfig / GenerationConfig parsing. Keys a config.json leaves out take the defaults of the
// family's transformers config class, which its architecture file declares (ConfigDefaults in
// core/model/architectures.h); the core sizes are required.
#include "core/model/config.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/layers/rope.h"
#include "core/model/architectures.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& reason) {
  throw Error(ErrorCode::Format, "field \"" + field + "\": " + reason);
}

const json* lookup(const json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}

std::optional<int64_t> opt_int(const json& j, const char* key) {
  const json* v = lookup(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad(key, "integer too large");
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (!v->is_number_integer()) bad(key, "must be an integer, got " + v->dump());
  return v->get<int64_t>();
}

int64_t required_int(const json& j, const char* key) {
  auto v = opt_int(j, key);
  if (!v) bad(key, "missing (required)");
  return *v;
}

std::optional<double> opt_double(const json& j, const char* key) {
  const json* v = lookup(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(key, "must be a number, got " + v->dump());
  double d = v->get<double>();
  if (!std::isfinite(d)) bad(key, "must be finite");
  return d;
}

bool opt_bool(const json& j, const char* key, bool def) {
  const json* v = lookup(j, key);
  if (!v) return def;
  if (!v->is_boolean()) bad(key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

std::string opt_string(const json& j, const char* key) {
  const json* v = lookup(j, key);
  if (!v) return "";
  if (!v->is_string()) bad(key, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

void check_range(const char* key, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    bad(key, "value " + std::to_string(v) + " is outside the supported range [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]");
  }
}

// eos_token_id: an int, a list of ints, or null.
std::vector<int64_t> token_id_list(const json& j, const char* key) {
  const json* v = lookup(j, key);
  std::vector<int64_t> out;
  if (!v) return out;
  auto one = [&](const json& x) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0) {
      bad(key, "token ids must be non-negative integers, got " + x.dump());
    }
    out.push_back(x.get<int64_t>());
  };
  if (v->is_array()) {
    if (v->size() > 1024) bad(key, "too many token ids");
    for (const auto& x : *v) one(x);
  } else {
    one(*v);
  }
  return out;
}

int64_t optional_token_id(const json& j, const char* key) {
  auto v = opt_int(j, key);
  if (!v) return -1;
  if (*v < 0) bad(key, "must be a non-negative token id or null");
  return *v;
}

// The family of j's model_type (core/model/architectures.h), or Unsupported naming the supported.
const Architecture& find_family(const json& j) {
  const json* v = lookup(j, "model_type");
  if (!v || !v->is_string()) bad("model_type", "missing or not a string");
  const auto& type = v->get_ref<const std::string&>();
  if (const Architecture* a = find_architecture(type)) return *a;
  throw Error(ErrorCode::Unsupported, "field \"model_type\": \"" + type +
                                          "\" is not supported (supported: " + supported_model_types_list() + ")");
}

// ---- sections ------------------------------------------------------------------------------

void parse_sizes(const json& j, const ConfigDefaults& d, ModelConfig& c) {
  c.vocab_size = required_int(j, "vocab_size");
  c.hidden_size = required_int(j, "hidden_size");
  c.intermediate_size = required_int(j, "intermediate_size");
  c.num_hidden_layers = required_int(j, "num_hidden_layers");
  c.num_attention_heads = required_int(j, "num_attention_heads");
  check_range("vocab_size", c.vocab_size, 1, 4'000'000);
  check_range("hidden_size", c.hidden_size, 1, 65536);
  check_range("intermediate_size", c.intermediate_size, 1, 1 << 20);
  check_range("num_hidden_layers", c.num_hidden_layers, 1, 1024);
  check_range("num_attention_heads", c.num_attention_heads, 1, 4096);

  // Absent -> the class default; explicit null -> num_attention_heads (as the classes do).
  int64_t kv_default = d.num_key_value_heads < 0 ? c.num_attention_heads : d.num_key_value_heads;
  if (j.contains("num_key_value_heads") && j["num_key_value_heads"].is_null()) {
    kv_default = c.num_attention_heads;
  }
  c.num_key_value_heads = opt_int(j, "num_key_value_heads").value_or(kv_default);
  check_range("num_key_value_heads", c.num_key_value_heads, 1, c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    bad("num_key_value_heads", "num_attention_heads (" + std::to_string(c.num_attention_heads) +
                                   ") is not divisible by num_key_value_heads (" +
                                   std::to_string(c.num_key_value_heads) + ")");
  }
  // head_dim: explicit when non-null; absent -> the class default (qwen3: 128); else derived.
  std::optional<int64_t> hd = opt_int(j, "head_dim");
  if (!hd && d.head_dim > 0 && !j.contains("head_dim")) hd = d.head_dim;
  if (hd) {
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      bad("hidden_size", "hidden_size (" + std::to_string(c.hidden_size) +
                             ") is not divisible by num_attention_heads (" + std::to_string(c.num_attention_heads) +
                             ") and no head_dim is given");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  check_range("head_dim", c.head_dim, 2, 1024);
  if (c.head_dim % 2 != 0) bad("head_dim", "must be even for rotary embeddings");
  c.max_position_embeddings = opt_int(j, "max_position_embeddings").value_or(d.max_position_embeddings);
  check_range("max_position_embeddings", c.max_position_embeddings, 1, int64_t{1} << 27);
}

void parse_misc(const json& j, const ConfigDefaults& d, ModelConfig& c) {
  if (const json* a = lookup(j, "architectures")) {
    if (!a->is_array()) bad("architectures", "must be a list of strings");
    if (!a->empty()) {
      if (!(*a)[0].is_string()) bad("architectures", "must be a list of strings");
      c.architecture = (*a)[0].get<std::string>();
    }
  }
  c.torch_dtype = opt_string(j, "torch_dtype");
  if (c.torch_dtype.empty()) c.torch_dtype = opt_string(j, "dtype");  // transformers 5 name
  std::string act = opt_string(j, "hidden_act");
  if (act.empty() || act == "swish") act = "silu";
  if (act != "silu") {
    throw Error(ErrorCode::Unsupported,
                "field \"hidden_act\": activation \"" + act + "\" is not supported (only silu)");
  }
  c.hidden_act = act;
  c.rms_norm_eps = opt_double(j, "rms_norm_eps").value_or(d.rms_norm_eps);
  if (!(c.rms_norm_eps > 0 && c.rms_norm_eps < 1)) bad("rms_norm_eps", "must be in (0, 1)");
  c.tie_word_embeddings = opt_bool(j, "tie_word_embeddings", false);
  switch (d.bias) {
    case BiasRule::AttentionBias: c.attention_bias = opt_bool(j, "attention_bias", false); break;
    case BiasRule::QkvBias: c.attention_bias = opt_bool(j, "qkv_bias", true); break;
    case BiasRule::Always: c.attention_bias = true; break;
    case BiasRule::Never: c.attention_bias = false; break;
  }
  c.qk_norm = d.qk_norm;
  c.eos_token_ids = j.contains("eos_token_id") ? token_id_list(j, "eos_token_id") : std::vector<int64_t>{};
  if (!j.contains("eos_token_id") && d.eos_token_id >= 0) c.eos_token_ids = {d.eos_token_id};
  c.bos_token_id = j.contains("bos_token_id") ? optional_token_id(j, "bos_token_id") : d.bos_token_id;
}

double required_rope_double(const json& r, const char* key, const std::string& type) {
  auto v = opt_double(r, key);
  if (!v) bad(std::string("rope_scaling.") + key, "required for rope type \"" + type + "\"");
  return *v;
}

// rope_theta and rope_scaling; transformers 5 folds both into rope_parameters.
void parse_rope(const json& j, const ConfigDefaults& d, ModelConfig& c) {
  const json* params = lookup(j, "rope_parameters");
  const json* scaling = params ? params : lookup(j, "rope_scaling");
  if (params && !params->is_object()) bad("rope_parameters", "must be an object");
  if (scaling && !scaling->is_object()) bad("rope_scaling", "must be an object or null");
  if (params && !params->contains("rope_type") && !params->contains("rope_theta") &&
      (params->contains("full_attention") || params->contains("sliding_attention"))) {
    throw Error(ErrorCode::Unsupported, "field \"rope_parameters\": per-layer-type rope parameters are not supported");
  }
  std::optional<double> theta = params ? opt_double(*params, "rope_theta") : std::nullopt;
  if (!theta) theta = opt_double(j, "rope_theta");
  c.rope_theta = theta.value_or(d.rope_theta);
  if (!(c.rope_theta > 0)) bad("rope_theta", "must be positive");

  c.rope_scaling = RopeScaling{};
  if (!scaling) return;
  std::string type = opt_string(*scaling, "rope_type");
  if (type.empty()) type = opt_string(*scaling, "type");
  if (type.empty() || type == "default") return;
  if (type == "linear" || type == "llama3") {
    c.rope_scaling.type = type;
    c.rope_scaling.factor = required_rope_double(*scaling, "factor", type);
    if (!(c.rope_scaling.factor > 0)) bad("rope_scaling.factor", "must be positive");
  }
  if (type == "linear") return;
  if (type != "llama3") {
    throw Error(ErrorCode::Unsupported, "field \"rope_scaling\": rope type \"" + type +
                                            "\" is not supported (supported: default, linear, llama3)");
  }
  RopeScaling& r = c.rope_scaling;
  r.low_freq_factor = required_rope_double(*scaling, "low_freq_factor", type);
  r.high_freq_factor = required_rope_double(*scaling, "high_freq_factor", type);
  auto orig = opt_int(*scaling, "original_max_position_embeddings");
  if (!orig) bad("rope_scaling.original_max_position_embeddings", "required for llama3");
  r.original_max_position_embeddings = *orig;
  if (!(r.low_freq_factor > 0 && r.high_freq_factor > r.low_freq_factor)) {
    bad("rope_scaling.high_freq_factor", "llama3 needs 0 < low_freq_factor < high_freq_factor");
  }
  check_range("rope_scaling.original_max_position_embeddings", *orig, 1, int64_t{1} << 27);
}

bool layer_slides(SlidingRule rule, int64_t i, int64_t max_window_layers) {
  switch (rule) {
    case SlidingRule::None: return false;
    case SlidingRule::EveryLayer: return true;
    case SlidingRule::FromMaxWindow: return i >= max_window_layers;
    case SlidingRule::EvenBelowMaxWindow: return i % 2 == 0 && i < max_window_layers;
    case SlidingRule::AllWhenEnabled: return true;
  }
  return false;
}

void parse_sliding(const json& j, const ConfigDefaults& d, ModelConfig& c) {
  const int64_t n = c.num_hidden_layers;
  int64_t window = 0;
  if (d.sliding != SlidingRule::None) {
    window = j.contains("sliding_window") ? opt_int(j, "sliding_window").value_or(0) : d.sliding_window;
    check_range("sliding_window", window, 0, int64_t{1} << 27);
    bool qwen_rule = d.sliding != SlidingRule::EveryLayer;
    if (qwen_rule && !opt_bool(j, "use_sliding_window", false)) window = 0;
  }
  c.layer_sliding_window.assign(static_cast<size_t>(n), 0);
  if (const json* lt = lookup(j, "layer_types")) {
    if (!lt->is_array() || static_cast<int64_t>(lt->size()) != n) {
      bad("layer_types", "must be a list with one entry per layer (" + std::to_string(n) + ")");
    }
    for (int64_t i = 0; i < n; ++i) {
      const json& t = (*lt)[static_cast<size_t>(i)];
      if (t == "sliding_attention") {
        c.layer_sliding_window[static_cast<size_t>(i)] = window;
      } else if (t != "full_attention") {
        throw Error(ErrorCode::Unsupported, "field \"layer_types\": entry " + std::to_string(i) + " is " + t.dump() +
                                                " (supported: full_attention, sliding_attention)");
      }
    }
    return;
  }
  if (window == 0) return;
  const int64_t mwl = opt_int(j, "max_window_layers").value_or(28);
  for (int64_t i = 0; i < n; ++i) {
    if (layer_slides(d.sliding, i, mwl)) c.layer_sliding_window[static_cast<size_t>(i)] = window;
  }
}

void parse_moe(const json& j, const ConfigDefaults& d, ModelConfig& c) {
  if (d.moe == MoeLayout::Dense) return;
  if (d.moe == MoeLayout::Mixtral) {
    c.num_experts = opt_int(j, "num_local_experts").value_or(d.num_experts);
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;  // Mixtral always renormalises the top-k routing weights
  } else {
    c.num_experts = opt_int(j, "num_experts").value_or(d.num_experts);
    c.moe_intermediate_size = opt_int(j, "moe_intermediate_size").value_or(d.moe_intermediate_size);
    c.norm_topk_prob = opt_bool(j, "norm_topk_prob", false);
    if (d.shared_expert) {
      c.shared_expert_intermediate_size = opt_int(j, "shared_expert_intermediate_size")
                                              .value_or(d.shared_expert_intermediate_size);
      check_range("shared_expert_intermediate_size", c.shared_expert_intermediate_size, 0, 1 << 20);
    }
    c.decoder_sparse_step = opt_int(j, "decoder_sparse_step").value_or(1);
    check_range("decoder_sparse_step", c.decoder_sparse_step, 1, c.num_hidden_layers);
    if (const json* m = lookup(j, "mlp_only_layers")) {
      if (!m->is_array()) bad("mlp_only_layers", "must be a list of layer indices");
      for (const auto& x : *m) {
        if (!x.is_number_integer()) bad("mlp_only_layers", "entries must be integers");
        int64_t i = x.get<int64_t>();
        check_range("mlp_only_layers", i, 0, c.num_hidden_layers - 1);
        c.mlp_only_layers.push_back(i);
      }
      std::sort(c.mlp_only_layers.begin(), c.mlp_only_layers.end());
      c.mlp_only_layers.erase(std::unique(c.mlp_only_layers.begin(), c.mlp_only_layers.end()), c.mlp_only_layers.end());
    }
  }
  const char* experts_key = d.moe == MoeLayout::Mixtral ? "num_local_experts" : "num_experts";
  check_range(experts_key, c.num_experts, 1, 4096);
  c.num_experts_per_tok = opt_int(j, "num_experts_per_tok").value_or(d.num_experts_per_tok);
  check_range("num_experts_per_tok", c.num_experts_per_tok, 1, c.num_experts);
  check_range(d.moe == MoeLayout::Mixtral ? "intermediate_size" : "moe_intermediate_size", c.moe_intermediate_size, 1,
              1 << 20);
}

// architectures[0] names the transformers class the weights were saved from: another family's
// class under this model_type (GPT2LMHeadModel with qwen2) would be read with the wrong layout.
void check_architecture(const Architecture& a, const ModelConfig& c) {
  if (c.architecture.empty() || c.architecture == a.causal_lm_class) return;
  throw Error(ErrorCode::Unsupported, "field \"architectures\": \"" + c.architecture +
                                          "\" does not match model_type \"" + std::string(a.model_type) + "\" (a " +
                                          std::string(a.model_type) + " checkpoint is a " +
                                          std::string(a.causal_lm_class) + ")");
}

// Special token ids must name tokens of the vocabulary (an EOS id past it never stops a reply).
void check_special_tokens(const ModelConfig& c) {
  auto check = [&](const char* key, int64_t id) {
    if (id >= 0 && id < c.vocab_size) return;
    bad(key, "token id " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                 std::to_string(c.vocab_size) + ": ids 0.." + std::to_string(c.vocab_size - 1) + ")");
  };
  for (int64_t id : c.eos_token_ids) check("eos_token_id", id);
  if (c.bos_token_id >= 0) check("bos_token_id", c.bos_token_id);
}

}  // namespace

bool ModelConfig::is_moe_layer(int64_t i) const {
  if (num_experts <= 0 || i < 0 || i >= num_hidden_layers) return false;
  if (std::binary_search(mlp_only_layers.begin(), mlp_only_layers.end(), i)) return false;
  return decoder_sparse_step > 0 && (i + 1) % decoder_sparse_step == 0;
}

RopeConfig make_rope_config(const ModelConfig& config) {
  return make_rope_config(config.head_dim, config.rope_theta, config.rope_scaling);
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error(ErrorCode::Format, "config is not a JSON object");
  const Architecture& a = find_family(j);
  const ConfigDefaults& d = a.defaults;
  ModelConfig c;
  c.model_type = std::string(a.model_type);
  parse_sizes(j, d, c);
  parse_misc(j, d, c);
  check_architecture(a, c);
  check_special_tokens(c);
  parse_rope(j, d, c);
  parse_sliding(j, d, c);
  parse_moe(j, d, c);
  if (const json* q = lookup(j, "quantization_config")) c.quantization = QuantConfig::from_json(*q);
  return c;
}

GenerationConfig GenerationConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error(ErrorCode::Format, "generation config is not a JSON object");
  GenerationConfig g;
  g.eos_token_ids = token_id_list(j, "eos_token_id");
  g.bos_token_id = optional_token_id(j, "bos_token_id");
  if (auto v = opt_double(j, "temperature")) {
    if (*v < 0) bad("temperature", "must be >= 0");
    g.temperature = *v;
  }
  if (auto v = opt_double(j, "top_p")) {
    if (!(*v > 0 && *v <= 1)) bad("top_p", "must be in (0, 1]");
    g.top_p = *v;
  }
  if (auto v = opt_int(j, "top_k")) {
    if (*v < 0) bad("top_k", "must be >= 0");
    g.top_k = *v;
  }
  if (auto v = opt_double(j, "repetition_penalty")) {
    if (!(*v > 0)) bad("repetition_penalty", "must be > 0");
    g.repetition_penalty = *v;
  }
  if (auto v = opt_double(j, "min_p")) {
    if (!(*v >= 0 && *v <= 1)) bad("min_p", "must be in [0, 1]");
    g.min_p = *v;
  }
  if (auto v = opt_int(j, "max_new_tokens")) {
    if (*v < 1) bad("max_new_tokens", "must be >= 1");
    g.max_new_tokens = *v;
  }
  return g;
}

}  // namespace inferdesk
