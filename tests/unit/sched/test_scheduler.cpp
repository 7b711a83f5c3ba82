// Scheduler: token budget, chunked prefill mixed with decodes, max_num_seqs, FCFS, preemption
// (victim, freed blocks, resumption), cancellation, impossible prompts, protocol errors. The
// overlap protocol (schedule_ahead) is in test_scheduler_ahead.cpp.
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
#include "tests/unit/sched/sched_test_util.h"

namespace inferdesk {
namespace {

using namespace schedtest;

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
      {{1, 0, 4, true}, {2, 0, 4, false}}, {{1, 4, 1, true}, {2, 4, 7, false}}, {{1, 5, 1, true}, {2, 11, 7, false}},
      {{1, 6, 1, true}, {2, 18, 2, true}}, {{1, 7, 1, true}, {2, 20, 1, true}},
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
  s.add(Sequence(1, iota_tokens(8, 0), 5));     // 2 blocks
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
  EXPECT_EQ(o5.rows[0].tokens, (Tokens{104, 105, 106, fake_token(2, 7), fake_token(2, 8)}));
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
  EXPECT_EQ(o.finished[0].message, "prompt of 17 tokens needs 5 blocks but the cache has 4 (block size 4)");
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
  EXPECT_EQ(errors[0].message, "sequence of 9 tokens (prompt + generated) needs 3 blocks but the cache has 2 "
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

}  // namespace
}  // namespace inferdesk
