// The shared-prefix workload (vLLM's prefix_repetition dataset): num_prefixes random prefixes of
// prefix_len tokens, each followed by num_requests / num_prefixes unique suffixes of suffix_len
// tokens, shuffled by the seed. A server with prefix caching computes each prefix once. With a
// tokenizer each prompt is text whose encoding is exactly prefix ids + suffix ids (so the cached
// blocks really are shared); without one, token ids.
#pragma once

#include "core/bench/workload.h"

namespace inferdesk::bench {

struct PrefixDataset {
  int32_t num_requests = 100;
  int32_t num_prefixes = 10;
  int32_t prefix_len = 256, suffix_len = 256;
  int32_t output_len = 128;
  uint64_t seed = 0;
  int32_t token_id_min = 10, token_id_max = 10000;  // ids-only prompts
};

// Sample::group is the prefix's index. Throws Error(InvalidArgument) for num_requests <
// num_prefixes or lengths < 1.
std::vector<Sample> sample_prefix(const PrefixDataset& d, const Tokenizer* tok);

}  // namespace inferdesk::bench
