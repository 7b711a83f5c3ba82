// Sequence: one request as the scheduler sees it. Its tokens are the prompt followed by the tokens
// generated so far; num_computed_tokens of them have KV in the cache.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/kv/kv_cache_manager.h"

namespace inferdesk {

// Waiting: queued, has not run yet. Running: admitted, holds KV blocks (possibly mid-prefill).
// Preempted: was running, lost its blocks, queued again (recomputes prompt + output so far).
// Finished: terminal; the scheduler no longer tracks it.
enum class SeqStatus : uint8_t { Waiting, Running, Preempted, Finished };

enum class FinishReason : uint8_t {
  None,       // not finished
  Stop,       // it generated a stop token (finish_policy.h) / the server saw a stop string
  Length,     // max_tokens generated
  Cancelled,  // the user cancelled
  Error,      // the scheduler cannot run it (e.g. it does not fit in the KV cache)
};

const char* to_string(SeqStatus status);
const char* to_string(FinishReason reason);

struct Sequence {
  // Throws Error(InvalidArgument) on an empty prompt, a negative token id, max_tokens < 1 or a
  // prompt longer than kMaxTokens.
  Sequence(SeqId id, std::vector<TokenId> prompt, int32_t max_tokens, std::vector<TokenId> stop_token_ids = {});

  static constexpr int32_t kMaxTokens = 1 << 28;

  SeqId id;
  std::vector<TokenId> tokens;  // prompt, then generated tokens
  int32_t num_prompt_tokens;
  int32_t max_tokens;                   // generated tokens allowed
  std::vector<TokenId> stop_token_ids;  // generating one finishes it (finish_policy.h)
  int32_t num_computed_tokens = 0;
  SeqStatus status = SeqStatus::Waiting;
  FinishReason finish_reason = FinishReason::None;
  uint64_t arrival = 0;  // admission order, set by Scheduler::add
  int32_t num_preemptions = 0;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const TokenId> prompt() const {
    return std::span<const TokenId>(tokens).first(static_cast<size_t>(num_prompt_tokens));
  }
  std::span<const TokenId> output() const {
    return std::span<const TokenId>(tokens).subspan(static_cast<size_t>(num_prompt_tokens));
  }
};

}  // namespace inferdesk
