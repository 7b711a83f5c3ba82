// vLLM's "random" dataset: per-request input and output lengths drawn uniformly from
// [floor(len * (1 - r)), ceil(len * (1 + r))] (r = --random-range-ratio in [0, 1); output at least
// 1; input_len counts the special tokens the tokenizer adds, a BOS), an optional fixed random prefix shared by every prompt, then random tokens. With the target's
// tokenizer the prompt is text whose encoding has exactly that many tokens (sampled ids, decoded,
// re-encoded until the round trip holds); without one it is token ids drawn from
// [token_id_min, token_id_max) (every vocabulary has them).
#pragma once

#include "core/bench/workload.h"

namespace inferdesk::bench {

struct RandomDataset {
  int32_t num_requests = 1;
  int32_t input_len = 1024, output_len = 128;
  double range_ratio = 0;   // [0, 1)
  int32_t prefix_len = 0;   // tokens every prompt starts with (counted on top of input_len)
  uint64_t seed = 0;
  int32_t token_id_min = 10, token_id_max = 10000;  // ids-only prompts
};

// The closed range a length is drawn from, as vLLM bounds it.
std::pair<int64_t, int64_t> length_range(int64_t len, double range_ratio, int64_t at_least);

// Throws Error(InvalidArgument) for lengths < 1, a ratio outside [0, 1) or an empty id range.
std::vector<Sample> sample_random(const RandomDataset& d, const Tokenizer* tok);

}  // namespace inferdesk::bench
