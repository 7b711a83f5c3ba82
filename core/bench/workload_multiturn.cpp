#include "core/bench/workload_multiturn.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

namespace {

// The body of one turn: the user turns so far with the replies between them.
std::string turn_body(const std::vector<std::string>& users, const std::vector<size_t>& earlier,
                      const std::vector<RequestResult>& results, const BodyOptions& o, int32_t max_tokens) {
  nlohmann::ordered_json j;
  if (!o.model.empty()) j["model"] = o.model;
  auto messages = nlohmann::ordered_json::array();
  for (size_t k = 0; k < users.size(); ++k) {
    messages.push_back({{"role", "user"}, {"content", users[k]}});
    if (k < earlier.size()) messages.push_back({{"role", "assistant"}, {"content", results[earlier[k]].text}});
  }
  j["messages"] = std::move(messages);
  j["max_tokens"] = max_tokens;
  j["temperature"] = o.temperature;
  if (o.ignore_eos) j["ignore_eos"] = true;
  j["stream"] = o.stream;
  if (o.stream) j["stream_options"] = {{"include_usage", true}};
  return j.dump();
}

}  // namespace

std::vector<BenchRequest> multiturn_requests(const MultiTurnDataset& d, const Tokenizer& tok, const BodyOptions& o) {
  if (d.num_conversations < 1 || d.turns < 1 || d.input_len < 1 || d.output_len < 1)
    throw Error(ErrorCode::InvalidArgument, "multi-turn dataset: counts and lengths must be >= 1");
  std::mt19937_64 rng(d.seed);
  const std::vector<int32_t> allowed = allowed_ids(tok);
  // users[c][t]: the text of turn t of conversation c, drawn conversation by conversation.
  std::vector<std::vector<std::string>> users(static_cast<size_t>(d.num_conversations));
  for (auto& conv : users)
    for (int32_t t = 0; t < d.turns; ++t) conv.push_back(exact_length_text(tok, allowed, d.input_len, rng, nullptr));
  std::vector<BenchRequest> out(static_cast<size_t>(d.num_conversations) * static_cast<size_t>(d.turns));
  for (int32_t c = 0; c < d.num_conversations; ++c) {
    for (int32_t t = 0; t < d.turns; ++t) {
      BenchRequest& r = out[turn_index(d, c, t)];
      r.endpoint = endpoint_path(Api::Chat);
      r.prompt_tokens = d.input_len;
      const std::vector<std::string> so_far(users[static_cast<size_t>(c)].begin(),
                                            users[static_cast<size_t>(c)].begin() + t + 1);
      std::vector<size_t> earlier;
      for (int32_t k = 0; k < t; ++k) earlier.push_back(turn_index(d, c, k));
      if (t == 0) {
        r.body = turn_body(so_far, earlier, {}, o, d.output_len);
        continue;
      }
      r.after = static_cast<int64_t>(turn_index(d, c, t - 1));
      r.make_body = [so_far, earlier, o, len = d.output_len](const std::vector<RequestResult>& results) {
        return turn_body(so_far, earlier, results, o, len);
      };
    }
  }
  return out;
}

}  // namespace inferdesk::bench
