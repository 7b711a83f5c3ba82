// The one place that decides when a sequence's own tokens finish it. Scheduler::update() applies
// it to every sampled token and returns the finished sequences with their reason; the engine
// reports those reasons. (Cancellation and errors are decided by whoever cancels or fails a
// request; stop strings by core/server, on the decoded text.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/sched/sequence.h"

namespace inferdesk {

// The tokens that stop a request: the model's EOS ids unless ignore_eos, then the request's
// stop_token_ids.
std::vector<TokenId> stop_token_set(std::span<const TokenId> eos_token_ids, bool ignore_eos,
                                    std::span<const TokenId> stop_token_ids);

// Why `s` finishes now that `token` is its newest output token: Stop when the token is one of
// s.stop_token_ids, else Length when s has max_tokens output tokens, else None. Stop wins: a stop
// token that is also the last token allowed reports Stop.
FinishReason finish_reason(const Sequence& s, TokenId token);

// True when `s` has (at least) max_tokens output tokens once `more` further tokens are appended.
bool reaches_length(const Sequence& s, int32_t more = 0);

}  // namespace inferdesk
