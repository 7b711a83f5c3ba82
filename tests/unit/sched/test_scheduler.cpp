// Scheduler: token budget, chunked prefill mixed with decodes, max_num_seqs, FCFS, preemption
// (victim, freed blocks, resumption), cancellation, impossible prompts, protocol errors, and the
// overlap protocol (schedule_ahead: rows, declines, update order, abort_steps, a pipelined soak).
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<TokenId>;
using SeqIds = std::vector<SeqId>;

Tokens iota_tokens(int n, TokenId first) {
  Tokens t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Token the fake model samples: depends on the sequence and position only.
TokenId fake_token(SeqId id, int32_t pos) { return static_cast<TokenId>(1000 + id * 100 + pos); }

// Runs the step: one sampled token per sampling row.
std::vector<FinishedSeq> run_step(Scheduler& s, const SchedulerOutput& out) {
  Tokens sampled;
  for (const ScheduledSeq& r : out.rows) {
    if (r.sample) sampled.push_back(fake_token(r.id, r.start + r.count));
  }
  return s.update(out, sampled);
}

struct RowView {
  SeqId id;
  int32_t start, count;
  bool sample;
  bool operator==(const RowView&) const = default;
};

std::vector<RowView> rows(const SchedulerOutput& out) {
  std::vector<RowView> v;
  for (const ScheduledSeq& r : out.rows) v.push_back({r.id, r.start, r.count, r.sample});
  return v;
}

void PrintTo(const RowView& r, std::ostream* os) {
  *os << "{id " << r.id << " start " << r.start << " count " << r.count
      << (r.sample ? " sample}" : "}");
}

Tokens output_of(const Sequence* s) { return Tokens(s->output().begin(), s->output().end()); }

// The code of the Error that f() throws (its message into *what), or nullopt if it throws none.
template <typename F>
std::optional<ErrorCode> error_code(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (what != nullptr) *what = e.what();
    return e.code();
  }
  return std::nullopt;
}

TEST(Scheduler, RejectsBadConfigAndSequences) {
  KvCacheManager kv(4, 4, true);
  EXPECT_THROW(Scheduler(SchedulerConfig{.max_num_seqs = 0}, kv), Error);
  EXPECT_THROW(Scheduler(SchedulerConfig{.max_num_batched_tokens = 0}, kv), Error);
  EXPECT_THROW(Scheduler(SchedulerConfig{.long_prefill_token_threshold = -1}, kv), Error);
  EXPECT_THROW(Sequence(1, {}, 4), Error);
  EXPECT_THROW(Sequence(1, {1, -2}, 4), Error);
  EXPECT_THROW(Sequence(1, {1}, 0), Error);
  Scheduler s({}, kv);
  s.add(Sequence(7, {1, 2}, 1));
  try {
    s.add(Sequence(7, {3}, 1));
    FAIL() << "duplicate id accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

TEST(Scheduler, PrefillThenDecodeUntilMaxTokens) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(10, 0), 3));
  SchedulerOutput o1 = s.schedule();
  ASSERT_EQ(o1.rows.size(), 1u);
  EXPECT_EQ(o1.rows[0].tokens, iota_tokens(10, 0));
  EXPECT_EQ(rows(o1), (std::vector<RowView>{{1, 0, 10, true}}));
  EXPECT_EQ(o1.rows[0].block_table, (Ids{0, 1, 2}));
  EXPECT_EQ(o1.slot_mapping(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(o1.sample_indices(), (std::vector<int32_t>{9}));
  EXPECT_TRUE(run_step(s, o1).empty());
  EXPECT_EQ(s.find(1)->num_computed_tokens, 10);
  EXPECT_EQ(s.find(1)->output().size(), 1u);

  SchedulerOutput o2 = s.schedule();
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 10, 1, true}}));
  EXPECT_EQ(o2.rows[0].tokens, (Tokens{fake_token(1, 10)}));
  EXPECT_EQ(o2.positions(), (std::vector<int32_t>{10}));
  EXPECT_EQ(o2.slot_mapping(), (std::vector<int64_t>{10}));
  EXPECT_TRUE(run_step(s, o2).empty());

  SchedulerOutput o3 = s.schedule();
  EXPECT_EQ(rows(o3), (std::vector<RowView>{{1, 11, 1, true}}));
  std::vector<FinishedSeq> fin = run_step(s, o3);
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].id, 1);
  EXPECT_EQ(fin[0].reason, FinishReason::Length);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(kv.num_free_blocks(), 16);
  EXPECT_TRUE(s.schedule().empty());
}

TEST(Scheduler, ChunkedPrefillMixesWithDecodesWithinBudget) {
  KvCacheManager kv(32, 4, true);
  Scheduler s({.max_num_batched_tokens = 8}, kv);
  s.add(Sequence(1, iota_tokens(4, 0), 10));
  s.add(Sequence(2, iota_tokens(20, 100), 10));
  const std::vector<std::vector<RowView>> expected = {
      {{1, 0, 4, true}, {2, 0, 4, false}},
      {{1, 4, 1, true}, {2, 4, 7, false}},
      {{1, 5, 1, true}, {2, 11, 7, false}},
      {{1, 6, 1, true}, {2, 18, 2, true}},
      {{1, 7, 1, true}, {2, 20, 1, true}},
  };
  for (const auto& want : expected) {
    SchedulerOutput o = s.schedule();
    EXPECT_EQ(rows(o), want);
    EXPECT_LE(o.num_batched_tokens, 8);
    run_step(s, o);
  }
  // Sequence 2's chunks fed its prompt in order, then its first generated token.
  EXPECT_EQ(s.find(2)->num_computed_tokens, 21);
  EXPECT_EQ(s.find(2)->output()[0], fake_token(2, 20));
}

TEST(Scheduler, ChunkedPrefillRowsCarryTheirPromptSlice) {
  KvCacheManager kv(32, 4, true);
  Scheduler s({.max_num_batched_tokens = 6}, kv);
  const Tokens prompt = iota_tokens(14, 50);
  s.add(Sequence(9, prompt, 1));
  Tokens fed;
  std::vector<int32_t> positions;
  for (int step = 0; step < 3; ++step) {
    SchedulerOutput o = s.schedule();
    ASSERT_EQ(o.rows.size(), 1u);
    fed.insert(fed.end(), o.rows[0].tokens.begin(), o.rows[0].tokens.end());
    auto p = o.positions();
    positions.insert(positions.end(), p.begin(), p.end());
    EXPECT_EQ(o.rows[0].sample, step == 2);
    run_step(s, o);
  }
  EXPECT_EQ(fed, prompt);
  EXPECT_EQ(positions, iota_tokens(14, 0));
  EXPECT_FALSE(s.has_unfinished());  // max_tokens 1 reached after the prefill
}

TEST(Scheduler, LongPrefillThresholdCapsChunks) {
  KvCacheManager kv(32, 4, true);
  Scheduler s({.long_prefill_token_threshold = 3}, kv);
  s.add(Sequence(1, iota_tokens(10, 0), 2));
  std::vector<int32_t> counts;
  while (s.has_unfinished()) {
    SchedulerOutput o = s.schedule();
    counts.push_back(o.rows.at(0).count);
    run_step(s, o);
  }
  EXPECT_EQ(counts, (std::vector<int32_t>{3, 3, 3, 1, 1}));
}

TEST(Scheduler, WithoutChunkedPrefillPromptsRunWhole) {
  KvCacheManager kv(32, 4, true);
  Scheduler s({.max_num_batched_tokens = 8, .enable_chunked_prefill = false}, kv);
  s.add(Sequence(1, iota_tokens(6, 0), 5));
  s.add(Sequence(2, iota_tokens(5, 100), 5));
  s.add(Sequence(3, iota_tokens(9, 200), 5));  // can never run in one 8-token step
  SchedulerOutput o1 = s.schedule();
  EXPECT_EQ(rows(o1), (std::vector<RowView>{{1, 0, 6, true}}));  // 2 needs 5 > 2 left
  ASSERT_EQ(o1.finished.size(), 1u);
  EXPECT_EQ(o1.finished[0].id, 3);
  EXPECT_EQ(o1.finished[0].reason, FinishReason::Error);
  EXPECT_NE(o1.finished[0].message.find("max_num_batched_tokens"), std::string::npos);
  run_step(s, o1);
  SchedulerOutput o2 = s.schedule();
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 6, 1, true}, {2, 0, 5, true}}));
}

TEST(Scheduler, MaxNumSeqsAndFcfsAdmission) {
  KvCacheManager kv(32, 4, true);
  Scheduler s({.max_num_seqs = 2}, kv);
  s.add(Sequence(10, {1, 2, 3}, 2));
  s.add(Sequence(11, {4, 5}, 4));
  s.add(Sequence(12, {6}, 4));
  SchedulerOutput o1 = s.schedule();
  EXPECT_EQ(rows(o1), (std::vector<RowView>{{10, 0, 3, true}, {11, 0, 2, true}}));
  EXPECT_EQ(s.waiting(), (std::deque<SeqId>{12}));
  run_step(s, o1);
  SchedulerOutput o2 = s.schedule();
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{10, 3, 1, true}, {11, 2, 1, true}}));
  auto fin = run_step(s, o2);  // 10 reaches max_tokens 2
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].id, 10);
  SchedulerOutput o3 = s.schedule();
  EXPECT_EQ(rows(o3), (std::vector<RowView>{{11, 3, 1, true}, {12, 0, 1, true}}));
  EXPECT_EQ(s.running(), (SeqIds{11, 12}));
  EXPECT_EQ(s.find(12)->arrival, 2u);
}

TEST(Scheduler, HeadOfQueueIsNotOvertaken) {
  KvCacheManager kv(4, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(8, 0), 5));    // 2 blocks
  s.add(Sequence(2, iota_tokens(12, 100), 5));  // 3 blocks: does not fit beside 1
  s.add(Sequence(3, {7}, 5));                   // 1 block: would fit, but must wait its turn
  SchedulerOutput o = s.schedule();
  EXPECT_EQ(rows(o), (std::vector<RowView>{{1, 0, 8, true}}));
  EXPECT_EQ(s.waiting(), (std::deque<SeqId>{2, 3}));
  EXPECT_EQ(kv.num_free_blocks(), 2);
}

TEST(Scheduler, PreemptsMostRecentlyAdmittedAndResumesIt) {
  KvCacheManager kv(4, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(7, 0), 4));
  s.add(Sequence(2, iota_tokens(7, 100), 4));
  SchedulerOutput o1 = s.schedule();
  EXPECT_EQ(rows(o1), (std::vector<RowView>{{1, 0, 7, true}, {2, 0, 7, true}}));
  EXPECT_EQ(o1.rows[0].block_table, (Ids{0, 1}));
  EXPECT_EQ(o1.rows[1].block_table, (Ids{2, 3}));
  run_step(s, o1);
  SchedulerOutput o2 = s.schedule();  // position 7 still fits both tables
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 7, 1, true}, {2, 7, 1, true}}));
  EXPECT_TRUE(o2.preempted.empty());
  run_step(s, o2);

  // Position 8 needs a third block; the pool is full: 2 (admitted last) is preempted.
  SchedulerOutput o3 = s.schedule();
  EXPECT_EQ(o3.preempted, (SeqIds{2}));
  EXPECT_EQ(rows(o3), (std::vector<RowView>{{1, 8, 1, true}}));
  EXPECT_EQ(o3.rows[0].block_table, (Ids{0, 1, 3}));  // 2 freed 3 then 2: its tail goes first
  const Sequence* p = s.find(2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->status, SeqStatus::Preempted);
  EXPECT_EQ(p->num_computed_tokens, 0);
  EXPECT_EQ(p->num_preemptions, 1);
  EXPECT_FALSE(kv.has_seq(2));
  EXPECT_EQ(s.waiting(), (std::deque<SeqId>{2}));
  EXPECT_EQ(kv.pool().free_queue(), (Ids{2}));  // 2's head block, still cached
  run_step(s, o3);

  // 2 cannot come back yet: it needs 3 blocks (1 cached + 2 new), 1 is free.
  SchedulerOutput o4 = s.schedule();
  EXPECT_EQ(rows(o4), (std::vector<RowView>{{1, 9, 1, true}}));
  auto fin = run_step(s, o4);
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].id, 1);
  EXPECT_EQ(kv.pool().free_queue(), (Ids{2, 3, 1, 0}));

  // Resumed: its first block is served from the cache; prompt tail + 2 outputs recomputed.
  SchedulerOutput o5 = s.schedule();
  EXPECT_EQ(rows(o5), (std::vector<RowView>{{2, 4, 5, true}}));
  EXPECT_EQ(o5.rows[0].block_table, (Ids{2, 3, 1}));
  EXPECT_EQ(o5.rows[0].tokens,
            (Tokens{104, 105, 106, fake_token(2, 7), fake_token(2, 8)}));
  run_step(s, o5);
  while (s.has_unfinished()) run_step(s, s.schedule());
  EXPECT_EQ(kv.num_free_blocks(), 4);
  EXPECT_EQ(s.stats().preemptions, 1u);
}

TEST(Scheduler, PreemptionPicksTheLastAdmittedOfThree) {
  KvCacheManager kv(6, 4, true);
  Scheduler s({}, kv);
  for (SeqId id : {1, 2, 3}) s.add(Sequence(id, iota_tokens(8, 100 * id), 8));
  SchedulerOutput o1 = s.schedule();
  EXPECT_EQ(kv.num_free_blocks(), 0);
  run_step(s, o1);
  SchedulerOutput o2 = s.schedule();  // everyone needs a 3rd block
  EXPECT_EQ(o2.preempted, (SeqIds{3}));
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 8, 1, true}, {2, 8, 1, true}}));
  EXPECT_EQ(o2.rows[0].block_table, (Ids{0, 1, 5}));
  EXPECT_EQ(o2.rows[1].block_table, (Ids{2, 3, 4}));
  EXPECT_EQ(s.running(), (SeqIds{1, 2}));
  EXPECT_EQ(s.waiting(), (std::deque<SeqId>{3}));
}

TEST(Scheduler, SequenceThatPreemptsItselfWaitsAtTheFront) {
  KvCacheManager kv(5, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(7, 0), 8));     // 2 blocks
  s.add(Sequence(2, iota_tokens(12, 100), 8));  // 3 blocks
  s.add(Sequence(3, {1}, 8));                   // no block left for it
  run_step(s, s.schedule());
  EXPECT_EQ(s.running(), (SeqIds{1, 2}));
  EXPECT_EQ(s.waiting(), (std::deque<SeqId>{3}));
  // Position 7 fits 1's table; 2 needs a 4th block, is itself the last admitted: it yields.
  SchedulerOutput o = s.schedule();
  EXPECT_EQ(o.preempted, (SeqIds{2}));
  EXPECT_EQ(rows(o), (std::vector<RowView>{{1, 7, 1, true}}));
  EXPECT_EQ(s.waiting(), (std::deque<SeqId>{2, 3}));  // ahead of 3, no admission this step
  EXPECT_EQ(kv.pool().free_queue(), (Ids{4, 3, 2}));
  EXPECT_EQ(kv.pool().ref_count(2), 0);
}

TEST(Scheduler, CancelWaitingAndRunningFreesBlocks) {
  KvCacheManager kv(8, 4, true);
  Scheduler s({.max_num_seqs = 2}, kv);
  s.add(Sequence(1, iota_tokens(6, 0), 10));
  s.add(Sequence(2, iota_tokens(6, 100), 10));
  s.add(Sequence(3, iota_tokens(6, 200), 10));
  run_step(s, s.schedule());
  EXPECT_EQ(kv.num_free_blocks(), 4);
  EXPECT_TRUE(s.cancel(3));  // waiting
  EXPECT_EQ(s.num_waiting(), 0);
  EXPECT_TRUE(s.cancel(1));  // running
  EXPECT_EQ(kv.num_free_blocks(), 6);
  EXPECT_FALSE(kv.has_seq(1));
  EXPECT_FALSE(s.cancel(1));
  EXPECT_EQ(s.find(1), nullptr);
  // Between schedule() and update(): the row is dropped, the blocks are free at once.
  SchedulerOutput o = s.schedule();
  EXPECT_EQ(rows(o), (std::vector<RowView>{{2, 6, 1, true}}));
  std::optional<Sequence> done = s.finish(2, FinishReason::Cancelled);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, SeqStatus::Finished);
  EXPECT_EQ(done->finish_reason, FinishReason::Cancelled);
  EXPECT_EQ(done->output().size(), 1u);
  EXPECT_TRUE(run_step(s, o).empty());
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_FALSE(s.has_unfinished());
  SchedulerOutput after = s.schedule();
  EXPECT_TRUE(after.empty());
  EXPECT_FALSE(after.stalled);
}

TEST(Scheduler, PromptBiggerThanThePoolFailsWithReason) {
  KvCacheManager kv(4, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(17, 0), 4));
  s.add(Sequence(2, iota_tokens(5, 0), 1));
  EXPECT_EQ(s.find(1), nullptr);  // already finished
  SchedulerOutput o = s.schedule();
  ASSERT_EQ(o.finished.size(), 1u);
  EXPECT_EQ(o.finished[0].id, 1);
  EXPECT_EQ(o.finished[0].reason, FinishReason::Error);
  EXPECT_EQ(o.finished[0].message,
            "prompt of 17 tokens needs 5 blocks but the cache has 4 (block size 4)");
  EXPECT_EQ(rows(o), (std::vector<RowView>{{2, 0, 5, true}}));
  run_step(s, o);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_TRUE(s.schedule().finished.empty());  // reported once
}

TEST(Scheduler, GenerationOutgrowingThePoolFailsInsteadOfLooping) {
  KvCacheManager kv(2, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(6, 0), 100));
  std::vector<FinishedSeq> errors;
  int steps = 0;
  while (s.has_unfinished() && steps < 50) {
    SchedulerOutput o = s.schedule();
    EXPECT_FALSE(o.stalled) << o.stall_reason;
    errors.insert(errors.end(), o.finished.begin(), o.finished.end());
    run_step(s, o);
    ++steps;
  }
  EXPECT_FALSE(s.has_unfinished());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "sequence of 9 tokens (prompt + generated) needs 3 blocks but the cache has 2 "
            "(block size 4)");
  EXPECT_EQ(kv.num_free_blocks(), 2);
}

TEST(Scheduler, FinishedPromptIsServedFromThePrefixCache) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  const Tokens system = iota_tokens(12, 0);
  Tokens a = system, b = system;
  a.push_back(50);
  b.insert(b.end(), {60, 61});
  s.add(Sequence(1, a, 1));
  run_step(s, s.schedule());
  EXPECT_FALSE(s.has_unfinished());
  s.add(Sequence(2, b, 1));
  SchedulerOutput o = s.schedule();
  EXPECT_EQ(rows(o), (std::vector<RowView>{{2, 12, 2, true}}));
  EXPECT_EQ(o.rows[0].block_table, (Ids{0, 1, 2, 4}));
  EXPECT_EQ(kv.stats().prefix_hit_tokens, 12);
  EXPECT_EQ(kv.stats().prefix_query_tokens, 13 + 14);
}

TEST(Scheduler, ProtocolMisuseIsAnError) {
  KvCacheManager kv(8, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, {1, 2, 3}, 3));
  SchedulerOutput o = s.schedule();
  EXPECT_THROW(s.schedule(), Error);  // update() missing
  try {
    s.update(o, Tokens{});
    FAIL() << "missing sampled token accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
  s.update(o, Tokens{5});
  EXPECT_THROW(s.update(o, Tokens{5}), Error);  // applied twice
  EXPECT_EQ(s.find(1)->num_computed_tokens, 3);
  EXPECT_EQ(s.find(1)->output().size(), 1u);
}


// --- Overlap protocol: schedule_ahead() ---------------------------------------------------------

// Two sequences past their prefill: 1 (prompt 6, blocks {0, 1}) and 2 (prompt 7, blocks {2, 3}).
// Returns the first decode step, not yet updated.
SchedulerOutput two_decoding(Scheduler& s, int32_t max_tokens_1 = 10) {
  s.add(Sequence(1, iota_tokens(6, 0), max_tokens_1));
  s.add(Sequence(2, iota_tokens(7, 100), 10));
  SchedulerOutput o1 = s.schedule();
  EXPECT_FALSE(s.schedule_ahead(o1).has_value());  // prefill rows: count > 1
  run_step(s, o1);
  SchedulerOutput o2 = s.schedule();
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 6, 1, true}, {2, 7, 1, true}}));
  return o2;
}

TEST(SchedulerAhead, RowsFollowThePendingStepOnePositionLater) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  SchedulerOutput o2 = two_decoding(s);
  EXPECT_FALSE(o2.tokens_from_previous);
  EXPECT_EQ(kv.num_free_blocks(), 12);
  std::optional<SchedulerOutput> ahead = s.schedule_ahead(o2);
  ASSERT_TRUE(ahead.has_value());
  EXPECT_EQ(ahead->step, o2.step + 1);
  EXPECT_EQ(ahead->block_size, 4);
  EXPECT_TRUE(ahead->tokens_from_previous);
  EXPECT_EQ(rows(*ahead), (std::vector<RowView>{{1, 7, 1, true}, {2, 8, 1, true}}));
  EXPECT_EQ(ahead->token_ids(), (Tokens{kPendingToken, kPendingToken}));  // the backend fills them
  EXPECT_EQ(ahead->num_batched_tokens, 2);
  EXPECT_TRUE(ahead->preempted.empty() && ahead->finished.empty() && !ahead->stalled);
  // Position 7 still fits 1's second block; position 8 opens a third block for 2.
  EXPECT_EQ(ahead->rows[0].block_table, (Ids{0, 1}));
  EXPECT_EQ(ahead->rows[1].block_table, (Ids{2, 3, 4}));
  EXPECT_EQ(kv.num_free_blocks(), 11);
  EXPECT_EQ(ahead->positions(), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(ahead->slot_mapping(), (std::vector<int64_t>{7, 16}));
  EXPECT_EQ(ahead->sample_indices(), (std::vector<int32_t>{0, 1}));
  // Nothing is applied before the updates.
  EXPECT_EQ(s.find(1)->num_computed_tokens, 6);
  EXPECT_EQ(s.find(2)->num_tokens(), 8);
  EXPECT_TRUE(s.has_pending_step());
  EXPECT_EQ(s.stats().steps, 3u);
  EXPECT_EQ(s.stats().scheduled_tokens, 13u + 2u + 2u);
}

TEST(SchedulerAhead, UpdatesApplyOldestFirstAndChainTheTokens) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  SchedulerOutput o2 = two_decoding(s, /*max_tokens_1=*/3);
  std::optional<SchedulerOutput> ahead = s.schedule_ahead(o2);  // 1's 2nd token is not its last
  ASSERT_TRUE(ahead.has_value());

  EXPECT_EQ(error_code([&] { s.update(*ahead, Tokens{501, 601}); }), ErrorCode::Internal);
  EXPECT_EQ(error_code([&] { s.schedule(); }), ErrorCode::Internal);
  EXPECT_EQ(error_code([&] { s.schedule_ahead(o2); }), ErrorCode::Internal);      // two pending
  EXPECT_EQ(error_code([&] { s.schedule_ahead(*ahead); }), ErrorCode::Internal);  // at most two
  EXPECT_EQ(s.find(1)->num_computed_tokens, 6);
  EXPECT_EQ(s.find(2)->num_computed_tokens, 7);

  EXPECT_TRUE(s.update(o2, Tokens{500, 600}).empty());
  EXPECT_EQ(output_of(s.find(1)), (Tokens{fake_token(1, 6), 500}));
  EXPECT_EQ(s.find(2)->num_computed_tokens, 8);
  EXPECT_TRUE(s.has_pending_step());
  EXPECT_EQ(error_code([&] { s.update(o2, Tokens{500, 600}); }), ErrorCode::Internal);
  EXPECT_EQ(error_code([&] { s.schedule(); }), ErrorCode::Internal);  // ahead still pending
  // Pipelining on would give 1 a 4th token: declined, the ahead step stays the pending one.
  EXPECT_FALSE(s.schedule_ahead(*ahead).has_value());

  std::vector<FinishedSeq> fin = s.update(*ahead, Tokens{501, 601});
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].id, 1);
  EXPECT_EQ(fin[0].reason, FinishReason::Length);
  const Sequence* q = s.find(2);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->num_computed_tokens, 7 + 2);
  EXPECT_EQ(output_of(q), (Tokens{fake_token(2, 7), 600, 601}));
  EXPECT_FALSE(s.has_pending_step());
  SchedulerOutput o4 = s.schedule();
  EXPECT_EQ(rows(o4), (std::vector<RowView>{{2, 9, 1, true}}));
  EXPECT_EQ(o4.rows[0].tokens, (Tokens{601}));
  EXPECT_EQ(o4.rows[0].block_table, (Ids{2, 3, 4}));
  EXPECT_EQ(kv.num_free_blocks(), 13);
}

TEST(SchedulerAhead, PipelinedChainEndsAtMaxTokens) {
  KvCacheManager kv(8, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, {7, 8, 9}, 6));
  run_step(s, s.schedule());            // prefill: output 1
  SchedulerOutput prev = s.schedule();  // output 2, at position 3
  std::vector<int32_t> starts{prev.rows[0].start};
  // Steady state: while one step runs, the next is scheduled; then the older one is updated.
  while (std::optional<SchedulerOutput> next = s.schedule_ahead(prev)) {
    EXPECT_TRUE(next->tokens_from_previous);
    starts.push_back(next->rows[0].start);
    EXPECT_TRUE(run_step(s, prev).empty());
    EXPECT_EQ(s.find(1)->num_computed_tokens, next->rows[0].start);
    prev = std::move(*next);
  }
  // The step holding output 6 is not followed: the sequence ends with it.
  EXPECT_EQ(starts, (std::vector<int32_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(output_of(s.find(1)), (Tokens{fake_token(1, 3), fake_token(1, 4), fake_token(1, 5),
                                         fake_token(1, 6), fake_token(1, 7)}));
  EXPECT_EQ(prev.rows[0].block_table, (Ids{0, 1}));  // positions < 8
  std::vector<FinishedSeq> fin = run_step(s, prev);
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].reason, FinishReason::Length);
  EXPECT_FALSE(s.has_unfinished() || s.has_pending_step());
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_EQ(s.stats().steps, 6u);
}

TEST(SchedulerAhead, DeclinesWhenTheSchedulerHasToDecide) {
  {  // an empty step: nothing to follow, and it is not pending
    KvCacheManager kv(8, 4, true);
    Scheduler s({}, kv);
    SchedulerOutput none = s.schedule();
    EXPECT_FALSE(s.schedule_ahead(none).has_value());
    EXPECT_FALSE(s.has_pending_step());
  }
  {  // a waiting sequence must be admitted by schedule(); a cancelled one has no next token
    KvCacheManager kv(16, 4, true);
    Scheduler s({}, kv);
    SchedulerOutput o2 = two_decoding(s);
    s.add(Sequence(3, {1, 2}, 4));
    EXPECT_FALSE(s.schedule_ahead(o2).has_value());
    EXPECT_EQ(s.waiting(), (std::deque<SeqId>{3}));
    EXPECT_EQ(kv.num_free_blocks(), 12);
    EXPECT_EQ(s.stats().steps, 2u);
    EXPECT_TRUE(s.cancel(3));
    EXPECT_TRUE(s.cancel(2));
    EXPECT_FALSE(s.schedule_ahead(o2).has_value());
    EXPECT_EQ(kv.num_free_blocks(), 14);
    EXPECT_TRUE(run_step(s, o2).empty());  // still the pending step
    EXPECT_EQ(s.find(1)->num_computed_tokens, 7);
  }
  {  // the pending step's token is the sequence's last
    KvCacheManager kv(16, 4, true);
    Scheduler s({}, kv);
    SchedulerOutput o2 = two_decoding(s, /*max_tokens_1=*/2);
    EXPECT_FALSE(s.schedule_ahead(o2).has_value());
    EXPECT_EQ(kv.num_free_blocks(), 12);
  }
  {  // a prefill chunk that does not sample; a 1-token final chunk may be followed
    KvCacheManager kv(16, 4, true);
    Scheduler s({.long_prefill_token_threshold = 2}, kv);
    s.add(Sequence(1, {1, 2, 3}, 4));
    SchedulerOutput o1 = s.schedule();
    EXPECT_EQ(rows(o1), (std::vector<RowView>{{1, 0, 2, false}}));
    EXPECT_FALSE(s.schedule_ahead(o1).has_value());
    run_step(s, o1);
    SchedulerOutput o2 = s.schedule();
    EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 2, 1, true}}));
    std::optional<SchedulerOutput> ahead = s.schedule_ahead(o2);
    ASSERT_TRUE(ahead.has_value());
    EXPECT_EQ(rows(*ahead), (std::vector<RowView>{{1, 3, 1, true}}));
  }
  {  // a step that reports a failed sequence
    KvCacheManager kv(4, 4, true);
    Scheduler s({}, kv);
    s.add(Sequence(1, {1, 2, 3}, 10));
    run_step(s, s.schedule());
    s.add(Sequence(9, iota_tokens(17, 0), 4));  // can never fit: failed at once, not waiting
    SchedulerOutput o2 = s.schedule();
    ASSERT_EQ(o2.finished.size(), 1u);
    EXPECT_FALSE(s.schedule_ahead(o2).has_value());
    run_step(s, o2);
    EXPECT_TRUE(s.schedule_ahead(s.schedule()).has_value());
  }
  {  // a step that preempted (even once the victim is gone from the waiting queue)
    KvCacheManager kv(4, 4, true);
    Scheduler s({}, kv);
    s.add(Sequence(1, iota_tokens(7, 0), 4));
    s.add(Sequence(2, iota_tokens(7, 100), 4));
    run_step(s, s.schedule());
    run_step(s, s.schedule());
    SchedulerOutput o3 = s.schedule();
    EXPECT_EQ(o3.preempted, (SeqIds{2}));
    EXPECT_TRUE(s.cancel(2));
    EXPECT_FALSE(s.schedule_ahead(o3).has_value());
  }
}

TEST(SchedulerAhead, FullCacheDeclinesWithoutPreempting) {
  KvCacheManager kv(5, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(7, 0), 10));
  s.add(Sequence(2, iota_tokens(7, 100), 10));
  run_step(s, s.schedule());
  SchedulerOutput o2 = s.schedule();  // position 7 fits both tables: one block left
  EXPECT_EQ(rows(o2), (std::vector<RowView>{{1, 7, 1, true}, {2, 7, 1, true}}));
  EXPECT_EQ(kv.num_free_blocks(), 1);
  // Position 8 needs a third block each: 1 gets the last one (and keeps it), 2 gets none.
  EXPECT_FALSE(s.schedule_ahead(o2).has_value());
  EXPECT_EQ(s.stats().preemptions, 0u);
  EXPECT_EQ(s.stats().steps, 2u);
  EXPECT_EQ(s.running(), (SeqIds{1, 2}));
  EXPECT_TRUE(s.waiting().empty());
  for (SeqId id : {1, 2}) {
    EXPECT_EQ(s.find(id)->status, SeqStatus::Running);
    EXPECT_EQ(s.find(id)->num_computed_tokens, 7);
  }
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  EXPECT_EQ(kv.block_table(2).size(), 2u);
  EXPECT_EQ(kv.num_free_blocks(), 0);
  // The pending step is unaffected; the next schedule() preempts as usual.
  EXPECT_TRUE(run_step(s, o2).empty());
  SchedulerOutput o3 = s.schedule();
  EXPECT_EQ(o3.preempted, (SeqIds{2}));
  EXPECT_EQ(rows(o3), (std::vector<RowView>{{1, 8, 1, true}}));
  EXPECT_EQ(o3.rows[0].block_table, (Ids{0, 1, 4}));
}

TEST(SchedulerAhead, OnlyTheSolePendingStepCanBeFollowed) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, {1, 2, 3}, 10));
  SchedulerOutput o1 = s.schedule();
  run_step(s, o1);
  EXPECT_EQ(error_code([&] { s.schedule_ahead(o1); }), ErrorCode::Internal);  // nothing pending
  SchedulerOutput o2 = s.schedule();
  EXPECT_EQ(error_code([&] { s.schedule_ahead(o1); }), ErrorCode::Internal);  // not o1 pending
  std::string what;
  EXPECT_EQ(error_code([&] { s.schedule(); }, &what), ErrorCode::Internal);
  EXPECT_NE(what.find("update() of step 2"), std::string::npos) << what;
  std::optional<SchedulerOutput> ahead = s.schedule_ahead(o2);
  ASSERT_TRUE(ahead.has_value());
  EXPECT_EQ(error_code([&] { s.update(*ahead, Tokens{7}); }, &what), ErrorCode::Internal);
  EXPECT_NE(what.find("step 3 which is not the oldest pending"), std::string::npos) << what;
  EXPECT_EQ(error_code([&] { s.update(o2, Tokens{}); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code([&] { s.update(o2, Tokens{5}); }), std::nullopt);
  EXPECT_EQ(error_code([&] { s.update(*ahead, Tokens{}); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code([&] { s.update(*ahead, Tokens{6}); }), std::nullopt);
  EXPECT_EQ(output_of(s.find(1)), (Tokens{fake_token(1, 3), 5, 6}));
  EXPECT_FALSE(s.has_pending_step());
}

TEST(SchedulerAhead, SequencesFinishedMeanwhileAreIgnoredByBothUpdates) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  SchedulerOutput o2 = two_decoding(s);
  std::optional<SchedulerOutput> ahead = s.schedule_ahead(o2);
  ASSERT_TRUE(ahead.has_value());
  std::optional<Sequence> one = s.finish(1, FinishReason::Stop);  // e.g. a stop string
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->output().size(), 1u);
  EXPECT_TRUE(s.update(o2, Tokens{500, 600}).empty());
  EXPECT_EQ(s.find(1), nullptr);
  EXPECT_EQ(output_of(s.find(2)), (Tokens{fake_token(2, 7), 600}));
  // 2 stops on the token just applied while its next step is still on the device.
  std::optional<Sequence> two = s.finish(2, FinishReason::Stop);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->num_computed_tokens, 8);
  EXPECT_TRUE(s.update(*ahead, Tokens{501, 601}).empty());
  EXPECT_FALSE(s.has_unfinished() || s.has_pending_step());
  EXPECT_EQ(kv.num_free_blocks(), 16);
  EXPECT_TRUE(s.schedule().empty());
}

TEST(SchedulerAhead, AbortStepsLetsTheSequencesRunAgain) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  s.add(Sequence(1, iota_tokens(6, 0), 10));
  s.add(Sequence(2, iota_tokens(7, 100), 10));
  // A forward that threw: without abort_steps() every later schedule() would throw.
  SchedulerOutput lost = s.schedule();
  EXPECT_EQ(error_code([&] { s.schedule(); }), ErrorCode::Internal);
  s.abort_steps();
  EXPECT_FALSE(s.has_pending_step());
  SchedulerOutput o1 = s.schedule();
  EXPECT_EQ(rows(o1), rows(lost));
  EXPECT_EQ(o1.step, lost.step + 1);
  EXPECT_EQ(error_code([&] { run_step(s, lost); }), ErrorCode::Internal);  // forgotten
  run_step(s, o1);

  SchedulerOutput o2 = s.schedule();
  std::optional<SchedulerOutput> ahead = s.schedule_ahead(o2);
  ASSERT_TRUE(ahead.has_value());
  s.abort_steps();
  EXPECT_FALSE(s.has_pending_step());
  EXPECT_EQ(error_code([&] { run_step(s, *ahead); }), ErrorCode::Internal);
  SchedulerOutput again = s.schedule();  // from the old num_computed_tokens, known tokens
  EXPECT_EQ(rows(again), rows(o2));
  EXPECT_EQ(again.rows[0].tokens, (Tokens{fake_token(1, 6)}));
  EXPECT_EQ(again.rows[1].tokens, (Tokens{fake_token(2, 7)}));
  EXPECT_FALSE(again.tokens_from_previous);
  EXPECT_EQ(again.rows[1].block_table, (Ids{2, 3, 4}));  // the grown table is kept
  run_step(s, again);
  EXPECT_EQ(s.find(1)->num_computed_tokens, 7);
  EXPECT_EQ(s.find(2)->num_computed_tokens, 8);
  EXPECT_EQ(output_of(s.find(2)), (Tokens{fake_token(2, 7), fake_token(2, 8)}));
}

// The engine's overlap loop: schedule() when nothing is pending, mostly schedule_ahead() behind
// the pending step, then update the oldest. Sequences arrive on the way, the pool is small enough
// for preemptions and failed allocations; nobody is cancelled, so every row is applied.
void run_overlap_soak(uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  KvCacheManager kv(14, 4, true);  // 4 sequences may want 36 blocks; the longest fits alone
  Scheduler s({.max_num_seqs = 4, .max_num_batched_tokens = 16}, kv);
  std::map<SeqId, int32_t> max_tokens;
  std::map<SeqId, Tokens> outputs;  // every token sampled for the sequence, in order
  std::map<SeqId, FinishReason> finished;
  SeqId next_id = 1;
  auto arrive = [&] {
    const SeqId id = next_id++;
    max_tokens[id] = uniform(1, 24);
    s.add(Sequence(id, iota_tokens(uniform(1, 12), static_cast<TokenId>(100 * id)),
                   max_tokens[id]));
  };
  for (int i = 0; i < 6; ++i) arrive();
  std::deque<SchedulerOutput> pending;
  uint64_t scheduled = 0;
  int aheads = 0, declined = 0, step = 0;
  for (; step < 2000 && (step < 300 || s.has_unfinished() || !pending.empty()); ++step) {
    // Arrivals only into an empty queue, so that overlap gets a chance between them.
    if (step < 300 && s.num_waiting() == 0 && uniform(0, 5) == 0) arrive();
    if (pending.empty()) {
      SchedulerOutput o = s.schedule();
      ++scheduled;
      ASSERT_FALSE(o.stalled) << o.stall_reason;
      ASSERT_TRUE(o.finished.empty());
      if (o.empty()) continue;
      pending.push_back(std::move(o));
    }
    if (pending.size() == 1 && uniform(0, 3) != 0) {
      const SchedulerOutput& prev = pending.back();
      std::optional<SchedulerOutput> a = s.schedule_ahead(prev);
      if (a) {
        ++aheads;
        ++scheduled;
        ASSERT_EQ(a->rows.size(), prev.rows.size());
        for (size_t i = 0; i < a->rows.size(); ++i) {
          const ScheduledSeq& r = a->rows[i];
          EXPECT_EQ(r.id, prev.rows[i].id);
          EXPECT_EQ(r.start, prev.rows[i].start + 1);
          EXPECT_EQ(r.tokens, (Tokens{kPendingToken}));
          EXPECT_GE(static_cast<int64_t>(r.block_table.size()) * 4, r.start + 1);
        }
        pending.push_back(std::move(*a));
      } else {
        ++declined;
      }
    }
    const SchedulerOutput done = std::move(pending.front());
    pending.pop_front();
    Tokens sampled;
    for (const ScheduledSeq& r : done.rows) {
      const Sequence* q = s.find(r.id);
      ASSERT_NE(q, nullptr) << "row of a finished sequence, step " << done.step;
      ASSERT_EQ(q->num_computed_tokens, r.start);
      // The pending token resolves to what the previous step sampled for this sequence.
      if (done.tokens_from_previous) {
        EXPECT_EQ(q->tokens.at(r.start), outputs[r.id].back());
      }
      if (r.sample) sampled.push_back(fake_token(r.id, r.start + r.count));
    }
    std::vector<FinishedSeq> fin = s.update(done, sampled);
    size_t k = 0;
    for (const ScheduledSeq& r : done.rows) {
      if (r.sample) outputs[r.id].push_back(sampled[k++]);
      if (const Sequence* q = s.find(r.id); q != nullptr) {
        EXPECT_EQ(output_of(q), outputs[r.id]);
      }
    }
    for (const FinishedSeq& f : fin) {
      EXPECT_EQ(f.reason, FinishReason::Length);
      finished[f.id] = f.reason;
    }
  }
  EXPECT_LT(step, 2000);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_FALSE(s.has_pending_step());
  for (const auto& [id, n] : max_tokens) {
    EXPECT_EQ(finished.count(id), 1u) << "sequence " << id;
    EXPECT_EQ(static_cast<int32_t>(outputs[id].size()), n) << "sequence " << id;
  }
  EXPECT_EQ(kv.num_free_blocks(), kv.num_blocks());
  EXPECT_EQ(s.stats().steps, scheduled);
  EXPECT_GT(aheads, 50);
  EXPECT_GT(declined, 10);
  std::printf("seed %u: %d sequences, %d steps, %d ahead, %d declined, %llu preemptions\n", seed,
              static_cast<int>(next_id - 1), step, aheads, declined,
              static_cast<unsigned long long>(s.stats().preemptions));
}

TEST(SchedulerAhead, OverlapSoakGeneratesExactlyMaxTokens) {
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    run_overlap_soak(seed);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace inferdesk
