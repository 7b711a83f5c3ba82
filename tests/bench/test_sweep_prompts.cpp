// Prompts across a sweep: with prefix caching in the server, a prompt sent twice is served from
// cache the second time, so every point and the warm-up must send prompts of their own, and the
// same seed must still give the same prompts (the workload identical across engines).
#include <gtest/gtest.h>

#include <set>

#include "core/bench/benchmark.h"
#include "core/bench/workload.h"
#include "tests/bench/support/mock_server.h"

namespace inferdesk::test {
namespace {

MockResponse one_chunk() {
  MockResponse m;
  m.pieces.push_back({0, sse(R"({"choices":[{"index":0,"text":"t"}]})")});
  m.pieces.push_back({0, sse_done()});
  return m;
}

// The bodies a 3-point sweep with 2 warm-ups sends, in the order the server read them (one at a
// time: the order is fixed). *seeds: each point's prompt_seed.
std::vector<std::string> sweep_bodies(uint64_t seed, std::vector<uint64_t>* seeds = nullptr) {
  MockServer mock([](const MockRequest&) { return one_chunk(); });
  bench::BenchmarkSpec spec;
  spec.load.base_url = mock.url();
  spec.sweep = bench::parse_sweep("concurrency:1,1,1");
  spec.warmup = 2;
  const auto source = bench::seeded_source(seed, 4, spec.warmup, [](uint64_t s, int32_t count) {
    bench::RandomWorkload w;
    w.num_requests = count;
    w.input_len = 8;
    w.seed = s;
    return bench::random_completions(w);
  });
  for (const auto& p : bench::run_benchmark(bench::http_driver(), source, spec)) {
    EXPECT_EQ(p.requests.size(), 4u);
    if (seeds) seeds->push_back(p.prompt_seed);
  }
  std::vector<std::string> out;
  for (const auto& s : mock.served()) out.push_back(s.request.body);
  return out;
}

TEST(SweepPrompts, NoPromptRepeatsAcrossPointsOrWarmup) {
  const auto bodies = sweep_bodies(7);
  ASSERT_EQ(bodies.size(), 14u);  // 2 warm-up + 3 x 4
  EXPECT_EQ(std::set<std::string>(bodies.begin(), bodies.end()).size(), bodies.size());
}

TEST(SweepPrompts, SameSeedSamePromptsPerPointOtherSeedDiffers) {
  std::vector<uint64_t> seeds;
  const auto a = sweep_bodies(7, &seeds), b = sweep_bodies(7), c = sweep_bodies(8);
  ASSERT_EQ(seeds.size(), 3u);
  for (int32_t p = 0; p < 3; ++p) EXPECT_EQ(seeds[p], bench::point_seed(7, p));
  EXPECT_NE(bench::point_seed(7, bench::kWarmupPoint), bench::point_seed(7, 0));
  ASSERT_EQ(a.size(), 14u);
  EXPECT_EQ(a, b);  // concurrency 1 everywhere: the order is fixed too
  ASSERT_EQ(c.size(), 14u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], c[i]) << i;
}

}  // namespace
}  // namespace inferdesk::test
