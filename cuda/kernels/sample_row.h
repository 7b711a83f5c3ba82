// The device parameters of one sampling row (SampleRowDev, sampling.h) from a request's
// SamplingParams: one mapping for the CUDA backend and the GPU sampling tests.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/sample/sampling_params.h"
#include "cuda/kernels/sampling.h"

namespace inferdesk::cuda {

// penalty_start / penalty_count are left at 0: the caller places the row's penalty entries.
inline SampleRowDev make_sample_row(const SamplingParams& p, uint64_t seed, uint64_t counter) {
  SampleRowDev d;
  d.temperature = p.temperature;
  d.top_p = p.top_p;
  d.min_p = p.min_p;
  d.repetition_penalty = p.repetition_penalty;
  d.presence_penalty = p.presence_penalty;
  d.frequency_penalty = p.frequency_penalty;
  d.top_k = p.top_k;
  d.num_logprobs = std::min(p.logprobs, kMaxTopLogprobs);
  d.seed = seed;
  d.counter = counter;
  return d;
}

}  // namespace inferdesk::cuda
