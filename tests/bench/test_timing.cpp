// The metrics against a scripted mock whose own write times are the reference: every chunk's
// arrival, TTFT, ITL, E2EL and TPOT measured by the client must match the mock's timestamps to
// within what loopback delivery and scheduling allow (kTol); the gaps are 10+ ms apart, so a
// chunk counted wrongly or a misattributed gap fails by far more than kTol.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/bench/bench_metrics.h"
#include "core/bench/metric_definitions.h"
#include "tests/bench/support/mock_server.h"

namespace inferdesk::test {
namespace {

constexpr double kTol = 0.003;  // s: loopback delivery plus wake-up on a busy 2-core machine

// Request i: its first token after 20 + 40 i ms, then gaps that differ per request.
MockResponse scripted(const MockRequest& r) {
  const int i = nlohmann::json::parse(r.body)["prompt"].get<std::string>().back() - '0';
  const std::vector<double> delays = {0.020 + 0.040 * i, 0.010, 0.025 + 0.005 * i, 0.015, 0.030};
  MockResponse m;
  for (double d : delays) m.pieces.push_back({d, sse(R"({"choices":[{"index":0,"text":"ab"}]})")});
  m.pieces.push_back({0, sse(R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5}})")});
  m.pieces.push_back({0, sse_done()});
  return m;
}

double since(Clock::time_point t0, Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); }

// One run against a fresh mock: the client's result, what the mock served, and the worst gap
// between a chunk's arrival and the mock's write of it.
struct Attempt {
  bench::LoadResult run;
  std::vector<Served> served;
  std::vector<bench::BenchRequest> reqs;
  double worst = 1e9;
};

Attempt timed_run() {
  MockServer mock(scripted);
  Attempt a;
  a.reqs.resize(3);
  for (int i = 0; i < 3; ++i) a.reqs[static_cast<size_t>(i)].body = R"({"prompt":"req-)" + std::to_string(i) + R"("})";
  bench::LoadOptions o;
  o.base_url = mock.url();
  a.run = bench::run_load(o, a.reqs);
  a.served = mock.served();
  if (a.served.size() != 3) return a;
  a.worst = 0;
  for (const auto& s : a.served) {
    const bench::RequestResult& r = a.run.requests[static_cast<size_t>(s.request.body[s.request.body.size() - 3] - '0')];
    if (!r.success || r.chunk_s.size() != 5 || s.writes.size() != 7) return a.worst = 1e9, a;
    for (size_t k = 0; k < 5; ++k)
      a.worst = std::max(a.worst, std::abs(r.chunk_s[k] - since(a.run.started, s.writes[k])));
  }
  return a;
}

TEST(Timing, ChunkTimesTtftItlE2elAndTpotMatchTheServersWrites) {
  // A loaded machine can delay one wake-up past kTol; a wrong measurement is wrong every time, so
  // the best of three runs is checked.
  Attempt best = timed_run();
  for (int i = 1; i < 3 && best.worst >= kTol; ++i) {
    Attempt next = timed_run();
    if (next.worst < best.worst) best = std::move(next);
  }
  const bench::LoadResult& run = best.run;
  const auto& served = best.served;
  const auto& reqs = best.reqs;
  ASSERT_EQ(served.size(), 3u);
  double worst = 0, expected_ttft_sum = 0;
  std::vector<double> expected_tpot;
  for (const auto& s : served) {
    const int i = s.request.body[s.request.body.size() - 3] - '0';
    const bench::RequestResult& r = run.requests[static_cast<size_t>(i)];
    ASSERT_TRUE(r.success) << r.error;
    ASSERT_EQ(r.chunks, 5);
    ASSERT_EQ(s.writes.size(), 7u);
    EXPECT_LE(r.start_s, since(run.started, s.received));
    for (size_t k = 0; k < 5; ++k) {
      const double err = r.chunk_s[k] - since(run.started, s.writes[k]);
      EXPECT_GT(err, -0.0005) << i << " chunk " << k;  // the write's time is taken just after send()
      EXPECT_LT(err, kTol) << i << " chunk " << k;
      worst = std::max(worst, std::abs(err));
    }
    const double ttft = since(run.started, s.writes[0]) - r.start_s;
    EXPECT_NEAR(r.ttft_s, ttft, kTol) << i;
    for (size_t k = 1; k < 5; ++k) EXPECT_NEAR(r.itl_s[k - 1], since(s.writes[k - 1], s.writes[k]), 2 * kTol) << i;
    const double e2el = since(run.started, s.writes.back()) - r.start_s;
    EXPECT_NEAR(r.latency_s, e2el, kTol) << i;
    expected_ttft_sum += ttft;
    expected_tpot.push_back((e2el - ttft) / 4);
  }
  std::printf("worst chunk-time error against the server's writes: %.0f us\n", worst * 1e6);
  bench::SummaryOptions so;
  so.slo.ttft_ms = 80;  // TTFTs are ~20, ~60, ~100 ms: two good requests
  const bench::BenchSummary sum = bench::summarize(run, reqs, so);
  EXPECT_EQ(sum.completed, 3);
  EXPECT_EQ(sum.total_output_tokens, 15);  // usage, not the chunk count
  EXPECT_EQ(sum.outputs_from_usage, 3);
  EXPECT_EQ(sum.total_input_tokens, 21);
  EXPECT_EQ(sum.good_completed, 2);
  EXPECT_DOUBLE_EQ(sum.request_goodput, 2 / run.duration_s);
  EXPECT_DOUBLE_EQ(sum.output_throughput, 15 / run.duration_s);
  EXPECT_NEAR(sum.ttft_ms.mean, expected_ttft_sum / 3 * 1000, kTol * 1000);
  EXPECT_NEAR(sum.tpot_ms.mean, (expected_tpot[0] + expected_tpot[1] + expected_tpot[2]) / 3 * 1000, kTol * 1000);
  EXPECT_EQ(sum.itl_ms.percentiles.size(), 1u);
  // The run lasts until the last response: the slowest request's [DONE].
  double last = 0;
  for (const auto& s : served) last = std::max(last, since(run.started, s.writes.back()));
  EXPECT_NEAR(run.duration_s, last, kTol + 0.001);
  // GenAI-Perf's per-request ITL is vLLM's TPOT; llmperf's divides the time to the last chunk by all
  // tokens.
  const auto tools = bench::tool_metrics(run, bench::output_lengths(run, nullptr, nullptr), {50});
  EXPECT_NEAR(tools.distributions.at("genai_perf.inter_token_latency").mean, sum.tpot_ms.mean, 1e-9);
  double llmperf = 0;
  for (const auto& r : run.requests) llmperf += (r.chunk_s.back() - r.start_s) / 5 / 3;
  EXPECT_NEAR(tools.distributions.at("llmperf.inter_token_latency_s").mean, llmperf, 1e-12);
}

}  // namespace
}  // namespace inferdesk::test
