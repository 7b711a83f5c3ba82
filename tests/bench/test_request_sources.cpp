// RequestSource helpers: per-point seeds, seeded sources and fixed pools (a dataset file).
#include <gtest/gtest.h>

#include <set>

#include "core/bench/benchmark.h"
#include "core/bench/workload.h"

namespace inferdesk::test {
namespace {

std::vector<bench::BenchRequest> numbered(size_t n) {
  std::vector<bench::BenchRequest> out(n);
  for (size_t i = 0; i < n; ++i) out[i].body = std::to_string(i);
  return out;
}

std::vector<std::string> bodies(const bench::RequestSet& s) {
  std::vector<std::string> out;
  for (const auto& r : s.requests) out.push_back(r.body);
  return out;
}

TEST(RequestSources, PointSeedsDifferPerPointAndSeedAndRepeat) {
  std::set<uint64_t> seen;
  for (uint64_t seed : {0ULL, 1ULL, 2ULL})
    for (int32_t p = bench::kWarmupPoint; p < 8; ++p) seen.insert(bench::point_seed(seed, p));
  EXPECT_EQ(seen.size(), 27u);
  EXPECT_EQ(bench::point_seed(5, 3), bench::point_seed(5, 3));
}

TEST(RequestSources, SeededSourceDrawsEachPointWithItsSeedAndTheWarmupWithItsCount) {
  std::vector<std::pair<uint64_t, int32_t>> calls;
  const auto source = bench::seeded_source(9, 4, 2, [&](uint64_t seed, int32_t count) {
    calls.emplace_back(seed, count);
    return numbered(static_cast<size_t>(count));
  });
  EXPECT_EQ(source(bench::kWarmupPoint).requests.size(), 2u);
  const auto p1 = source(1);
  EXPECT_EQ(p1.requests.size(), 4u);
  EXPECT_EQ(p1.prompt_seed, bench::point_seed(9, 1));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], std::make_pair(bench::point_seed(9, bench::kWarmupPoint), 2));
}

TEST(RequestSources, PoolSourceGivesEachPointItsOwnSliceAndSaysWhenItWraps) {
  const auto source = bench::pool_source(numbered(9), 3, 2, 4);
  EXPECT_EQ(bodies(source(bench::kWarmupPoint)), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(bodies(source(0)), (std::vector<std::string>{"2", "3", "4"}));
  const auto p1 = source(1);
  EXPECT_EQ(bodies(p1), (std::vector<std::string>{"5", "6", "7"}));
  EXPECT_TRUE(p1.note.empty());
  EXPECT_EQ(p1.prompt_seed, 4u);
  const auto p2 = source(2);  // needs 8..10 of a pool of 9: wraps
  EXPECT_EQ(bodies(p2), (std::vector<std::string>{"8", "0", "1"}));
  EXPECT_NE(p2.note.find("repeat"), std::string::npos);
}

}  // namespace
}  // namespace inferdesk::test
