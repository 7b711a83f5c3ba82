// The CPU backend's thread pool: every index runs exactly once, ranges tile, errors propagate, and
// a count it cannot start is a typed error.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend/cpu/thread_pool.h"
#include "core/util/error.h"

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

TEST(ThreadPool, CountAboveTheCapIsRefusedBeforeAnyThreadStarts) {
  try {
    ThreadPool pool(ThreadPool::kMaxThreads + 1);
    FAIL() << "a pool of " << pool.size() << " threads was created";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(std::to_string(ThreadPool::kMaxThreads)), std::string::npos) << e.what();
  }
  EXPECT_EQ(ThreadPool(ThreadPool::kMaxThreads).size(), ThreadPool::kMaxThreads);
}

// Bytes of address space this process has mapped (VmSize), 0 when /proc is not there.
long long mapped_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  return 0;
}

// Thread k failing to start (here: no address space left for its stack) stops and joins the k - 1
// already running and reports a typed error; before, their joinable std::threads called
// std::terminate. Runs in a child process whose address space is capped.
TEST(ThreadPool, ThreadThatCannotStartIsATypedErrorNotTerminate) {
  const long long vm = mapped_bytes();
  if (vm == 0) GTEST_SKIP() << "no /proc/self/status";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit lim{static_cast<rlim_t>(vm + (64LL << 20)), static_cast<rlim_t>(vm + (64LL << 20))};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(5);
    try {
      ThreadPool pool(200);  // 200 stacks of 8 MiB do not fit in 64 MiB
      _exit(2);
    } catch (const Error& e) {
      _exit(e.code() == ErrorCode::OutOfMemory ? 0 : 3);
    } catch (...) {
      _exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: all threads started; 3: wrong code; 4: not an Error; 5: no rlimit";
}

}  // namespace
}  // namespace inferdesk::cpu
