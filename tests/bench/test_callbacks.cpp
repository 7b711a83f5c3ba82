// LoadOptions::on_request_done and LoadOptions::cancel: one callback per request with its index;
// a cancel mid-run ends the run promptly, requests not sent and those in flight marked cancelled.
#include <gtest/gtest.h>

#include <set>

#include "core/bench/benchmark.h"
#include "tests/bench/support/mock_server.h"

namespace inferdesk::test {
namespace {

// A stream of `n` chunks `gap` apart.
MockResponse slow_stream(int n, double gap) {
  MockResponse m;
  for (int i = 0; i < n; ++i) m.pieces.push_back({gap, sse(R"({"choices":[{"index":0,"text":"t"}]})")});
  m.pieces.push_back({0, sse_done()});
  return m;
}

std::vector<bench::BenchRequest> requests(size_t n) {
  std::vector<bench::BenchRequest> r(n);
  for (auto& x : r) x.body = "{}";
  return r;
}

bench::RequestSource source(int32_t per_point, int32_t warmup) {
  return bench::seeded_source(0, per_point, warmup,
                              [](uint64_t, int32_t count) { return requests(static_cast<size_t>(count)); });
}

TEST(Callbacks, OnRequestDoneRunsOncePerRequestWithItsIndexAndResult) {
  MockServer mock([](const MockRequest& r) { return slow_stream(1 + static_cast<int>(r.index % 3), 0.002); });
  bench::LoadOptions o;
  o.base_url = mock.url();
  o.max_concurrency = 4;
  std::vector<size_t> seen;
  std::vector<int32_t> chunks;
  o.on_request_done = [&](size_t i, const bench::RequestResult& r) {
    seen.push_back(i);
    chunks.push_back(r.chunks);
  };
  const auto reqs = requests(20);
  const auto run = bench::run_load(o, reqs);
  ASSERT_EQ(seen.size(), 20u);
  EXPECT_EQ(std::set<size_t>(seen.begin(), seen.end()).size(), 20u);
  for (size_t k = 0; k < seen.size(); ++k) EXPECT_EQ(chunks[k], run.requests[seen[k]].chunks);  // its own result
}

TEST(Callbacks, CancelMidRunEndsPromptlyAndMarksSentAndUnsentRequests) {
  MockServer mock([](const MockRequest&) { return slow_stream(200, 0.01); });  // 2 s each
  bench::LoadOptions o;
  o.base_url = mock.url();
  o.max_concurrency = 2;
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  size_t calls = 0;
  o.on_request_done = [&](size_t, const bench::RequestResult&) { ++calls; };
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto t0 = Clock::now();
  const auto run = bench::run_load(o, requests(10));
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  stopper.join();
  EXPECT_LT(took, 0.6);  // not the 2 s a stream takes
  EXPECT_EQ(calls, 10u);
  int in_flight = 0;
  for (const auto& r : run.requests) {
    EXPECT_TRUE(r.cancelled);
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.error, "cancelled");
    in_flight += r.chunks > 0 ? 1 : 0;
  }
  EXPECT_EQ(in_flight, 2);  // the two that were streaming
}

TEST(Callbacks, RunBenchmarkReportsProgressPerPointAndStopsOnCancel) {
  MockServer mock([](const MockRequest&) { return slow_stream(2, 0.001); });
  bench::BenchmarkSpec spec;
  spec.load.base_url = mock.url();
  spec.sweep = bench::parse_sweep("concurrency:1,2,4");
  spec.warmup = 2;
  std::vector<bench::BenchmarkProgress> seen;
  const auto points = bench::run_benchmark(bench::http_driver(), source(6, spec.warmup), spec,
                                           [&](const bench::BenchmarkProgress& p) { seen.push_back(p); });
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(seen.size(), 18u);  // warm-up requests are not reported
  EXPECT_EQ(seen.back().point, 2u);
  EXPECT_EQ(seen.back().points, 3u);
  EXPECT_EQ(seen.back().done, 6u);
  EXPECT_EQ(points[2].max_concurrency, 4);
  EXPECT_LE(points[0].run.max_concurrent, 1);
  EXPECT_EQ(mock.served().size(), 20u);  // 2 warm-up + 3 x 6
  std::atomic<bool> cancel{true};
  EXPECT_TRUE(bench::run_benchmark(bench::http_driver(), source(6, spec.warmup), spec, {}, &cancel).empty());
}

}  // namespace
}  // namespace inferdesk::test
