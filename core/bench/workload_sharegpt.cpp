#include "core/bench/workload_sharegpt.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

namespace {

constexpr int64_t kMinLen = 4, kMaxPrompt = 1024, kMaxTotal = 2048;  // vLLM's pruning bounds

const std::string& turn_text(const nlohmann::json& turns, size_t k, size_t entry) {
  const auto& t = turns[k];
  auto v = t.is_object() ? t.find("value") : t.end();
  if (!t.is_object() || v == t.end() || !v->is_string())
    throw Error(ErrorCode::Format, "ShareGPT entry " + std::to_string(entry) + ", turn " + std::to_string(k) +
                                       ": expected an object with a string \"value\"");
  return v->get_ref<const std::string&>();
}

bool keep(int64_t prompt_len, int64_t output_len, bool fixed_output) {
  if (prompt_len < kMinLen || (!fixed_output && output_len < kMinLen)) return false;
  return prompt_len <= kMaxPrompt && prompt_len + output_len <= kMaxTotal;
}

}  // namespace

std::vector<Sample> parse_sharegpt(std::string_view text, const Tokenizer& tok, const ShareGptOptions& o) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::Format, "ShareGPT file: not valid JSON");
  if (!j.is_array()) throw Error(ErrorCode::Format, "ShareGPT file: expected a JSON array of conversations");
  std::vector<size_t> usable;  // entries with two turns or more
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_object()) throw Error(ErrorCode::Format, "ShareGPT entry " + std::to_string(i) + ": not an object");
    auto c = j[i].find("conversations");
    if (c == j[i].end()) continue;  // vLLM skips entries without conversations
    if (!c->is_array())
      throw Error(ErrorCode::Format, "ShareGPT entry " + std::to_string(i) + ": \"conversations\" is not an array");
    if (c->size() >= 2) usable.push_back(i);
  }
  std::mt19937_64 rng(o.seed);
  shuffle_in_place(usable, rng);
  std::vector<Sample> out;
  for (size_t i : usable) {
    if (static_cast<int32_t>(out.size()) >= o.num_requests) break;
    const auto& turns = j[i]["conversations"];
    Sample s;
    s.text = turn_text(turns, 0, i);
    s.ids = tok.encode(s.text, true);
    s.prompt_len = static_cast<int64_t>(s.ids.size());
    const int64_t reply = o.output_len ? *o.output_len : static_cast<int64_t>(tok.encode(turn_text(turns, 1, i), true).size());
    if (!keep(s.prompt_len, reply, o.output_len.has_value())) continue;
    s.output_len = static_cast<int32_t>(reply);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Sample> load_sharegpt(const std::filesystem::path& path, const Tokenizer& tok, const ShareGptOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(ErrorCode::NotFound, "ShareGPT file not found: " + path.string());
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f && !f.eof()) throw Error(ErrorCode::Io, "cannot read " + path.string());
  try {
    return parse_sharegpt(ss.str(), tok, o);
  } catch (const Error& e) {
    throw Error(e.code(), path.string() + ": " + e.what());
  }
}

}  // namespace inferdesk::bench
