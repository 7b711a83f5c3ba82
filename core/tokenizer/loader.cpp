// Loading a tokenizer folder: tokenizer.json (Hugging Face tokenizers format) or vocab.json +
// merges.txt, plus tokenizer_config.json / special_tokens_map.json / config.json, and the rules by
// which transformers' AutoTokenizer picks a tokenizer class that may redefine the pipeline.
#include <sstream>

#include "core/tokenizer/hf_compat.h"
#include "core/tokenizer/json_util.h"
#include "core/tokenizer/tokenizer_impl.h"
#include "core/util/json_guard.h"
#include "core/util/regular_file.h"

namespace inferdesk::tok {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uintmax_t kMaxFileBytes = uintmax_t{1} << 30;  // 1 GiB: far above any real tokenizer file
constexpr size_t kMaxTokens = size_t{1} << 24;

// Refuses a FIFO or device without blocking on it (core/util/regular_file.h).
std::string read_file(const fs::path& p) {
  return as_tokenizer_error([&] { return read_regular_file(p, kMaxFileBytes); });
}

json parse_json(std::string_view text, const std::string& name) { return parse_json_file_text(text, name); }

VocabMap parse_vocab(const json& v, const std::string& where) {
  if (!v.is_object()) fail(where, "expected an object mapping token -> id");
  if (v.size() > kMaxTokens) fail(where, "too many tokens");
  VocabMap vocab;
  vocab.reserve(v.size());
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_number_integer()) fail(where + "[\"" + it.key() + "\"]", "expected an integer id");
    const long long id = it.value().get<long long>();
    if (id < 0 || id >= static_cast<long long>(kMaxTokens))
      fail(where + "[\"" + it.key() + "\"]", "id " + std::to_string(id) + " out of range");
    vocab.emplace(it.key(), static_cast<int32_t>(id));
  }
  return vocab;
}

std::vector<std::pair<std::string, std::string>> parse_merges(const json& m, const std::string& where) {
  if (!m.is_array()) fail(where, "expected an array");
  if (m.size() > kMaxTokens) fail(where, "too many merges");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const auto& e = m[i];
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        fail(where + "[" + std::to_string(i) + "]", "expected \"left right\" (one space), got \"" + s + "\"");
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    } else {
      fail(where + "[" + std::to_string(i) + "]", "expected a string or a [left, right] pair");
    }
  }
  return merges;
}

std::vector<std::pair<std::string, std::string>> parse_merges_txt(const std::string& text, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> merges;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (lineno == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
      fail(where + ":" + std::to_string(lineno), "expected \"left right\", got \"" + line + "\"");
    merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    if (merges.size() > kMaxTokens) fail(where, "too many merges");
  }
  return merges;
}

AddedToken parse_added_token(const json& t, int32_t id, const std::string& where) {
  AddedToken a;
  a.id = id;
  a.content = get_string(t, "content", where);
  if (a.content.empty()) fail(where + ".content", "empty added token");
  a.special = get_bool_or(t, "special", false, where);
  a.lstrip = get_bool_or(t, "lstrip", false, where);
  a.rstrip = get_bool_or(t, "rstrip", false, where);
  a.single_word = get_bool_or(t, "single_word", false, where);
  a.normalized = get_bool_or(t, "normalized", !a.special, where);
  return a;
}

std::vector<AddedToken> parse_added_tokens(const json& list, const std::string& where) {
  std::vector<AddedToken> out;
  if (list.is_null()) return out;
  if (!list.is_array()) fail(where, "expected an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const long long id = get_int_or(list[i], "id", -1, 0, static_cast<long long>(kMaxTokens) - 1, w);
    if (id < 0) fail(w, "missing field \"id\"");
    out.push_back(parse_added_token(list[i], static_cast<int32_t>(id), w));
  }
  return out;
}

BpeOptions parse_bpe_options(const json& m, const std::string& where) {
  BpeOptions o;
  if (auto it = m.find("unk_token"); it != m.end() && !it->is_null()) {
    if (!it->is_string()) fail(where + ".unk_token", "expected a string");
    o.unk_token = it->get<std::string>();
  }
  o.byte_fallback = get_bool_or(m, "byte_fallback", false, where);
  o.fuse_unk = get_bool_or(m, "fuse_unk", false, where);
  o.ignore_merges = get_bool_or(m, "ignore_merges", false, where);
  o.continuing_subword_prefix = get_string_or(m, "continuing_subword_prefix", "", where);
  o.end_of_word_suffix = get_string_or(m, "end_of_word_suffix", "", where);
  if (auto it = m.find("dropout"); it != m.end() && !it->is_null()) {
    if (!it->is_number()) fail(where + ".dropout", "expected a number or null");
    if (it->get<double>() > 0.0)
      throw Error(ErrorCode::Unsupported, where + ".dropout: BPE dropout is not supported (inference only)");
  }
  return o;
}

void finish_impl(TokenizerImpl& t, std::vector<AddedToken> added, const HfConfig& cfg) {
  add_config_tokens(added, cfg, *t.model);
  t.added = AddedVocab(std::move(added), t.normalizer.get());
  if (t.pre_tokenizer) t.model_reads_raw_bytes = t.pre_tokenizer->defer_byte_mapping();
  t.vocab_size = t.model->vocab_size();
  t.max_id = t.model->max_id();
  for (const auto& a : t.added.tokens()) {
    if (!t.model->token_to_id(a.content)) ++t.vocab_size;
    t.max_id = std::max(t.max_id, a.id);
  }
  auto resolve = [&](SpecialToken& s, const std::optional<std::string>& text) {
    s.text = text;
    if (!text) return;
    if (const AddedToken* a = t.added.find_content(*text))
      s.id = a->id;
    else
      s.id = t.model->token_to_id(*text);
  };
  resolve(t.bos, cfg.bos);
  resolve(t.eos, cfg.eos);
  resolve(t.unk, cfg.unk);
  resolve(t.pad, cfg.pad);
  apply_class_post_processor(t, cfg);
}

}  // namespace

std::shared_ptr<TokenizerImpl> load_tokenizer_json(std::string_view tokenizer_json, std::string_view config_json,
                                                   std::string_view model_config_json, const std::string& name) {
  const std::string where = name;
  try {
    const HfConfig cfg = parse_hf_config(config_json, model_config_json, name);
    const json j = parse_json(tokenizer_json, where);
    if (!j.is_object()) fail(where, "expected a JSON object");
    const json& m = member(j, "model", where);
    const std::string type = get_string_or(m, "type", m.contains("merges") ? "BPE" : "", where + ".model");
    if (type != "BPE")
      throw Error(ErrorCode::Unsupported, where + ".model.type: \"" + type +
                                              "\" models are not supported (only BPE: GPT-2/Llama/Qwen/Mistral style)");
    auto t = std::make_shared<TokenizerImpl>();
    t->name = name;
    t->hf_class = cfg.hf_class;
    BpeOptions opts = parse_bpe_options(m, where + ".model");
    t->normalizer = make_normalizer(j.value("normalizer", json()), where + ".normalizer");
    t->pre_tokenizer = make_pre_tokenizer(j.value("pre_tokenizer", json()), where + ".pre_tokenizer");
    t->post_processor = make_post_processor(j.value("post_processor", json()), where + ".post_processor");
    t->decoder = make_decoder(j.value("decoder", json()), where + ".decoder");
    apply_class_pipeline(*t, opts, cfg);
    t->model = std::make_unique<BpeModel>(parse_vocab(member(m, "vocab", where + ".model"), where + ".model.vocab"),
                                          parse_merges(member(m, "merges", where + ".model"), where + ".model.merges"),
                                          std::move(opts), where + ".model");
    finish_impl(*t, parse_added_tokens(j.value("added_tokens", json()), where + ".added_tokens"), cfg);
    return t;
  } catch (const json::exception& e) {
    throw Error(ErrorCode::Tokenizer, where + ": " + e.what());
  }
}

namespace {

std::shared_ptr<TokenizerImpl> load_vocab_merges(const fs::path& dir, const std::string& config_text,
                                                 const std::string& model_config_text) {
  const std::string name = (dir / "vocab.json").string();
  try {
    const HfConfig cfg = parse_hf_config(config_text, model_config_text, (dir / "tokenizer_config.json").string());
    auto t = std::make_shared<TokenizerImpl>();
    t->name = dir.string();
    t->hf_class = cfg.hf_class;
    BpeOptions opts;
    build_vocab_merges_pipeline(*t, opts, cfg, name);
    const json v = parse_json(read_file(dir / "vocab.json"), name);
    const std::string merges_name = (dir / "merges.txt").string();
    t->model = std::make_unique<BpeModel>(parse_vocab(v, name),
                                          parse_merges_txt(read_file(dir / "merges.txt"), merges_name), std::move(opts),
                                          name);
    finish_impl(*t, config_added_tokens(cfg), cfg);
    return t;
  } catch (const json::exception& e) {
    throw Error(ErrorCode::Tokenizer, name + ": " + e.what());
  }
}

}  // namespace

std::shared_ptr<TokenizerImpl> load_tokenizer_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorCode::NotFound, "tokenizer folder " + dir.string() + " does not exist or is not a folder");
  auto optional_file = [&](const char* file) {
    const fs::path p = dir / file;
    return fs::exists(p, ec) ? read_file(p) : std::string();
  };
  std::string config = optional_file("tokenizer_config.json");
  const std::string special_map = optional_file("special_tokens_map.json");
  if (!special_map.empty())
    config = merge_special_tokens_map(config, special_map, (dir / "special_tokens_map.json").string());
  const std::string model_config = optional_file("config.json");
  if (fs::exists(dir / "tokenizer.json", ec)) {
    auto t = load_tokenizer_json(read_file(dir / "tokenizer.json"), config, model_config,
                                 (dir / "tokenizer.json").string());
    t->name = dir.string();
    return t;
  }
  if (fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec))
    return load_vocab_merges(dir, config, model_config);
  throw Error(ErrorCode::NotFound, dir.string() + ": no tokenizer.json, and no vocab.json + merges.txt");
}

}  // namespace inferdesk::tok
