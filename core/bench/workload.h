// Request bodies for serving benchmarks: vLLM's "random" dataset as token-id prompts (uniform ids
// in a range every vocabulary has, fixed input / output lengths, greedy, ignore_eos so every
// request produces exactly output_len tokens), streamed with usage in the last chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/bench/load_generator.h"

namespace inferdesk::bench {

struct RandomWorkload {
  int32_t num_requests = 1;
  int32_t input_len = 128, output_len = 128;
  int32_t token_id_min = 10, token_id_max = 10000;  // ids drawn from [min, max)
  uint64_t seed = 0;
  std::string model;  // the "model" field ("" leaves it out)
  bool stream = true;
  bool ignore_eos = true;
  double temperature = 0;
};

// /v1/completions bodies with "prompt": [ids].
std::vector<BenchRequest> random_completions(const RandomWorkload& w);

}  // namespace inferdesk::bench
