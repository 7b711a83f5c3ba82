// Request bodies for serving benchmarks. A dataset (one file each: workload_random,
// workload_sharegpt, workload_prefix, workload_multiturn) yields Samples (a prompt as text and/or
// token ids, its length, the output length to ask for); make_requests() turns them into the JSON
// bodies of /v1/completions or /v1/chat/completions. A fixed seed gives the same bytes whatever the
// target, so every engine is measured on the same requests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/bench/load_generator.h"

namespace inferdesk {
class Tokenizer;
}

namespace inferdesk::bench {

// vLLM's "random" dataset as token-id prompts (uniform ids in a range every vocabulary has, fixed
// lengths, greedy, ignore_eos so every request produces exactly output_len tokens), streamed with
// usage in the last chunk. Kept for the server tests; RandomDataset (workload_random.h) is the
// general form.
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

enum class Api { Completions, Chat };
const char* endpoint_path(Api api);  // "/v1/completions" or "/v1/chat/completions"

struct Sample {
  std::string text;              // the prompt as text ("" : ids only)
  std::vector<int32_t> ids;      // the prompt's token ids (empty: text only)
  int64_t prompt_len = 0;        // its length in the target's tokens
  int32_t output_len = 0;        // max_tokens to ask for
  int32_t group = -1;            // shared-prefix workload: the prefix it starts with
};

struct BodyOptions {
  Api api = Api::Completions;
  std::string model;  // "" leaves the field out
  bool stream = true;
  // Sent only when true: servers that reject unknown fields (a few do) then still work.
  bool ignore_eos = true;
  double temperature = 0;
  // Completions: send the token ids instead of the text when the sample has both (servers that
  // take ids skip tokenizing; exact lengths without a tokenizer on the client).
  bool prefer_ids = false;
};

// One body per sample, in order. Throws Error(InvalidArgument) for a chat body of an ids-only
// sample (chat messages are text).
std::vector<BenchRequest> make_requests(const std::vector<Sample>& samples, const BodyOptions& o);

// Deterministic draws (std's distributions differ between standard libraries; these do not).
uint64_t draw_below(std::mt19937_64& rng, uint64_t n);  // uniform in [0, n), n > 0
int64_t draw_between(std::mt19937_64& rng, int64_t lo, int64_t hi);  // uniform in [lo, hi]
template <typename T>
void shuffle_in_place(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[draw_below(rng, i)]);
}

// A text whose encoding (without special tokens) is exactly `lead` followed by `len` ids drawn
// from `allowed`: sample ids, decode, re-encode, and resample the tail until the round trip holds
// (the lead: a shared prefix that must survive intact). *ids gets the whole encoding. Throws
// Error(InvalidArgument) when no such text is found in a bounded number of tries.
std::string exact_length_text(const Tokenizer& tok, const std::vector<int32_t>& allowed, int64_t len,
                              std::mt19937_64& rng, std::vector<int32_t>* ids, const std::vector<int32_t>& lead = {});
// The ids a random prompt may use: every id of the tokenizer that is not a special token.
std::vector<int32_t> allowed_ids(const Tokenizer& tok);

}  // namespace inferdesk::bench
