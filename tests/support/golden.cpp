#include "tests/support/golden.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace inferdesk::test {

std::filesystem::path golden_models_dir() {
  // $INFERDESK_SOURCE_DIR lets binaries built elsewhere (e.g. carried to the GPU machine) find
  // the fixtures of the checkout they run in.
  const char* env = std::getenv("INFERDESK_SOURCE_DIR");
  return std::filesystem::path(env && *env ? env : INFERDESK_SOURCE_DIR) / "tests" / "golden" / "models";
}

std::vector<std::string> golden_model_names() {
  return {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"};
}

GoldenModel read_golden(const std::string& name) { return read_golden_at(golden_models_dir() / name, name); }

std::filesystem::path golden_fp8_dir() { return golden_models_dir().parent_path() / "models-fp8"; }

GoldenModel read_golden_at(const std::filesystem::path& dir, const std::string& name) {
  GoldenModel g;
  g.name = name;
  g.dir = dir;
  std::ifstream in(g.dir / "expected.json");
  nlohmann::json j = nlohmann::json::parse(in);
  g.max_new_tokens = j["max_new_tokens"].get<int32_t>();
  g.float64_logprob_spread = j.value("float64_logprob_spread", 0.0);
  for (const auto& c : j["cases"]) {
    GoldenCase gc;
    gc.prompt_ids = c["prompt_ids"].get<std::vector<int32_t>>();
    gc.tokens = c["tokens"].get<std::vector<int32_t>>();
    for (const auto& step : c["top5"]) {
      std::vector<std::pair<int32_t, float>> s;
      for (const auto& e : step) s.emplace_back(e[0].get<int32_t>(), e[1].get<float>());
      gc.top5.push_back(std::move(s));
    }
    if (c.contains("router_margin")) {
      gc.router_margin = c["router_margin"].get<std::vector<double>>();
      if (gc.router_margin.size() != gc.tokens.size())
        throw std::runtime_error(name + ": router_margin has " + std::to_string(gc.router_margin.size()) +
                                 " steps, tokens " + std::to_string(gc.tokens.size()));
    }
    g.cases.push_back(std::move(gc));
  }
  return g;
}

Request golden_request(const GoldenCase& c, int32_t max_new_tokens) {
  Request r;
  r.prompt_ids = c.prompt_ids;
  r.params.temperature = 0;
  r.params.max_tokens = max_new_tokens;
  r.params.ignore_eos = true;
  r.params.logprobs = 5;
  return r;
}

std::string compare_with_golden(const GoldenCase& ref, const GenerationResult& got, double logprob_tol,
                                int* compared_steps, double near_tie_margin, int* near_ties) {
  if (near_ties) *near_ties = 0;
  std::ostringstream err;
  const size_t n = std::min(ref.tokens.size(), got.tokens.size());
  if (got.tokens.size() != ref.tokens.size())
    err << "generated " << got.tokens.size() << " tokens, reference " << ref.tokens.size() << "; ";
  int steps = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t a = got.tokens[i].id, b = ref.tokens[i];
    if (a != b) {
      const auto& ours = got.tokens[i].top;
      const bool a_in_ref = std::any_of(ref.top5[i].begin(), ref.top5[i].end(),
                                        [&](const auto& e) { return e.first == a; });
      const bool b_in_ours = std::any_of(ours.begin(), ours.end(), [&](const auto& e) { return e.id == b; });
      if (!a_in_ref || !b_in_ours)
        err << "step " << i << ": token " << a << " vs reference " << b << " and they are not in each other's top-5; ";
      break;
    }
    ++steps;
    if (i < ref.router_margin.size() && ref.router_margin[i] < near_tie_margin) {
      if (near_ties) ++*near_ties;
      continue;
    }
    const double diff = std::fabs(static_cast<double>(got.tokens[i].logprob) - ref.top5[i][0].second);
    if (diff > logprob_tol)
      err << "step " << i << ": logprob " << got.tokens[i].logprob << " vs reference " << ref.top5[i][0].second
          << " (diff " << diff << "); ";
  }
  if (compared_steps) *compared_steps = steps;
  return err.str();
}

std::string run_golden_cases(const GoldenModel& g, LoadedModel m, double logprob_tol, int* compared_steps,
                             double near_tie_margin, int32_t num_kv_blocks) {
  EngineOptions opts;
  opts.num_kv_blocks = num_kv_blocks;
  Engine engine(std::move(m), opts);
  std::ostringstream err;
  int total = 0;
  for (size_t i = 0; i < g.cases.size(); ++i) {
    auto results = generate_all(engine, {golden_request(g.cases[i], g.max_new_tokens)});
    if (results.at(0).reason != FinishReason::Length) {
      err << "case " << i << ": did not finish by length: " << results[0].error << "\n";
      continue;
    }
    int steps = 0;
    const std::string diff = compare_with_golden(g.cases[i], results[0], logprob_tol, &steps, near_tie_margin);
    if (!diff.empty()) err << "case " << i << ": " << diff << "\n";
    total += steps;
  }
  if (compared_steps) *compared_steps = total;
  return err.str();
}

}  // namespace inferdesk::test
