#include "core/sched/finish_policy.h"

#include <algorithm>

namespace inferdesk {

std::vector<TokenId> stop_token_set(std::span<const TokenId> eos_token_ids, bool ignore_eos,
                                    std::span<const TokenId> stop_token_ids) {
  std::vector<TokenId> out;
  if (!ignore_eos) out.assign(eos_token_ids.begin(), eos_token_ids.end());
  out.insert(out.end(), stop_token_ids.begin(), stop_token_ids.end());
  return out;
}

FinishReason finish_reason(const Sequence& s, TokenId token) {
  if (std::ranges::find(s.stop_token_ids, token) != s.stop_token_ids.end()) return FinishReason::Stop;
  if (reaches_length(s)) return FinishReason::Length;
  return FinishReason::None;
}

bool reaches_length(const Sequence& s, int32_t more) { return s.num_output_tokens() + more >= s.max_tokens; }

}  // namespace inferdesk
