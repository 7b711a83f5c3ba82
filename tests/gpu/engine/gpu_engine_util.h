// Shared by the CUDA engine tests: engines over the golden fixtures and the comparison of two runs.
#pragma once

#include <string>
#include <vector>

#include "core/engine/generate.h"
#include "cuda/cuda_backend.h"
#include "tests/gpu/gpu_test.h"
#include "tests/support/golden.h"

namespace inferdesk::gputest {

inline Engine make_cuda_engine(const std::string& fixture, EngineOptions opts, bool graphs = true) {
  CudaBackendOptions o;
  o.cuda_graphs = graphs;
  return Engine(load_model_folder(test::golden_models_dir() / fixture, make_cuda_backend(o)), opts);
}

inline Request greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.params.logprobs = 5;
  return r;
}

// Two runs of the same greedy request on the GPU may take different kernels (a decode row alone
// or inside a prefill batch, GEMV or GEMM) and so differ in the last bits. They must produce the
// same tokens until a step where the reference's best two tokens are a near tie (log-probs within
// `tie`), and there each run's token must be in the other's top 5 (vLLM's rule). Returns "" when
// that holds; *same counts the identical leading tokens.
inline std::string compare_runs(const GenerationResult& want, const GenerationResult& got,
                                double tie, int* same) {
  *same = 0;
  const size_t n = std::min(want.tokens.size(), got.tokens.size());
  if (want.tokens.size() != got.tokens.size()) return "different lengths";
  for (size_t i = 0; i < n; ++i) {
    const GeneratedToken& a = want.tokens[i];
    const GeneratedToken& b = got.tokens[i];
    if (a.id == b.id) {
      if (std::abs(a.logprob - b.logprob) > 0.05)
        return "step " + std::to_string(i) + ": log-probability " + std::to_string(b.logprob) +
               " vs " + std::to_string(a.logprob);
      ++*same;
      continue;
    }
    auto in_top = [](const GeneratedToken& t, int32_t id) {
      for (const auto& e : t.top)
        if (e.id == id) return true;
      return false;
    };
    const bool near_tie = a.top.size() >= 2 && a.top[0].logprob - a.top[1].logprob <= tie;
    if (!near_tie || !in_top(a, b.id) || !in_top(b, a.id))
      return "step " + std::to_string(i) + ": token " + std::to_string(b.id) + " vs " +
             std::to_string(a.id) + " without a near tie";
    return "";
  }
  return "";
}

}  // namespace inferdesk::gputest
