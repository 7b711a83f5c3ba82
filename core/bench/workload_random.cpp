#include "core/bench/workload_random.h"

#include <cmath>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

std::pair<int64_t, int64_t> length_range(int64_t len, double r, int64_t at_least) {
  const auto lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1.0 - r)));
  const auto hi = static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1.0 + r)));
  return {std::max(lo, at_least), std::max(hi, at_least)};
}

namespace {

void validate(const RandomDataset& d, const Tokenizer* tok) {
  if (d.num_requests < 0 || d.input_len < 1 || d.output_len < 1 || d.prefix_len < 0)
    throw Error(ErrorCode::InvalidArgument, "random dataset: input and output lengths must be >= 1");
  if (!(d.range_ratio >= 0 && d.range_ratio < 1))
    throw Error(ErrorCode::InvalidArgument, "--random-range-ratio must be in [0, 1)");
  if (!tok && (d.token_id_min < 0 || d.token_id_max <= d.token_id_min))
    throw Error(ErrorCode::InvalidArgument, "random dataset: the token id range is empty");
}

}  // namespace

std::vector<Sample> sample_random(const RandomDataset& d, const Tokenizer* tok) {
  validate(d, tok);
  std::mt19937_64 rng(d.seed);
  // As vLLM: the tokens the server's tokenizer adds (a BOS) are part of input_len.
  const int64_t added = tok ? static_cast<int64_t>(tok->encode("", true).size()) : 0;
  const auto [in_lo, in_hi] = length_range(std::max<int64_t>(d.input_len - added, 1), d.range_ratio, 1);
  const auto [out_lo, out_hi] = length_range(d.output_len, d.range_ratio, 1);
  std::vector<int32_t> allowed;
  if (tok) {
    allowed = allowed_ids(*tok);
  } else {
    for (int32_t id = d.token_id_min; id < d.token_id_max; ++id) allowed.push_back(id);
  }
  std::vector<int32_t> prefix_ids;
  if (d.prefix_len > 0) {
    if (tok)
      exact_length_text(*tok, allowed, d.prefix_len, rng, &prefix_ids);
    else
      for (int32_t i = 0; i < d.prefix_len; ++i) prefix_ids.push_back(allowed[draw_below(rng, allowed.size())]);
  }
  std::vector<Sample> out;
  out.reserve(static_cast<size_t>(d.num_requests));
  for (int32_t i = 0; i < d.num_requests; ++i) {
    Sample s;
    const int64_t len = draw_between(rng, in_lo, in_hi);
    s.output_len = static_cast<int32_t>(draw_between(rng, out_lo, out_hi));
    if (tok) {
      s.text = exact_length_text(*tok, allowed, len, rng, &s.ids, prefix_ids);
    } else {
      s.ids = prefix_ids;
      for (int64_t k = 0; k < len; ++k) s.ids.push_back(allowed[draw_below(rng, allowed.size())]);
    }
    s.prompt_len = static_cast<int64_t>(s.ids.size());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace inferdesk::bench
