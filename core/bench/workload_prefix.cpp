#include "core/bench/workload_prefix.h"

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk::bench {

namespace {

std::vector<int32_t> draw_ids(std::mt19937_64& rng, const std::vector<int32_t>& allowed, int32_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = allowed[draw_below(rng, allowed.size())];
  return ids;
}

}  // namespace

std::vector<Sample> sample_prefix(const PrefixDataset& d, const Tokenizer* tok) {
  if (d.num_prefixes < 1 || d.prefix_len < 1 || d.suffix_len < 1 || d.output_len < 1)
    throw Error(ErrorCode::InvalidArgument, "shared-prefix dataset: counts and lengths must be >= 1");
  if (d.num_requests < d.num_prefixes)
    throw Error(ErrorCode::InvalidArgument, "shared-prefix dataset: fewer requests than prefixes");
  if (!tok && (d.token_id_min < 0 || d.token_id_max <= d.token_id_min))
    throw Error(ErrorCode::InvalidArgument, "shared-prefix dataset: the token id range is empty");
  std::mt19937_64 rng(d.seed);
  std::vector<int32_t> allowed;
  if (tok)
    allowed = allowed_ids(*tok);
  else
    for (int32_t id = d.token_id_min; id < d.token_id_max; ++id) allowed.push_back(id);
  const int32_t per_prefix = d.num_requests / d.num_prefixes;
  std::vector<Sample> out;
  for (int32_t p = 0; p < d.num_prefixes; ++p) {
    std::vector<int32_t> prefix_ids;
    if (tok)
      exact_length_text(*tok, allowed, d.prefix_len, rng, &prefix_ids);
    else
      prefix_ids = draw_ids(rng, allowed, d.prefix_len);
    for (int32_t k = 0; k < per_prefix; ++k) {
      Sample s;
      if (tok) {
        s.text = exact_length_text(*tok, allowed, d.suffix_len, rng, &s.ids, prefix_ids);
      } else {
        s.ids = prefix_ids;
        const auto suffix = draw_ids(rng, allowed, d.suffix_len);
        s.ids.insert(s.ids.end(), suffix.begin(), suffix.end());
      }
      s.prompt_len = static_cast<int64_t>(s.ids.size());
      s.output_len = d.output_len;
      s.group = p;
      out.push_back(std::move(s));
    }
  }
  shuffle_in_place(out, rng);
  return out;
}

}  // namespace inferdesk::bench
