// SchedulerOutput: what one engine step must compute, row by row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sched/sequence.h"

namespace inferdesk {

// Token of a row scheduled by Scheduler::schedule_ahead(): it is not known on the host when the
// step is scheduled; the backend takes it from the previous step's sampling on the device.
inline constexpr TokenId kPendingToken = -1;

// One scheduled sequence. Its `count` tokens occupy positions [start, start + count).
struct ScheduledSeq {
  SeqId id = 0;
  std::vector<TokenId> tokens;       // tokens to feed this step (prompt and/or generated tokens);
                                     // {kPendingToken} in a step from schedule_ahead()
  int32_t start = 0;                 // num_computed_tokens before this step = position of tokens[0]
  int32_t count = 0;                 // tokens.size()
  bool sample = false;               // this step computes all known tokens: sample from its last row
  std::vector<BlockId> block_table;  // after allocation; covers positions < start + count
};

struct FinishedSeq {
  SeqId id = 0;
  FinishReason reason = FinishReason::None;
  std::string message;  // why, for FinishReason::Error
};

struct SchedulerOutput {
  uint64_t step = 0;  // matches the scheduler's step counter; update() checks it
  int32_t block_size = 0;
  std::vector<ScheduledSeq> rows;
  int32_t num_batched_tokens = 0;     // sum of rows' counts
  std::vector<SeqId> preempted;       // lost their blocks this step, back at the front of waiting
  std::vector<FinishedSeq> finished;  // finished by the scheduler itself (errors)
  // True when sequences are pending but nothing could be scheduled; stall_reason says why.
  bool stalled = false;
  std::string stall_reason;
  // Set by schedule_ahead(): every row is one kPendingToken, and row i's token is the token
  // sampled for row i of the previous step (same sequences, same order).
  bool tokens_from_previous = false;

  bool empty() const { return rows.empty(); }
  int32_t num_samples() const;
  // Flattened over rows, in row order: one entry per token. kPendingToken entries stay as they
  // are; the backend replaces them on the device.
  std::vector<TokenId> token_ids() const;
  std::vector<int32_t> positions() const;
  // KV slot of each token: block_table[pos / block_size] * block_size + pos % block_size.
  std::vector<int64_t> slot_mapping() const;
  // Index into the flattened tokens of each sampling row's last token, in row order.
  std::vector<int32_t> sample_indices() const;
};

}  // namespace inferdesk
