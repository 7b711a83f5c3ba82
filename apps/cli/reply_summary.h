// The line `generate` prints on stderr after a text reply, for a person:
//   "— 64 tokens in 1.70 s, 38.2 tok/s, first token 120 ms, stopped: max tokens reached"
// On stderr so that stdout is exactly the reply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sample/sampling_params.h"
#include "core/sched/sequence.h"

namespace inferdesk::cli {

struct ReplyFacts {
  int64_t tokens = 0;
  double time_to_first_token_s = 0;
  double elapsed_s = 0;
  FinishReason reason = FinishReason::None;
  int32_t last_token = -1;
  std::string error;
};

// Why generation stopped, in words: "max tokens reached", "end of turn" (an end-of-sequence
// token), "stop token 42" (one of --stop-ids), "context length reached", "cancelled", "error: ...".
std::string stop_reason_words(const ReplyFacts& facts, const SamplingParams& params,
                              const std::vector<int32_t>& eos_token_ids);

std::string reply_stats_line(const ReplyFacts& facts, const SamplingParams& params,
                             const std::vector<int32_t>& eos_token_ids);

}  // namespace inferdesk::cli
