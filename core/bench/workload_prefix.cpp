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

// A suffix whose text, after the prefix's, encodes to exactly prefix ids + suffix ids.
Sample text_prompt(const Tokenizer& tok, const std::vector<int32_t>& allowed, const std::string& prefix_text,
                   const std::vector<int32_t>& prefix_ids, int32_t suffix_len, std::mt19937_64& rng) {
  for (int tries = 0; tries < 32; ++tries) {
    std::vector<int32_t> suffix_ids;
    const std::string suffix = exact_length_text(tok, allowed, suffix_len, rng, &suffix_ids);
    Sample s;
    s.text = prefix_text + suffix;
    s.ids = tok.encode(s.text, false);
    std::vector<int32_t> want = prefix_ids;
    want.insert(want.end(), suffix_ids.begin(), suffix_ids.end());
    if (s.ids == want) return s;
  }
  throw Error(ErrorCode::InvalidArgument, "shared-prefix dataset: no suffix keeps the prefix's tokens intact");
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
    std::string prefix_text;
    if (tok)
      prefix_text = exact_length_text(*tok, allowed, d.prefix_len, rng, &prefix_ids);
    else
      prefix_ids = draw_ids(rng, allowed, d.prefix_len);
    for (int32_t k = 0; k < per_prefix; ++k) {
      Sample s;
      if (tok) {
        s = text_prompt(*tok, allowed, prefix_text, prefix_ids, d.suffix_len, rng);
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
