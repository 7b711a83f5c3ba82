// /metrics text (vLLM's names, cumulative buckets, escaped labels) and the load generator's
// arithmetic (vLLM bench serve's TPOT / ITL / percentile definitions, gamma arrivals).
#include <gtest/gtest.h>

#include <cmath>

#include "core/bench/bench_metrics.h"
#include "core/bench/workload.h"
#include "core/server/metrics.h"

namespace inferdesk {
namespace {

TEST(ServerMetrics, RendersVllmNamesWithCumulativeBucketsAndEscapedLabels) {
  server::ServerMetrics m;
  m.observe_ttft(0.003);
  m.observe_ttft(0.5);
  m.observe_finished({"stop", 10, 4, 1.2});
  m.observe_finished({"abort", 3, 0, 0.1});
  m.count_generated(4);
  EngineStats st;
  st.running = 2;
  st.waiting = 1;
  st.kv_blocks_used = 5;
  st.kv_blocks_total = 20;
  const std::string text = m.render("a\"b", &st, 3, 2);
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"a\\\"b\",engine=\"0\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:num_requests_waiting{model_name=\"a\\\"b\",engine=\"0\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"a\\\"b\",engine=\"0\"} 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:prompt_tokens_total{model_name=\"a\\\"b\",engine=\"0\"} 13\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:generation_tokens_total{model_name=\"a\\\"b\",engine=\"0\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("finished_reason=\"stop\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("finished_reason=\"abort\"} 1\n"), std::string::npos);
  // 0.003 falls in le=0.005 (and every larger bucket): cumulative counts.
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"a\\\"b\",engine=\"0\",le=\"0.001\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"a\\\"b\",engine=\"0\",le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"a\\\"b\",engine=\"0\",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{model_name=\"a\\\"b\",engine=\"0\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:e2e_request_latency_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(m.finished("stop"), 1u);
}

TEST(BenchMetrics, PercentilesInterpolateLinearlyAsNumpy) {
  EXPECT_DOUBLE_EQ(bench::percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_NEAR(bench::percentile({1, 2, 3, 4}, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(bench::percentile({7}, 99), 7);
  const bench::Distribution d = bench::distribution({1, 2, 3, 4}, {50, 99});
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.std, std::sqrt(1.25));  // population std, numpy's default
}

TEST(BenchMetrics, SummaryUsesVllmDefinitions) {
  bench::LoadResult run;
  run.duration_s = 2.0;
  bench::RequestResult a;
  a.success = true;
  a.ttft_s = 0.1;
  a.latency_s = 1.1;
  a.output_tokens = 11;
  a.prompt_tokens = 5;
  a.chunks = 11;
  a.itl_s.assign(10, 0.1);
  bench::RequestResult b = a;
  b.output_tokens = 1;  // one token: no TPOT
  b.chunks = 1;
  b.itl_s.clear();
  bench::RequestResult failed;
  failed.error = "HTTP 500";
  run.requests = {a, b, failed};
  const bench::BenchSummary s = bench::summarize(run, {}, {99});
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.total_output_tokens, 12);
  EXPECT_EQ(s.total_input_tokens, 10);
  EXPECT_DOUBLE_EQ(s.output_throughput, 6.0);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_NEAR(s.tpot_ms.mean, 100.0, 1e-9);  // (1.1 - 0.1) / (11 - 1) s
  EXPECT_NEAR(s.ttft_ms.median, 100.0, 1e-9);
  EXPECT_NEAR(s.itl_ms.mean, 100.0, 1e-9);
  EXPECT_EQ(s.errors, std::vector<std::string>{"HTTP 500"});
  const auto j = bench::to_json(s);
  for (const char* key : {"completed", "duration", "mean_ttft_ms", "median_tpot_ms", "p99_itl_ms", "std_e2el_ms",
                          "output_throughput", "total_token_throughput"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(BenchWorkload, ArrivalsHaveTheRequestedMeanRateAndInfinityMeansAllAtOnce) {
  const auto all = bench::arrival_times(10, INFINITY, 1.0, 1);
  for (double t : all) EXPECT_EQ(t, 0.0);
  for (double burst : {1.0, 0.5}) {
    const auto t = bench::arrival_times(20000, 50.0, burst, 7);
    EXPECT_NEAR(t.back() / 19999.0, 1.0 / 50.0, 0.05 / 50.0) << burst;
    EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  }
  bench::RandomWorkload w;
  w.num_requests = 3;
  w.input_len = 4;
  w.output_len = 2;
  w.token_id_max = 20;
  const auto reqs = bench::random_completions(w);
  ASSERT_EQ(reqs.size(), 3u);
  const auto j = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(j["prompt"].size(), 4u);
  EXPECT_EQ(j["max_tokens"], 2);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  for (int id : j["prompt"]) EXPECT_TRUE(id >= 10 && id < 20);
  EXPECT_NE(reqs[0].body, reqs[1].body);
}

}  // namespace
}  // namespace inferdesk
