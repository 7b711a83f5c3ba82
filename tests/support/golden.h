// Reading the Hugging Face golden fixtures (tests/golden/models/<name>/expected.json) and
// comparing engine output with them by vLLM's rule.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/engine/generate.h"

namespace inferdesk::test {

struct GoldenCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> tokens;
  std::vector<std::vector<std::pair<int32_t, float>>> top5;  // per step, best first
  // MoE fixtures (tools/golden/router_margins.py): per step, the smallest gap over the MoE layers
  // between the k-th and (k+1)-th router logit at the compared position. Empty for dense models.
  std::vector<double> router_margin;
};

// A step whose router margin is below this is a routing near tie: BF16 rounding of the router's
// input can choose the other expert there (the reference runs in F32), which moves the step's
// log-probabilities by more than rounding. Measured: qwen2_moe's only log-prob outlier on the
// H200 (0.10 at a 320-token prompt's step 7) has margin 0.0031; 11 of the MoE fixtures' 288 steps
// are below 0.01.
constexpr double kRouterNearTie = 0.01;

struct GoldenModel {
  std::string name;
  std::filesystem::path dir;
  int32_t max_new_tokens = 0;
  std::vector<GoldenCase> cases;
  // FP8 fixtures: the most a chosen token's log-probability moves when the reference runs its
  // definition in float64 instead of float32 (0 where the fixture does not say).
  double float64_logprob_spread = 0;
};

std::filesystem::path golden_models_dir();
std::vector<std::string> golden_model_names();
GoldenModel read_golden(const std::string& name);
// FP8 fixtures (tools/golden/make_fp8_golden.py): tests/golden/models-fp8/<name>-<variant>.
std::filesystem::path golden_fp8_dir();
GoldenModel read_golden_at(const std::filesystem::path& dir, const std::string& name);

// The request a fixture case was generated with: its prompt, greedy, exactly max_new_tokens
// (EOS ignored), the top-5 log-probabilities compare_with_golden needs.
Request golden_request(const GoldenCase& c, int32_t max_new_tokens);

// vLLM's rule: tokens equal until the first difference, where each side's token must be in the
// other side's top-5; then stop. On equal steps the chosen token's log-probability must be within
// `logprob_tol` of the reference, except on steps of MoE fixtures whose router_margin is below
// `near_tie_margin` (BF16 backends: kRouterNearTie; 0, the F32 CPU backend: every step), where
// only the token is compared. Returns "" when it holds, else a description of the failure;
// *near_ties (if given) counts the equal steps not log-prob-checked.
std::string compare_with_golden(const GoldenCase& ref, const GenerationResult& got, double logprob_tol,
                                int* compared_steps = nullptr, double near_tie_margin = 0, int* near_ties = nullptr);

// Every case of `g` run greedy on `m` alone (num_kv_blocks KV blocks), each compared by
// compare_with_golden(logprob_tol, near_tie_margin). Returns the failures, one line per case that
// did not finish by length or did not match ("" when all hold), and in *compared_steps the steps
// compared over all cases.
std::string run_golden_cases(const GoldenModel& g, LoadedModel m, double logprob_tol, int* compared_steps,
                             double near_tie_margin = 0, int32_t num_kv_blocks = 128);

}  // namespace inferdesk::test
