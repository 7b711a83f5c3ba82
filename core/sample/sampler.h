// Sampler: picks the next token from one row of logits, following vLLM v1's sampler.
//
// Pipeline: repetition penalty over prompt + output tokens (logit > 0 ? logit / p : logit * p),
// then frequency and presence penalties over output token counts; then either greedy argmax
// (temperature < 1e-5; lowest id wins ties) or: divide by temperature, min_p filter (relative to
// the most likely token), top-k (ties at the k-th value are kept), top-p (smallest set, most
// likely first, whose probability reaches top_p; at least one token), and a draw from the
// renormalised distribution with the request's own SamplerRng.
// Log-probabilities returned (chosen token and top list) are log_softmax of the RAW logits, as
// vLLM's default "raw_logprobs" mode does.
// Cost: O(V) per token plus O(V log k) for the top list; top-p sorts only as many tokens as it
// needs (partial sorts of growing prefixes).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/sample/sampler_rng.h"
#include "core/sample/sampling_params.h"

namespace inferdesk {

struct SampleResult {
  int32_t token = 0;
  float logprob = 0.0f;           // raw log-probability of `token`
  std::vector<TokenLogprob> top;  // params.logprobs best tokens, best first, ties by lower id
};

// Applies repetition, frequency and presence penalties in place (vLLM's order and formulas).
// Throws Error(InvalidArgument) when a token id is outside [0, logits.size()).
void apply_penalties(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> prompt_ids,
                     std::span<const int32_t> output_ids);

// The k highest raw log-probabilities, best first, ties by lower id. `log_z` is logsumexp(logits).
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, double log_z, int32_t k);

// Vocabulary-sized buffers reused across calls. Keep one per thread that samples: on a 150k
// vocabulary, fresh buffers for every token cost more in page faults than the sampling itself.
struct SamplerScratch {
  std::vector<float> work;     // penalised / tempered logits
  std::vector<float> weights;  // unnormalised probabilities after the filters
};

// Stateless and thread-safe: all per-call state lives in the arguments (the vocabulary limit is
// fixed at construction).
class Sampler {
 public:
  // vocab_limit > 0: only ids below it are ever sampled or reported; the logits of ids at or above
  // it count as -inf (log-probabilities are normalised over the ids below it). For models whose
  // config vocab_size is padded beyond what their tokenizer can decode. 0: every id of the row.
  explicit Sampler(int32_t vocab_limit = 0) : vocab_limit_(vocab_limit) {}
  int32_t vocab_limit() const { return vocab_limit_; }

  // Throws Error: InvalidArgument for an empty row or out-of-range ids, Internal when the logits
  // contain NaN or are all -inf (a backend bug). Params are assumed validated.
  SampleResult sample(std::span<const float> logits, const SamplingParams& params, std::span<const int32_t> prompt_ids,
                      std::span<const int32_t> output_ids, SamplerRng& rng, SamplerScratch& scratch) const;
  // Same, with buffers allocated for this call only.
  SampleResult sample(std::span<const float> logits, const SamplingParams& params, std::span<const int32_t> prompt_ids,
                      std::span<const int32_t> output_ids, SamplerRng& rng) const {
    SamplerScratch scratch;
    return sample(logits, params, prompt_ids, output_ids, rng, scratch);
  }
  // The normalised distribution sample() draws from for these inputs (one-hot when greedy):
  // penalties, temperature, min_p, top-k and top-p applied; one entry per logit (0 beyond the
  // vocabulary limit). For tests and for showing users what their settings do.
  std::vector<float> distribution(std::span<const float> logits, const SamplingParams& params,
                                  std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids) const;

 private:
  // The ids that may be sampled: the row, or its first vocab_limit_ entries.
  std::span<const float> candidates(std::span<const float> logits) const;
  int32_t vocab_limit_ = 0;
};

}  // namespace inferdesk
