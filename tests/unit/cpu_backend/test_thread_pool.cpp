// The CPU backend's thread pool: every index runs exactly once, ranges tile, errors propagate.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/backend/cpu/thread_pool.h"

namespace inferdesk::cpu {
namespace {

TEST(ThreadPool, ParallelForVisitsEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> hits(257);
      pool.parallel_for(257, [&](int64_t i, int t) {
        ASSERT_LT(t, threads);
        hits[i].fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

TEST(ThreadPool, RunGivesEachThreadItsIndex) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> seen(3);
  pool.run([&](int t, int n) {
    EXPECT_EQ(n, 3);
    seen[t].fetch_add(1);
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPool, SplitTilesTheRangeWithAlignedBounds) {
  for (int n : {1, 2, 5}) {
    int64_t expect_begin = 0;
    for (int t = 0; t < n; ++t) {
      int64_t b, e;
      ThreadPool::split(1000, 16, t, n, &b, &e);
      EXPECT_EQ(b, expect_begin);
      if (e < 1000) {
        EXPECT_EQ(e % 16, 0);
      }
      expect_begin = e;
    }
    EXPECT_EQ(expect_begin, 1000);
  }
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run([](int t, int) {
    if (t == 1) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  // Still usable afterwards.
  std::atomic<int> count{0};
  pool.run([&](int, int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 2);
}

}  // namespace
}  // namespace inferdesk::cpu
