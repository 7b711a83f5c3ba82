#include "core/sched/sequence.h"

#include <string>

#include "core/util/error.h"

namespace inferdesk {

const char* to_string(SeqStatus status) {
  switch (status) {
    case SeqStatus::Waiting: return "waiting";
    case SeqStatus::Running: return "running";
    case SeqStatus::Preempted: return "preempted";
    case SeqStatus::Finished: return "finished";
  }
  return "unknown";
}

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::None: return "none";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

Sequence::Sequence(SeqId seq_id, std::vector<TokenId> prompt, int32_t max_new_tokens, std::vector<TokenId> stop_tokens)
    : id(seq_id),
      tokens(std::move(prompt)),
      num_prompt_tokens(0),
      max_tokens(max_new_tokens),
      stop_token_ids(std::move(stop_tokens)) {
  const std::string who = "sequence " + std::to_string(id) + ": ";
  if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, who + "empty prompt");
  if (tokens.size() > static_cast<size_t>(kMaxTokens)) {
    throw Error(ErrorCode::InvalidArgument,
                who + "prompt of " + std::to_string(tokens.size()) + " tokens exceeds " + std::to_string(kMaxTokens));
  }
  for (TokenId t : tokens) {
    if (t < 0) {
      throw Error(ErrorCode::InvalidArgument, who + "negative token id " + std::to_string(t));
    }
  }
  if (max_tokens < 1 || max_tokens > kMaxTokens) {
    throw Error(ErrorCode::InvalidArgument, who + "max_tokens must be in [1, " + std::to_string(kMaxTokens) +
                                                "], got " + std::to_string(max_tokens));
  }
  num_prompt_tokens = static_cast<int32_t>(tokens.size());
}

}  // namespace inferdesk
