#include "core/bench/workload.h"

#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace inferdesk::bench {

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

}  // namespace inferdesk::bench
