#include "core/bench/workload.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

namespace {

void put_common(nlohmann::ordered_json& j, const BodyOptions& o, int32_t max_tokens) {
  j["max_tokens"] = max_tokens;
  j["temperature"] = o.temperature;
  if (o.ignore_eos) j["ignore_eos"] = true;
  j["stream"] = o.stream;
  if (o.stream) j["stream_options"] = {{"include_usage", true}};
}

}  // namespace

std::vector<BenchRequest> random_completions(const RandomWorkload& w) {
  if (w.num_requests < 0 || w.input_len < 1 || w.output_len < 1 || w.token_id_min < 0 ||
      w.token_id_max <= w.token_id_min)
    throw std::invalid_argument("random workload: lengths must be >= 1 and the id range non-empty");
  std::mt19937_64 rng(w.seed);
  std::uniform_int_distribution<int32_t> id(w.token_id_min, w.token_id_max - 1);
  std::vector<BenchRequest> out;
  out.reserve(static_cast<size_t>(w.num_requests));
  for (int32_t i = 0; i < w.num_requests; ++i) {
    std::vector<int32_t> prompt(static_cast<size_t>(w.input_len));
    for (auto& t : prompt) t = id(rng);
    nlohmann::ordered_json j;
    if (!w.model.empty()) j["model"] = w.model;
    j["prompt"] = prompt;
    j["max_tokens"] = w.output_len;
    j["temperature"] = w.temperature;
    j["ignore_eos"] = w.ignore_eos;
    j["stream"] = w.stream;
    if (w.stream) j["stream_options"] = {{"include_usage", true}};
    BenchRequest r;
    r.body = j.dump();
    r.prompt_tokens = w.input_len;
    out.push_back(std::move(r));
  }
  return out;
}

const char* endpoint_path(Api api) { return api == Api::Chat ? "/v1/chat/completions" : "/v1/completions"; }

std::vector<BenchRequest> make_requests(const std::vector<Sample>& samples, const BodyOptions& o) {
  std::vector<BenchRequest> out;
  out.reserve(samples.size());
  for (const Sample& s : samples) {
    nlohmann::ordered_json j;
    if (!o.model.empty()) j["model"] = o.model;
    const bool ids = !s.ids.empty() && (s.text.empty() || (o.prefer_ids && o.api == Api::Completions));
    if (o.api == Api::Chat) {
      if (s.text.empty())
        throw Error(ErrorCode::InvalidArgument, "a chat request needs a text prompt: give the workload a tokenizer");
      j["messages"] = nlohmann::ordered_json::array({{{"role", "user"}, {"content", s.text}}});
    } else if (ids) {
      j["prompt"] = s.ids;
    } else {
      j["prompt"] = s.text;
    }
    put_common(j, o, s.output_len);
    BenchRequest r;
    r.body = j.dump();
    r.endpoint = endpoint_path(o.api);
    r.prompt_tokens = s.prompt_len;
    out.push_back(std::move(r));
  }
  return out;
}

uint64_t draw_below(std::mt19937_64& rng, uint64_t n) {
  // Rejection keeps it exactly uniform; the bound is the largest multiple of n.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

int64_t draw_between(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(draw_below(rng, static_cast<uint64_t>(hi - lo) + 1));
}

std::vector<int32_t> allowed_ids(const Tokenizer& tok) {
  std::vector<int32_t> out;
  for (int32_t id = 0; id <= tok.max_token_id(); ++id)
    if (!tok.is_special(id) && tok.id_to_token(id)) out.push_back(id);
  return out;
}

std::string exact_length_text(const Tokenizer& tok, const std::vector<int32_t>& allowed, int64_t len,
                              std::mt19937_64& rng, std::vector<int32_t>* ids, const std::vector<int32_t>& lead) {
  if (len < 0 || allowed.empty()) throw Error(ErrorCode::InvalidArgument, "exact_length_text: nothing to draw from");
  const size_t total = lead.size() + static_cast<size_t>(len);
  auto draw_tail = [&](std::vector<int32_t>& seq) {
    while (seq.size() < total) seq.push_back(allowed[draw_below(rng, allowed.size())]);
  };
  std::vector<int32_t> seq = lead;
  draw_tail(seq);
  // A decoded sequence may re-encode to more or fewer tokens (merges across the seams): trim or
  // extend the re-encoded tail and go round again; a tail that broke the lead is drawn anew.
  for (int round = 0; round < 64; ++round) {
    std::string text = tok.decode(seq, false);
    std::vector<int32_t> again = tok.encode(text, false);
    const bool lead_kept = again.size() >= lead.size() && std::equal(lead.begin(), lead.end(), again.begin());
    if (lead_kept && again.size() == total) {
      if (ids) *ids = std::move(again);
      return text;
    }
    if (!lead_kept) again = lead;
    if (again.size() > total) again.resize(total);
    draw_tail(again);
    seq = std::move(again);
  }
  // Small vocabularies merge so often that the rounds above can oscillate: grow the tail one
  // token at a time instead, keeping a token only when the whole still round-trips (slower, sure).
  seq = lead;
  while (seq.size() < total) {
    bool grown = false;
    for (int attempt = 0; attempt < 256 && !grown; ++attempt) {
      seq.push_back(allowed[draw_below(rng, allowed.size())]);
      grown = tok.encode(tok.decode(seq, false), false) == seq;
      if (!grown) seq.pop_back();
    }
    if (!grown) break;
  }
  if (seq.size() == total) {
    std::string text = tok.decode(seq, false);
    if (ids) *ids = std::move(seq);
    return text;
  }
  throw Error(ErrorCode::InvalidArgument,
              "could not make a prompt of exactly " + std::to_string(total) + " tokens with this tokenizer");
}

}  // namespace inferdesk::bench
