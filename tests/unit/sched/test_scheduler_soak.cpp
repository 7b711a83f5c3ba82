// Randomized soak: many sequences with random lengths, shared prefixes, stop tokens and random
// cancellations (also between schedule() and update()) over a small pool. A simulated KV store
// checks that every step reads back exactly the tokens it should (prefix hits included), the
// budget holds, everything terminates and no block leaks.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/sched/scheduler.h"

namespace inferdesk {
namespace {

using Tokens = std::vector<TokenId>;

struct SoakParams {
  uint32_t seed;
  int32_t num_blocks, block_size;
  SchedulerConfig config;
  int num_seqs;
};

// Deterministic fake model: the next token depends on the sequence, position and last token.
TokenId next_token(SeqId id, int32_t pos, TokenId last) {
  return static_cast<TokenId>((id * 7919 + pos * 104729 + last * 31) % 50000);
}

class Soak {
 public:
  explicit Soak(const SoakParams& p)
      : p_(p),
        rng_(p.seed),
        kv_(p.num_blocks, p.block_size, true),
        sched_(p.config, kv_),
        store_(static_cast<size_t>(p.num_blocks) * static_cast<size_t>(p.block_size)) {
    for (int f = 0; f < 4; ++f) families_.push_back(random_tokens(uniform(0, 40)));
  }

  void run() {
    int added = 0, steps = 0;
    while ((added < p_.num_seqs || sched_.has_unfinished()) && steps < 20000) {
      for (int k = uniform(0, 2); k > 0 && added < p_.num_seqs; --k) add_one(added++);
      step();
      ++steps;
    }
    EXPECT_LT(steps, 20000) << "soak did not terminate";
    EXPECT_FALSE(sched_.has_unfinished());
    EXPECT_EQ(kv_.num_free_blocks(), kv_.num_blocks()) << "leaked blocks";
    for (BlockId b = 0; b < kv_.num_blocks(); ++b) EXPECT_EQ(kv_.pool().ref_count(b), 0);
    EXPECT_EQ(static_cast<int>(ended_.size()), p_.num_seqs);
  }

  std::map<FinishReason, int> reasons;
  const KvCacheManager& kv() const { return kv_; }
  const Scheduler& sched() const { return sched_; }

 private:
  struct Ref {
    Tokens tokens;  // what the sequence must hold: prompt + outputs seen so far
    size_t prompt_len;
    int32_t max_tokens;
  };
  struct Cell {
    TokenId token = -1;
    int32_t pos = -1;
  };

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  Tokens random_tokens(int n) {
    Tokens t;
    for (int i = 0; i < n; ++i) t.push_back(uniform(0, 30));  // small alphabet: real collisions
    return t;
  }

  void add_one(int index) {
    const SeqId id = 1000 + index;
    Tokens prompt = uniform(0, 1) ? families_[static_cast<size_t>(uniform(0, 3))] : Tokens{};
    Tokens tail = random_tokens(uniform(1, 30));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    const int32_t max_tokens = uniform(1, 25);
    refs_[id] = Ref{prompt, prompt.size(), max_tokens};
    sched_.add(Sequence(id, prompt, max_tokens));
  }

  void end(SeqId id, FinishReason reason) {
    ASSERT_TRUE(ended_.insert(id).second) << "sequence " << id << " ended twice";
    ++reasons[reason];
    if (reason == FinishReason::Length) {
      const Ref& r = refs_.at(id);
      EXPECT_EQ(r.tokens.size() - r.prompt_len, static_cast<size_t>(r.max_tokens));
    }
  }

  void check_and_write(const SchedulerOutput& out) {
    EXPECT_LE(out.num_batched_tokens, p_.config.max_num_batched_tokens);
    EXPECT_LE(static_cast<int32_t>(out.rows.size()), p_.config.max_num_seqs);
    EXPECT_FALSE(out.stalled) << out.stall_reason;
    std::set<int64_t> slots_this_step;
    for (const ScheduledSeq& row : out.rows) {
      const Ref& r = refs_.at(row.id);
      ASSERT_EQ(row.count, static_cast<int32_t>(row.tokens.size()));
      ASSERT_LE(static_cast<size_t>(row.start + row.count), r.tokens.size());
      EXPECT_EQ(row.sample, static_cast<size_t>(row.start + row.count) == r.tokens.size());
      for (int32_t i = 0; i < row.count; ++i) {
        ASSERT_EQ(row.tokens[static_cast<size_t>(i)], r.tokens[static_cast<size_t>(row.start + i)]);
      }
      // Everything before `start` must be in the cache (own KV or a prefix hit).
      for (int32_t pos = 0; pos < row.start; ++pos) {
        const Cell& c = store_[static_cast<size_t>(slot_of(row.block_table, p_.block_size, pos))];
        ASSERT_EQ(c.pos, pos) << "seq " << row.id;
        ASSERT_EQ(c.token, r.tokens[static_cast<size_t>(pos)]) << "seq " << row.id;
      }
      for (int32_t pos = row.start; pos < row.start + row.count; ++pos) {
        const int64_t slot = slot_of(row.block_table, p_.block_size, pos);
        ASSERT_TRUE(slots_this_step.insert(slot).second) << "slot written twice in a step";
        store_[static_cast<size_t>(slot)] = Cell{r.tokens[static_cast<size_t>(pos)], pos};
      }
    }
  }

  void step() {
    SchedulerOutput out = sched_.schedule();
    for (const FinishedSeq& f : out.finished) {
      EXPECT_EQ(f.reason, FinishReason::Error);
      EXPECT_FALSE(f.message.empty());
      end(f.id, f.reason);
    }
    check_and_write(out);
    if (::testing::Test::HasFatalFailure()) return;
    Tokens sampled;
    for (const ScheduledSeq& row : out.rows) {
      if (!row.sample) continue;
      sampled.push_back(next_token(row.id, row.start + row.count, row.tokens.back()));
    }
    // Cancel while the step "runs".
    if (!out.rows.empty() && uniform(0, 24) == 0)
      cancel(out.rows[static_cast<size_t>(uniform(0, int(out.rows.size()) - 1))].id);
    size_t k = 0;
    for (const ScheduledSeq& row : out.rows) {
      if (!row.sample) continue;
      TokenId t = sampled[k++];
      if (!ended_.contains(row.id)) refs_.at(row.id).tokens.push_back(t);
    }
    for (const FinishedSeq& f : sched_.update(out, sampled)) end(f.id, f.reason);
    // Stop tokens and cancellations of waiting sequences.
    for (const ScheduledSeq& row : out.rows) {
      if (!ended_.contains(row.id) && row.sample && uniform(0, 29) == 0) {
        ASSERT_TRUE(sched_.finish(row.id, FinishReason::Stop).has_value());
        end(row.id, FinishReason::Stop);
      }
    }
    if (!sched_.waiting().empty() && uniform(0, 39) == 0) cancel(sched_.waiting().back());
  }

  void cancel(SeqId id) {
    ASSERT_TRUE(sched_.cancel(id));
    end(id, FinishReason::Cancelled);
  }

  SoakParams p_;
  std::mt19937 rng_;
  KvCacheManager kv_;
  Scheduler sched_;
  std::vector<Cell> store_;
  std::vector<Tokens> families_;
  std::map<SeqId, Ref> refs_;
  std::set<SeqId> ended_;
};

class SchedulerSoak : public ::testing::TestWithParam<SoakParams> {};

TEST_P(SchedulerSoak, TerminatesWithoutLeaksAndServesCorrectKv) {
  Soak soak(GetParam());
  soak.run();
  KvCacheStats st = soak.kv().stats();
  std::printf("seed %u: %d length, %d stop, %d cancelled, %d error; %llu preemptions, "
              "%lld/%lld prefix tokens hit, %llu steps\n",
              GetParam().seed, soak.reasons[FinishReason::Length], soak.reasons[FinishReason::Stop],
              soak.reasons[FinishReason::Cancelled], soak.reasons[FinishReason::Error],
              static_cast<unsigned long long>(soak.sched().stats().preemptions),
              static_cast<long long>(st.prefix_hit_tokens), static_cast<long long>(st.prefix_query_tokens),
              static_cast<unsigned long long>(soak.sched().stats().steps));
  // The workload is built to exercise every path; make sure it did.
  EXPECT_GT(soak.reasons[FinishReason::Length], 0);
  EXPECT_GT(soak.reasons[FinishReason::Cancelled], 0);
  EXPECT_GT(st.prefix_hit_tokens, 0);
}

SchedulerConfig cfg(int32_t seqs, int32_t tokens, bool chunked, int32_t threshold) {
  return SchedulerConfig{seqs, tokens, chunked, threshold};
}

INSTANTIATE_TEST_SUITE_P(Configs, SchedulerSoak,
                         ::testing::Values(SoakParams{1, 16, 4, cfg(6, 32, true, 0), 300},
                                           SoakParams{2, 16, 4, cfg(8, 48, true, 5), 300},
                                           SoakParams{3, 24, 4, cfg(4, 64, false, 0), 300},
                                           SoakParams{4, 10, 8, cfg(16, 16, true, 0), 300},
                                           SoakParams{5, 40, 2, cfg(32, 128, true, 7), 400},
                                           SoakParams{6, 8, 16, cfg(5, 40, true, 0), 200}));

TEST(SchedulerSoakTightPool, PreemptsAndStillFinishes) {
  Soak soak(SoakParams{11, 12, 4, cfg(12, 64, true, 0), 300});
  soak.run();
  EXPECT_GT(soak.sched().stats().preemptions, 0u);
  EXPECT_GT(soak.reasons[FinishReason::Error], 0);  // some prompts exceed the 48-token pool
}

}  // namespace
}  // namespace inferdesk
