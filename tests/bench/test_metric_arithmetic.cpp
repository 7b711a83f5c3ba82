// Metric arithmetic without a network: goodput and its parser, sweeps and guidellm's rates, the
// definitions table, and the other tools' per-request formulas on hand-made timestamps.
#include <gtest/gtest.h>

#include <set>

#include "core/bench/benchmark.h"
#include "core/bench/metric_definitions.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

TEST(Goodput, ParsesVllmsSpecAndRejectsTheRest) {
  const auto slo = bench::parse_goodput("ttft:500 tpot:50,e2el:2000");
  EXPECT_EQ(slo.ttft_ms, 500);
  EXPECT_EQ(slo.tpot_ms, 50);
  EXPECT_EQ(slo.e2el_ms, 2000);
  EXPECT_TRUE(bench::parse_goodput("").empty());
  for (const char* bad : {"ttft", "ttft:", "ttft:-1", "itl:5", "ttft:5ms"}) EXPECT_THROW(bench::parse_goodput(bad), Error) << bad;
}

TEST(Goodput, CountsRequestsWithinEverySloAndOneTokenRepliesAsTpotZero) {
  bench::LoadResult run;
  run.duration_s = 4;
  auto req = [](double ttft, double e2el, int64_t tokens) {
    bench::RequestResult r;
    r.success = true;
    r.ttft_s = ttft;
    r.latency_s = e2el;
    r.output_tokens = tokens;
    return r;
  };
  run.requests = {req(0.1, 1.1, 11),   // tpot 100 ms: too slow
                  req(0.1, 0.6, 11),   // tpot 50 ms: good
                  req(0.3, 0.3, 1),    // ttft too slow
                  req(0.2, 0.2, 1)};   // one token: tpot 0, good
  bench::SummaryOptions o;
  o.slo = bench::parse_goodput("ttft:250 tpot:50");
  const auto s = bench::summarize(run, {}, o);
  EXPECT_EQ(s.good_completed, 2);
  EXPECT_DOUBLE_EQ(s.request_goodput, 0.5);
  EXPECT_EQ(s.tpot_ms.percentiles.size(), 1u);
  EXPECT_DOUBLE_EQ(s.tpot_ms.mean, 75.0);  // only the two multi-token requests have a TPOT
}

TEST(Sweep, ParsesConcurrencyRateAndGuidellm) {
  const auto c = bench::parse_sweep("concurrency:1,2,4,256");
  EXPECT_EQ(c.kind, bench::Sweep::Kind::Concurrency);
  EXPECT_EQ(c.values, (std::vector<double>{1, 2, 4, 256}));
  EXPECT_EQ(bench::parse_sweep("rate:0.5,2").values, (std::vector<double>{0.5, 2}));
  EXPECT_EQ(bench::parse_sweep("guidellm").guidellm_points, 10);
  EXPECT_EQ(bench::parse_sweep("guidellm:5").guidellm_points, 5);
  for (const char* bad : {"concurrency:", "concurrency:1.5", "rate:0", "rate:a", "guidellm:2", "sweep", "concurrency:1,,2"})
    EXPECT_THROW(bench::parse_sweep(bad), Error) << bad;
}

TEST(Sweep, GuidellmRatesAreEvenlySpacedBetweenTheMeasuredRatesWithoutTheSynchronousOne) {
  // linspace(2, 10, 4) = 2, 4.67, 7.33, 10 without its first value: 3 rates for 5 points.
  const auto r = bench::guidellm_rates(2, 10, 5);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[0], 2 + 8.0 / 3, 1e-12);
  EXPECT_NEAR(r[1], 2 + 16.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(r[2], 10);
  EXPECT_EQ(bench::guidellm_rates(1, 9, 10).size(), 8u);
}

TEST(Definitions, EveryMetricHasAUniqueIdNameUnitAndDefinition) {
  std::set<std::string> ids, tools;
  for (const auto& d : bench::metric_definitions()) {
    EXPECT_TRUE(ids.insert(d.id).second) << d.id;
    EXPECT_FALSE(d.name.empty() || d.unit.empty() || d.definition.empty()) << d.id;
    tools.insert(d.tool);
  }
  EXPECT_EQ(tools, (std::set<std::string>{"vLLM", "GenAI-Perf", "llmperf", "guidellm"}));
  ASSERT_NE(bench::find_metric("vllm.request_goodput"), nullptr);
  EXPECT_EQ(bench::find_metric("nope"), nullptr);
  // Every metric tool_metrics computes is in the table.
  bench::LoadResult run;
  run.duration_s = 1;
  bench::RequestResult r;
  r.success = true;
  r.start_s = 0.5;
  r.chunk_s = {0.6, 0.7, 0.9};
  r.ttft_s = 0.1;
  r.latency_s = 0.5;
  r.output_tokens = 3;
  run.requests = {r};
  const auto m = bench::tool_metrics(run, {3}, {50});
  for (const auto& [id, d] : m.distributions) EXPECT_NE(bench::find_metric(id), nullptr) << id;
  for (const auto& [id, v] : m.figures) EXPECT_NE(bench::find_metric(id), nullptr) << id;
  EXPECT_DOUBLE_EQ(m.distributions.at("genai_perf.inter_token_latency").mean, 200.0);        // (0.5 - 0.1) / 2
  EXPECT_DOUBLE_EQ(m.distributions.at("genai_perf.output_token_throughput_per_user").mean, 5.0);
  EXPECT_DOUBLE_EQ(m.distributions.at("guidellm.inter_token_latency_ms").mean, 150.0);      // (0.4 - 0.1) / 2
  EXPECT_DOUBLE_EQ(m.distributions.at("guidellm.time_per_output_token_ms").mean, 400.0 / 3);  // 0.4 / 3
  EXPECT_DOUBLE_EQ(m.distributions.at("llmperf.inter_token_latency_s").mean, 0.4 / 3);
  EXPECT_DOUBLE_EQ(m.figures.at("genai_perf.output_token_throughput"), 6.0);  // 3 tokens / 0.5 s
  EXPECT_DOUBLE_EQ(m.figures.at("llmperf.num_completed_requests_per_min"), 60.0);
}

}  // namespace
}  // namespace inferdesk
