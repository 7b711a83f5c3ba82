#include "core/tokenizer/hf_compat.h"
#include "core/util/json_guard.h"

#include <unordered_map>
#include <unordered_set>

#include "core/tokenizer/json_util.h"
#include "core/tokenizer/tokenizer_impl.h"

namespace inferdesk::tok {
namespace {

using nlohmann::json;

// Regex of transformers' Qwen2Tokenizer (single digits, unlike Llama 3's \p{N}{1,3}).
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The part of transformers' TOKENIZER_MAPPING_NAMES (model_type -> class) relevant to the decoder
// LLMs we load. Model types not listed (e.g. "llama", "phi3") map to nothing, which makes
// AutoTokenizer use TokenizersBackend whenever tokenizer_config.json names a class.
const std::unordered_map<std::string, std::string>& model_type_classes() {
  static const std::unordered_map<std::string, std::string> table = [] {
    std::unordered_map<std::string, std::string> t;
    for (const char* m :
         {"gpt2", "gpt_bigcode", "gpt_neo", "gptj", "codegen", "phi", "opt", "starcoder2", "dbrx", "emu3", "exaone4",
          "flex_olmo", "olmo3", "granite", "granitemoe", "granitemoehybrid", "granitemoeshared", "jais2"})
      t[m] = "GPT2Tokenizer";
    for (const char* m : {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_audio", "qwen2_5_omni", "qwen3",
                          "qwen3_moe", "qwen3_next", "qwen3_vl", "qwen3_vl_moe", "qwen3_omni_moe", "internvl",
                          "colqwen2", "ovis2", "audioflamingo3"})
      t[m] = "Qwen2Tokenizer";
    for (const char* m : {"mistral", "mixtral", "mistral3", "ministral3", "pixtral", "voxtral", "glm", "glm4",
                          "glm4_moe", "glm4v", "glm4v_moe", "got_ocr2"})
      t[m] = "TokenizersBackend";
    for (const char* m : {"gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "recurrent_gemma"})
      t[m] = "GemmaTokenizer";
    for (const char* m :
         {"gpt_neox", "olmo", "olmo2", "olmoe", "mamba", "mamba2", "mpt", "stablelm", "rwkv", "falcon_mamba", "xlstm"})
      t[m] = "GPTNeoXTokenizer";
    t["cohere"] = t["cohere2"] = "CohereTokenizer";
    t["idefics"] = t["idefics2"] = "LlamaTokenizer";
    t["code_llama"] = "CodeLlamaTokenizer";
    return t;
  }();
  return table;
}

std::string strip_fast(std::string s) {
  if (s.size() > 4 && s.compare(s.size() - 4, 4, "Fast") == 0) s.resize(s.size() - 4);
  return s;
}

// A special-token entry: a string, null, or an AddedToken object {"content": ...}.
std::optional<std::string> token_text(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return get_string(v, "content", where);
  fail(where, "expected a string, null or an AddedToken object");
}

std::optional<bool> opt_bool(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) fail(where + "." + key, "expected true or false");
  return it->get<bool>();
}

void set_class_defaults(HfConfig& c) {
  struct Defaults {
    const char *bos, *eos, *unk, *pad;
  };
  Defaults d{nullptr, nullptr, nullptr, nullptr};
  if (c.hf_class == "GPT2Tokenizer")
    d = {"<|endoftext|>", "<|endoftext|>", "<|endoftext|>", nullptr};
  else if (c.hf_class == "LlamaTokenizer")
    d = {"<s>", "</s>", "<unk>", nullptr};
  else if (c.hf_class == "Qwen2Tokenizer")
    d = {nullptr, "<|endoftext|>", "<|endoftext|>", "<|endoftext|>"};
  const json& tc = c.tokenizer_config;
  auto pick = [&](std::optional<std::string>& dst, const char* key, const char* def) {
    if (tc.contains(key))
      dst = token_text(tc[key], c.name + "." + key);
    else if (def)
      dst = def;
  };
  pick(c.bos, "bos_token", d.bos);
  pick(c.eos, "eos_token", d.eos);
  pick(c.unk, "unk_token", d.unk);
  pick(c.pad, "pad_token", d.pad);
}

void add_if_missing(std::vector<AddedToken>& added, std::unordered_set<std::string>& contents,
                    std::unordered_set<int32_t>& ids, const AddedToken& t) {
  if (contents.count(t.content) || ids.count(t.id)) return;
  contents.insert(t.content);
  ids.insert(t.id);
  added.push_back(t);
}

}  // namespace

std::string auto_tokenizer_class(const std::string& model_type, const std::string& tokenizer_class) {
  const auto& table = model_type_classes();
  auto it = table.find(model_type);
  const std::string mapped = it == table.end() ? "" : it->second;
  const std::string cls = strip_fast(tokenizer_class);
  if (!cls.empty() && !model_type.empty() && mapped != cls) return "TokenizersBackend";
  if (!cls.empty()) return cls == "PreTrainedTokenizer" ? "TokenizersBackend" : cls;
  if (!model_type.empty() && !mapped.empty()) return mapped;
  return "TokenizersBackend";
}

HfConfig parse_hf_config(std::string_view config_text, std::string_view model_config_text, const std::string& name) {
  HfConfig c;
  c.name = name;
  if (!config_text.empty()) {
    c.tokenizer_config = parse_json_file_text(config_text, name);
    if (!c.tokenizer_config.is_object()) fail(name, "expected a JSON object");
  }
  if (!model_config_text.empty()) {
    const json mc = parse_json_file_text(model_config_text, "config.json");
    if (mc.is_object()) c.model_type = get_string_or(mc, "model_type", "", "config.json");
  }
  const json& tc = c.tokenizer_config;
  c.tokenizer_class = strip_fast(get_string_or(tc, "tokenizer_class", "", name));
  c.hf_class = auto_tokenizer_class(c.model_type, c.tokenizer_class);
  set_class_defaults(c);
  c.add_bos_token = opt_bool(tc, "add_bos_token", name);
  c.add_eos_token = opt_bool(tc, "add_eos_token", name);
  c.add_prefix_space = opt_bool(tc, "add_prefix_space", name);
  c.legacy = opt_bool(tc, "legacy", name);
  if (auto it = tc.find("additional_special_tokens"); it != tc.end() && it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      auto s = token_text((*it)[i], name + ".additional_special_tokens[" + std::to_string(i) + "]");
      if (s) c.additional_special_tokens.push_back(*s);
    }
  }
  return c;
}

std::string merge_special_tokens_map(const std::string& config_text, const std::string& map_text,
                                     const std::string& map_name) {
  const json map = parse_json_file_text(map_text, map_name);
  json config = config_text.empty() ? json::object() : parse_json_file_text(config_text, map_name);
  if (!map.is_object() || !config.is_object()) return config_text;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "additional_special_tokens"})
    if (map.contains(key) && !config.contains(key)) config[key] = map.at(key);
  return config.dump();
}

void apply_class_pipeline(TokenizerImpl& t, BpeOptions& opts, const HfConfig& cfg) {
  if (cfg.hf_class != "LlamaTokenizer") return;
  // transformers' LlamaTokenizer: no normalizer, Metaspace (prepend "first" unless legacy),
  // byte-fallback BPE without unk token, the Llama decoder.
  const bool prefix = cfg.add_prefix_space.value_or(true);
  const char* scheme = !prefix ? "never" : cfg.legacy.value_or(false) ? "always" : "first";
  t.normalizer.reset();
  t.pre_tokenizer = make_metaspace_pre_tokenizer("\xE2\x96\x81", scheme, false);
  t.decoder = make_llama_decoder(prefix);
  opts.unk_token.reset();
  opts.byte_fallback = true;
  opts.fuse_unk = true;
}

void build_vocab_merges_pipeline(TokenizerImpl& t, BpeOptions& opts, const HfConfig& cfg, const std::string& name) {
  opts = BpeOptions{};
  if (cfg.hf_class == "Qwen2Tokenizer") {
    t.normalizer = make_nfc_normalizer();
    t.pre_tokenizer = make_split_byte_level_pre_tokenizer(kQwen2Pattern);
  } else if (cfg.hf_class == "GPT2Tokenizer") {
    t.pre_tokenizer = make_byte_level_pre_tokenizer(cfg.add_prefix_space.value_or(false), true);
  } else {
    throw Error(ErrorCode::Unsupported,
                name +
                    ": vocab.json + merges.txt without tokenizer.json is supported for the Qwen2Tokenizer and "
                    "GPT2Tokenizer classes only (this folder resolves to " +
                    cfg.hf_class + ")");
  }
  t.decoder = make_byte_level_decoder();
}

void apply_class_post_processor(TokenizerImpl& t, const HfConfig& cfg) {
  const bool llama = cfg.hf_class == "LlamaTokenizer";
  const bool byte_level_class = cfg.hf_class == "Qwen2Tokenizer" || cfg.hf_class == "GPT2Tokenizer";
  if (!llama && !(byte_level_class && !t.post_processor)) return;
  std::vector<int32_t> prefix, suffix;
  if (cfg.add_bos_token.value_or(llama) && t.bos.id) prefix.push_back(*t.bos.id);
  if (cfg.add_eos_token.value_or(false) && t.eos.id) suffix.push_back(*t.eos.id);
  t.post_processor = make_wrap_post_processor(std::move(prefix), std::move(suffix));
}

std::vector<AddedToken> config_added_tokens(const HfConfig& cfg) {
  std::vector<AddedToken> out;
  const json& tc = cfg.tokenizer_config;
  auto it = tc.find("added_tokens_decoder");
  if (it == tc.end() || it->is_null()) return out;
  if (!it->is_object()) fail(cfg.name + ".added_tokens_decoder", "expected an object id -> token");
  for (auto e = it->begin(); e != it->end(); ++e) {
    const std::string w = cfg.name + ".added_tokens_decoder[\"" + e.key() + "\"]";
    long long id = -1;
    try {
      size_t used = 0;
      id = std::stoll(e.key(), &used);
      if (used != e.key().size()) id = -1;
    } catch (const std::exception&) {
      id = -1;
    }
    if (id < 0 || id >= (1 << 24)) fail(w, "key is not a token id");
    AddedToken a;
    a.id = static_cast<int32_t>(id);
    a.content = get_string(e.value(), "content", w);
    if (a.content.empty()) fail(w + ".content", "empty added token");
    a.special = get_bool_or(e.value(), "special", false, w);
    a.lstrip = get_bool_or(e.value(), "lstrip", false, w);
    a.rstrip = get_bool_or(e.value(), "rstrip", false, w);
    a.single_word = get_bool_or(e.value(), "single_word", false, w);
    a.normalized = get_bool_or(e.value(), "normalized", !a.special, w);
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return out;
}

void add_config_tokens(std::vector<AddedToken>& added, const HfConfig& cfg, const BpeModel& model) {
  std::unordered_set<std::string> contents;
  std::unordered_set<int32_t> ids;
  for (const auto& a : added) {
    contents.insert(a.content);
    ids.insert(a.id);
  }
  for (const auto& a : config_added_tokens(cfg)) add_if_missing(added, contents, ids, a);
  std::vector<std::string> specials = cfg.additional_special_tokens;
  for (const auto* s : {&cfg.bos, &cfg.eos, &cfg.unk, &cfg.pad})
    if (*s) specials.push_back(**s);
  for (const auto& s : specials) {
    auto id = model.token_to_id(s);
    if (!id) continue;
    AddedToken a;
    a.id = *id;
    a.content = s;
    a.special = true;
    add_if_missing(added, contents, ids, a);
  }
}

}  // namespace inferdesk::tok
