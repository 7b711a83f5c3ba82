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
};

struct GoldenModel {
  std::string name;
  std::filesystem::path dir;
  int32_t max_new_tokens = 0;
  std::vector<GoldenCase> cases;
};

std::filesystem::path golden_models_dir();
std::vector<std::string> golden_model_names();
GoldenModel read_golden(const std::string& name);

// vLLM's rule: tokens equal until the first difference, where each side's token must be in the
// other side's top-5; then stop. On equal steps the chosen token's log-probability must be within
// `logprob_tol` of the reference. Returns "" when it holds, else a description of the failure.
std::string compare_with_golden(const GoldenCase& ref, const GenerationResult& got,
                                double logprob_tol, int* compared_steps = nullptr);

}  // namespace inferdesk::test
