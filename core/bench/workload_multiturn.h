// Multi-turn chats: num_conversations conversations of `turns` user turns each. Turn t of a
// conversation is sent once the reply to turn t - 1 has arrived, carrying the conversation so
// far (every user turn and every reply, in order) as chat messages, as a chat client does. The
// requests are ordered turn by turn (all first turns, then all second turns, ...); first turns
// follow the load's arrival process, later ones leave when their previous turn ends.
#pragma once

#include "core/bench/workload.h"

namespace inferdesk::bench {

struct MultiTurnDataset {
  int32_t num_conversations = 10;
  int32_t turns = 3;
  int32_t input_len = 64;  // tokens of each user turn (exact, by the tokenizer)
  int32_t output_len = 64;
  uint64_t seed = 0;
};

// Index of turn t of conversation c in the request list.
inline size_t turn_index(const MultiTurnDataset& d, int32_t conversation, int32_t turn) {
  return static_cast<size_t>(turn) * static_cast<size_t>(d.num_conversations) + static_cast<size_t>(conversation);
}

// Chat bodies (o.api is taken as Chat). Each request's prompt_tokens counts its own user turn only
// (the history's length depends on the replies). Throws Error(InvalidArgument) for counts < 1.
std::vector<BenchRequest> multiturn_requests(const MultiTurnDataset& d, const Tokenizer& tok, const BodyOptions& o);

}  // namespace inferdesk::bench
