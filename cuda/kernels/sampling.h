// Sampling of logits rows on the GPU (sampling.cu): the CPU Sampler's pipeline, penalties to the
// Philox draw, with the raw log-probabilities of the token and the top list.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// One logits row to sample; mirrors inferdesk::SamplingParams (core/sample) and follows the same
// pipeline as the CPU Sampler (core/sample/sampler.h): penalties, then greedy argmax (temperature
// < 1e-5, lowest id wins ties) or temperature, min_p, top-k (ties kept), top-p, and a draw from the
// renormalised distribution. The draw uses Philox keyed by (seed, counter), so a request's tokens
// do not depend on what else is in the batch. Reported log-probabilities (the token's and the
// top list's) are log_softmax of the RAW logits (before penalties and temperature).
struct SampleRowDev {
  float temperature = 1.0f, top_p = 1.0f, min_p = 0.0f;
  float repetition_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  int32_t top_k = 0;         // <= 0: off
  int32_t num_logprobs = 0;  // 0..20 top entries to report
  uint64_t seed = 0;
  uint64_t counter = 0;  // tokens the request generated before this one
  // Penalty entries [penalty_start, penalty_start + penalty_count) of the batch arrays: each is a
  // distinct token of prompt ∪ output (repetition penalty applies to all of them) with its count
  // in the output (frequency/presence apply where count > 0).
  int32_t penalty_start = 0, penalty_count = 0;
};
constexpr int32_t kMaxTopLogprobs = 20;
struct SampleArgs {
  const float* logits = nullptr;  // [rows, vocab], row stride logits_stride (F32)
  int64_t logits_stride = 0;
  // Only ids below vocab are candidates; with vocab < logits_stride (a padded vocabulary) the
  // columns beyond it are never read, so they count as -inf for the draw and the log-probs.
  int32_t rows = 0, vocab = 0;
  const SampleRowDev* row_params = nullptr;  // device [rows]
  const int32_t* penalty_tokens = nullptr;   // device
  const int32_t* penalty_counts = nullptr;   // device
  void* workspace = nullptr;                 // sample_workspace_bytes(rows, vocab), 16-byte aligned (cudaMalloc)
  int32_t* out_token = nullptr;              // device [rows]
  float* out_logprob = nullptr;              // device [rows]
  int32_t* out_top_ids = nullptr;            // device [rows, kMaxTopLogprobs]
  float* out_top_logprobs = nullptr;         // device [rows, kMaxTopLogprobs]
};
void sample_rows(const SampleArgs& a, const Launch& launch);
size_t sample_workspace_bytes(int32_t rows, int32_t vocab);

}  // namespace inferdesk::cuda
