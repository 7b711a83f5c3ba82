// Per-request sampling parameters, validated with vLLM's ranges.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace inferdesk {

// One entry of a top-k log-probability list.
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

struct SamplingParams {
  float temperature = 1.0f;         // 0 (or < 1e-5): greedy
  float top_p = 1.0f;               // (0, 1]; 1: off
  int32_t top_k = 0;                // 0 or -1: off
  float min_p = 0.0f;               // [0, 1]; 0: off
  float repetition_penalty = 1.0f;  // > 0; 1: off (over prompt and output tokens)
  float presence_penalty = 0.0f;    // [-2, 2] (over output tokens)
  float frequency_penalty = 0.0f;   // [-2, 2] (over output tokens)
  // Seed of the request's own generator. Unseeded requests get a random seed when submitted.
  std::optional<uint64_t> seed;
  int32_t max_tokens = 16;  // >= 1
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  int32_t logprobs = 0;  // top-k log-probabilities to return per token, 0..20

  // Throws Error(InvalidArgument) naming the parameter, its value and the allowed range.
  void validate() const;

  bool is_greedy() const { return temperature < kGreedyTemperature; }
  // Whether any penalty applies (they depend on the tokens generated so far).
  bool has_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
  // Below this temperature sampling is greedy (vLLM's _SAMPLING_EPS).
  static constexpr float kGreedyTemperature = 1e-5f;
  static constexpr int32_t kMaxLogprobs = 20;
};

}  // namespace inferdesk
