// The scheduler's overlap protocol (schedule_ahead: the next decode step of the same sequences
// while the previous one runs): rows, declines, update order, abort_steps, a pipelined soak.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <map>
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
  EXPECT_EQ(s.stats().steps_ahead, 1u);
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
  EXPECT_EQ(output_of(s.find(1)),
            (Tokens{fake_token(1, 3), fake_token(1, 4), fake_token(1, 5), fake_token(1, 6), fake_token(1, 7)}));
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
    EXPECT_EQ(s.stats().steps_ahead, 0u);
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

// A request that can never run is failed by add() and reported by the next schedule(): the chain
// stops so that it is reported at once.
TEST(SchedulerAhead, DeclinesWhileAFailedRequestAwaitsItsReport) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  const SchedulerOutput o2 = two_decoding(s);
  s.add(Sequence(9, iota_tokens(80, 0), 4));  // 20 blocks: more than the cache has
  EXPECT_TRUE(s.waiting().empty());
  EXPECT_FALSE(s.schedule_ahead(o2).has_value());
  run_step(s, o2);
  const SchedulerOutput o3 = s.schedule();
  ASSERT_EQ(o3.finished.size(), 1u);
  EXPECT_EQ(o3.finished[0].id, 9);
  EXPECT_FALSE(s.schedule_ahead(o3).has_value());  // o3 reported a failure itself
  run_step(s, o3);
  const SchedulerOutput o4 = s.schedule();
  EXPECT_TRUE(s.schedule_ahead(o4).has_value());  // nothing left to report: the chain goes on
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
    s.add(Sequence(id, iota_tokens(uniform(1, 12), static_cast<TokenId>(100 * id)), max_tokens[id]));
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
