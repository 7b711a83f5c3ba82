// Result files: ours saved with vLLM's --save-result names and loaded back (the raw timestamps
// give back the same summary); vLLM's, GenAI-Perf's and guidellm's imported. The fixtures in data/
// are small files in each tool's format: vLLM's keys from vllm/benchmarks/serve.py (the result
// dict of benchmark() and main()), GenAI-Perf's profile_export_genai_perf.json as its docs and
// exports show it (per-metric objects with unit, avg, pNN, min, max, std; input_config),
// guidellm's benchmarks.json from its pydantic schemas (GenerativeBenchmarksReport: benchmarks[]
// with metrics.<name>.successful {mean, median, std_dev, percentiles {p001 ... p999}}).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/bench/result_io.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

const std::string kData = INFERDESK_BENCH_DATA;

double pct(const bench::Distribution& d, double p) {
  for (const auto& [k, v] : d.percentiles)
    if (k == p) return v;
  return -1;
}

bench::LoadResult sample_run() {
  bench::LoadResult run;
  run.duration_s = 1.5;
  run.max_concurrent = 2;
  for (int i = 0; i < 3; ++i) {
    bench::RequestResult r;
    r.success = i < 2;
    r.error = r.success ? "" : "HTTP 500";
    r.http_status = r.success ? 200 : 500;
    r.start_s = 0.1 * i;
    if (r.success) {
      r.chunk_s = {r.start_s + 0.05 + 0.01 * i, r.start_s + 0.07 + 0.01 * i, r.start_s + 0.12 + 0.01 * i};
      r.ttft_s = r.chunk_s[0] - r.start_s;
      r.itl_s = {r.chunk_s[1] - r.chunk_s[0], r.chunk_s[2] - r.chunk_s[1]};
      r.latency_s = r.chunk_s[2] - r.start_s + 0.001;
      r.chunks = 3;
      r.output_tokens = 3;
      r.text = "abc";
    }
    run.requests.push_back(r);
  }
  return run;
}

TEST(Results, SaveThenLoadGivesTheSameSummaryAndRawTimestamps) {
  const bench::LoadResult run = sample_run();
  std::vector<bench::BenchRequest> reqs(3);
  for (auto& r : reqs) r.prompt_tokens = 10;
  bench::SummaryOptions so;
  so.percents = {50, 90, 99};
  so.slo.e2el_ms = 130;
  const bench::BenchSummary s = bench::summarize(run, reqs, so);
  bench::RunInfo info;
  info.date = bench::now_date();
  info.model_id = "tiny";
  info.num_prompts = 3;
  info.request_rate = std::numeric_limits<double>::infinity();
  info.prompt_seed = 0xfedcba9876543210ULL;  // above INT64_MAX: kept as unsigned
  const auto j = bench::result_json(info, run, reqs, s, bench::output_lengths(run, nullptr, nullptr));
  for (const char* key : {"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
                          "max_concurrency", "duration", "completed", "total_input_tokens", "total_output_tokens",
                          "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
                          "input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors", "mean_ttft_ms",
                          "median_tpot_ms", "std_itl_ms", "p99_e2el_ms", "p90_ttft_ms", "inferdesk_raw"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["prompt_seed"], 0xfedcba9876543210ULL);
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_EQ(j["errors"][2], "HTTP 500");
  EXPECT_EQ(j["input_lens"][0], 10);
  const auto path = std::filesystem::temp_directory_path() / ("bench_roundtrip_" + std::to_string(::getpid()) + ".json");
  bench::write_json_file(path, j);
  const auto loaded = bench::load_result_file(path);
  std::filesystem::remove(path);
  ASSERT_EQ(loaded.size(), 1u);
  const auto& r = loaded[0];
  EXPECT_EQ(r.tool, "inferdesk");
  EXPECT_EQ(r.info.model_id, "tiny");
  EXPECT_TRUE(std::isinf(r.info.request_rate));
  EXPECT_EQ(r.info.prompt_seed, 0xfedcba9876543210ULL);
  EXPECT_EQ(r.summary.completed, 2);
  EXPECT_EQ(r.summary.failed, 1);
  EXPECT_TRUE(r.summary.has_goodput);
  EXPECT_DOUBLE_EQ(r.summary.request_goodput, s.request_goodput);
  EXPECT_DOUBLE_EQ(r.summary.ttft_ms.mean, s.ttft_ms.mean);
  EXPECT_DOUBLE_EQ(pct(r.summary.e2el_ms, 90), pct(s.e2el_ms, 90));
  ASSERT_TRUE(r.raw.has_value());
  const bench::BenchSummary again = bench::summarize(*r.raw, reqs, so);
  EXPECT_DOUBLE_EQ(again.tpot_ms.mean, s.tpot_ms.mean);
  EXPECT_NEAR(again.itl_ms.std, s.itl_ms.std, 1e-12);  // gaps rebuilt from the chunk times
  EXPECT_EQ(again.good_completed, s.good_completed);
  EXPECT_EQ(r.raw->requests[1].chunk_s, run.requests[1].chunk_s);
}

TEST(Results, ImportsVllmSavedResults) {
  const auto r = bench::load_result_file(kData + "/vllm_result.json");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].tool, "vllm");
  EXPECT_FALSE(r[0].raw.has_value());
  EXPECT_FALSE(r[0].info.prompt_seed.has_value());  // vLLM does not record one
  EXPECT_EQ(r[0].info.backend, "openai");
  EXPECT_EQ(r[0].info.max_concurrency, 16);
  EXPECT_EQ(r[0].summary.completed, 2);
  EXPECT_FALSE(r[0].summary.has_goodput);
  EXPECT_DOUBLE_EQ(r[0].summary.output_throughput, 80.0);
  EXPECT_DOUBLE_EQ(pct(r[0].summary.ttft_ms, 99), 69.8);
  EXPECT_DOUBLE_EQ(pct(r[0].summary.itl_ms, 99.9), 30.0);
  EXPECT_DOUBLE_EQ(r[0].summary.e2el_ms.median, 2200.0);
}

TEST(Results, ImportsGenAiPerfExports) {
  const auto r = bench::load_result_file(kData + "/profile_export_genai_perf.json");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].tool, "genai-perf");
  EXPECT_EQ(r[0].info.model_id, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(r[0].info.max_concurrency, 8);
  EXPECT_EQ(r[0].summary.completed, 40);
  EXPECT_DOUBLE_EQ(r[0].summary.duration_s, 10.0);
  EXPECT_EQ(r[0].summary.total_output_tokens, 40 * 128);
  EXPECT_DOUBLE_EQ(r[0].summary.ttft_ms.median, 44.0);
  EXPECT_DOUBLE_EQ(pct(r[0].summary.tpot_ms, 99), 13.0);  // its per-request ITL is vLLM's TPOT
  EXPECT_DOUBLE_EQ(r[0].summary.e2el_ms.std, 120.0);
  EXPECT_TRUE(r[0].summary.itl_ms.percentiles.empty());
}

TEST(Results, ImportsEveryBenchmarkOfAGuidellmReport) {
  const auto r = bench::load_result_file(kData + "/guidellm_benchmarks.json");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].tool, "guidellm");
  EXPECT_EQ(r[0].info.label, "synchronous");
  EXPECT_EQ(r[0].summary.completed, 60);
  EXPECT_EQ(r[0].summary.failed, 1);
  EXPECT_DOUBLE_EQ(r[0].summary.duration_s, 30.0);
  EXPECT_DOUBLE_EQ(r[0].summary.e2el_ms.mean, 500.0);  // seconds to ms
  EXPECT_DOUBLE_EQ(pct(r[0].summary.ttft_ms, 0.1), 26.0);
  EXPECT_DOUBLE_EQ(pct(r[0].summary.ttft_ms, 99.9), 36.0);
  EXPECT_DOUBLE_EQ(pct(r[0].summary.tpot_ms, 1), 3.5);
  EXPECT_DOUBLE_EQ(r[0].summary.output_throughput, 256.0);
  EXPECT_EQ(r[1].info.label, "constant");
  EXPECT_DOUBLE_EQ(r[1].info.request_rate, 5.5);
  EXPECT_DOUBLE_EQ(r[1].summary.duration_s, 30.0);  // from start and end
  EXPECT_EQ(r[1].summary.aborted, 2);
}

ErrorCode code_of(const std::string& text) {
  try {
    bench::parse_result(nlohmann::json::parse(text));
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::Internal;
}

TEST(Results, MalformedFilesAreTypedErrors) {
  EXPECT_EQ(code_of(R"([1, 2])"), ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"completed": "two", "duration": 1})"), ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"completed": 1, "duration": 1, "p99_ttft_ms": "x"})"), ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"completed": 1, "duration": 1, "inferdesk_raw": {"requests": [{"chunk_s": 3}]}})"),
            ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"time_to_first_token": [1, 2]})"), ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"time_to_first_token": {"avg": "fast"}})"), ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"benchmarks": [{"metrics": 3}]})"), ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"benchmarks": [{"metrics": {"time_to_first_token_ms": {"errored": {}}}}]})"),
            ErrorCode::Format);
  const auto bad = std::filesystem::temp_directory_path() / ("bench_bad_" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << "{ not json";
  try {
    bench::load_result_file(bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Format);
  }
  std::filesystem::remove(bad);
  try {
    bench::load_result_file(bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
  }
}

}  // namespace
}  // namespace inferdesk
