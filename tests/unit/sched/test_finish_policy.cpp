// finish_policy: which generated token finishes a sequence and why, alone and through
// Scheduler::update (a stop token beats max_tokens; EOS counts unless ignore_eos).
#include <gtest/gtest.h>

#include <vector>

#include "core/sched/finish_policy.h"
#include "core/sched/scheduler.h"
#include "tests/unit/sched/sched_test_util.h"

namespace inferdesk {
namespace {

using namespace schedtest;

Sequence with_outputs(Tokens outputs, int32_t max_tokens, Tokens stops) {
  Sequence s(1, {5, 6}, max_tokens, std::move(stops));
  s.tokens.insert(s.tokens.end(), outputs.begin(), outputs.end());
  return s;
}

TEST(FinishPolicy, StopTokenBeatsLengthAndLengthBeatsNothing) {
  EXPECT_EQ(finish_reason(with_outputs({7}, 3, {9}), 7), FinishReason::None);
  EXPECT_EQ(finish_reason(with_outputs({7, 9}, 3, {9}), 9), FinishReason::Stop);
  EXPECT_EQ(finish_reason(with_outputs({7, 8, 4}, 3, {9}), 4), FinishReason::Length);
  // The last token allowed is also a stop token: Stop.
  EXPECT_EQ(finish_reason(with_outputs({7, 8, 9}, 3, {9}), 9), FinishReason::Stop);
  EXPECT_EQ(finish_reason(with_outputs({7, 8, 4}, 3, {}), 4), FinishReason::Length);
}

TEST(FinishPolicy, ReachesLengthCountsTokensAhead) {
  const Sequence s = with_outputs({7}, 3, {});
  EXPECT_FALSE(reaches_length(s));
  EXPECT_FALSE(reaches_length(s, 1));
  EXPECT_TRUE(reaches_length(s, 2));
}

TEST(FinishPolicy, StopTokenSetHasEosUnlessIgnored) {
  const Tokens eos = {2, 3}, stops = {9};
  EXPECT_EQ(stop_token_set(eos, false, stops), (Tokens{2, 3, 9}));
  EXPECT_EQ(stop_token_set(eos, true, stops), (Tokens{9}));
  EXPECT_EQ(stop_token_set(eos, true, {}), Tokens{});
}

TEST(FinishPolicy, UpdateFinishesOnStopTokenOrLength) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  // Sequence 1 stops on its second token; 2 reaches max_tokens with it; 3 has both at once.
  s.add(Sequence(1, {1, 2}, 4, {fake_token(1, 3)}));
  s.add(Sequence(2, {1, 2}, 2));
  s.add(Sequence(3, {1, 2}, 2, {fake_token(3, 3)}));
  EXPECT_TRUE(run_step(s, s.schedule()).empty());
  std::vector<FinishedSeq> done = run_step(s, s.schedule());
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].id, 1);
  EXPECT_EQ(done[0].reason, FinishReason::Stop);
  EXPECT_EQ(done[1].id, 2);
  EXPECT_EQ(done[1].reason, FinishReason::Length);
  EXPECT_EQ(done[2].id, 3);
  EXPECT_EQ(done[2].reason, FinishReason::Stop);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(kv.num_free_blocks(), kv.num_blocks());
}

}  // namespace
}  // namespace inferdesk
