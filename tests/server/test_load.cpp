// Load against real server processes on 127.0.0.1 (bounded in count and time): 256 concurrent
// streams give the greedy outputs of the same requests sent one by one; 10x the admission limit
// gets 429s for the excess and nothing else; 100 clients that hang up at random points leave no
// running request, no admitted slot and no used KV block; 10,000 sequential requests keep the
// server's RSS within 5% of its value after the first 1,000.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "core/bench/load_generator.h"
#include "core/bench/workload.h"
#include "tests/server/support/protocol_helpers.h"

namespace inferdesk::test {
namespace {

using Clock = std::chrono::steady_clock;

bench::LoadOptions load_options(const ServerProcess& s) {
  bench::LoadOptions o;
  o.base_url = s.url();
  o.timeout_s = 300;
  return o;
}

std::vector<bench::BenchRequest> random_streams(int n, int input_len, int output_len, uint64_t seed) {
  bench::RandomWorkload w;
  w.num_requests = n;
  w.input_len = input_len;
  w.output_len = output_len;
  w.token_id_max = 470;  // tiny-chat's vocabulary has 480 ids
  w.seed = seed;
  w.model = "tiny";
  return bench::random_completions(w);
}

// Waits until /metrics shows nothing running, waiting, admitted or holding KV blocks.
bool engine_drains(HttpClient& c, std::chrono::seconds timeout, std::string* last) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    *last = c.get("/metrics").body;
    if (metric(*last, "vllm:num_requests_running{") == 0 && metric(*last, "vllm:num_requests_waiting{") == 0 &&
        metric(*last, "inferdesk:admitted_requests{") == 0 && metric(*last, "inferdesk:kv_blocks_used{") == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Load, ConcurrentStreamsGiveTheGreedyOutputsOfSequentialRequests) {
  ServerProcess s(tiny_args({"--max-num-seqs", "256", "--max-waiting-requests", "256"}));
  const auto requests = random_streams(256, 8, 16, 42);
  const bench::LoadResult together = bench::run_load(load_options(s), requests);
  bench::LoadOptions one_by_one = load_options(s);
  one_by_one.max_concurrency = 1;
  const bench::LoadResult alone = bench::run_load(one_by_one, requests);
  EXPECT_EQ(together.max_concurrent, 256);
  EXPECT_EQ(alone.max_concurrent, 1);
  std::printf("256 streams x 16 tokens: %.2f s together, %.2f s one by one\n", together.duration_s, alone.duration_s);
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& a = together.requests[i];
    const auto& b = alone.requests[i];
    ASSERT_TRUE(a.success) << i << ": " << a.error;
    ASSERT_TRUE(b.success) << i << ": " << b.error;
    EXPECT_EQ(a.output_tokens, 16) << i;
    EXPECT_EQ(a.finish_reason, "length") << i;
    EXPECT_EQ(a.text, b.text) << i;
    EXPECT_EQ(a.output_tokens, b.output_tokens) << i;
    EXPECT_EQ(a.prompt_tokens, 8) << i;
  }
}

TEST(Load, TenTimesTheAdmissionLimitGets429ForTheExcessOnly) {
  // 4 running + 4 waiting admitted; requests long enough to be in flight while the rest arrive.
  ServerProcess s(tiny_args({"--max-num-seqs", "4", "--max-waiting-requests", "4"}, 2048));
  const auto requests = random_streams(80, 8, 1000, 7);
  const bench::LoadResult run = bench::run_load(load_options(s), requests);
  int ok = 0, limited = 0;
  for (const auto& r : run.requests) {
    if (r.success) {
      ++ok;
      EXPECT_EQ(r.output_tokens, 1000);
      EXPECT_EQ(r.finish_reason, "length");
    } else {
      EXPECT_EQ(r.http_status, 429) << r.error;
      EXPECT_EQ(r.retry_after, "1");
      EXPECT_NE(r.error.find("capacity"), std::string::npos) << r.error;
      ++limited;
    }
  }
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(limited, 72);
  std::printf("80 requests against 8 admitted: %d served (1,000 tokens each), %d got 429, %.2f s\n", ok, limited,
              run.duration_s);
  HttpClient c(s.url());
  std::string m;
  EXPECT_TRUE(engine_drains(c, std::chrono::seconds(5), &m)) << m;
  EXPECT_EQ(metric(m, "inferdesk:http_responses_total{", "code=\"429\""), 72);
}

TEST(Load, ClientsThatHangUpAtRandomPointsLeaveNothingBehind) {
  ServerProcess s(tiny_args({"--max-num-seqs", "128", "--log-requests"}, 4096));
  auto requests = random_streams(100, 8, 3000, 11);
  std::mt19937 rng(2024);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (i % 2 == 0)
      requests[i].abort_after_chunks = static_cast<int32_t>(rng() % 40);
    else
      requests[i].abort_after_s = static_cast<double>(20 + rng() % 480) / 1000.0;  // sent by then
  }
  const bench::LoadResult run = bench::run_load(load_options(s), requests);
  for (const auto& r : run.requests) EXPECT_TRUE(r.aborted) << r.error;
  HttpClient c(s.url());
  std::string m;
  const auto t0 = Clock::now();
  EXPECT_TRUE(engine_drains(c, std::chrono::seconds(5), &m)) << m;
  std::printf("100 hang-ups: the engine was empty %.0f ms after the last one\n",
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  // Every request the server read (a client that resets right after sending may be gone before
  // that) was logged as abandoned (finish=abort) and counted as an aborted engine request; the final
  // events are counted on the connections' strands, a moment after the slots free.
  const std::string log = s.log();
  int abandoned = 0;
  for (size_t at = 0; (at = log.find(" finish=abort ", at)) != std::string::npos; ++at) ++abandoned;
  EXPECT_GE(abandoned, 90);
  for (int i = 0; i < 100 && metric(m, "vllm:request_success_total{", "abort") < abandoned; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m = c.get("/metrics").body;
  }
  EXPECT_EQ(metric(m, "vllm:request_success_total{", "abort"), abandoned);
  EXPECT_EQ(metric(m, "vllm:request_success_total{", "length"), 0);
  EXPECT_EQ(metric(m, "inferdesk:open_connections{"), 1);  // this client's
  EXPECT_EQ(c.post("/v1/completions", completion({1, 2}, {{"max_tokens", 2}})).status, 200);
}

// One cycle of the request mix: both endpoints, streamed and not, stop strings, logprobs, n > 1,
// new and reused connections, and refusals.
std::vector<bench::BenchRequest> request_mix(int cycles) {
  const std::vector<std::pair<std::string, Json>> kinds = {
      {"/v1/completions", completion({1, 2, 3}, {{"max_tokens", 4}})},
      {"/v1/completions", completion("the quick", {{"max_tokens", 4}, {"stream", true}, {"logprobs", 2}})},
      {"/v1/chat/completions", user_chat("hi", {{"max_tokens", 4}})},
      {"/v1/chat/completions",
       user_chat("hi", {{"max_tokens", 4}, {"stream", true}, {"stream_options", {{"include_usage", true}}}})},
      {"/v1/completions", completion({4, 5}, {{"max_tokens", 4}, {"n", 2}, {"stop", {"a", "e"}}})},
      {"/v1/completions", completion({1}, {{"temperature", -1}})},
      {"/v1/chat/completions", user_chat("x", {{"model", "missing"}})},
  };
  std::vector<bench::BenchRequest> out;
  for (int c = 0; c < cycles; ++c)
    for (size_t k = 0; k < kinds.size(); ++k) {
      bench::BenchRequest r;
      r.endpoint = kinds[k].first;
      r.body = kinds[k].second.dump();
      r.fresh_connection = (c + static_cast<int>(k)) % 5 == 0;
      out.push_back(std::move(r));
    }
  return out;
}

TEST(Load, TenThousandSequentialRequestsKeepRssFlat) {
  // A small KV cache, touched in full by the first requests: what grows after that is the server.
  ServerProcess s(tiny_args({"--kv-cache-mb", "4", "--log-requests"}));  // log: every request answered
  bench::LoadOptions o = load_options(s);
  o.max_concurrency = 1;
  const auto mix = request_mix(1);
  auto run = [&](int n) {
    std::vector<bench::BenchRequest> reqs;
    for (int i = 0; i < n; ++i) reqs.push_back(mix[static_cast<size_t>(i) % mix.size()]);
    const bench::LoadResult r = bench::run_load(o, reqs);
    int ok = 0, refused = 0;
    for (size_t i = 0; i < r.requests.size(); ++i) {
      const auto& x = r.requests[i];
      (x.success ? ok : refused) += 1;
      const bool should_fail = i % mix.size() >= 5;
      EXPECT_EQ(x.success, !should_fail) << i << ": " << x.http_status << " " << x.error;
    }
    return std::pair<int, int>{ok, refused};
  };
  const auto [ok1, refused1] = run(1000);
  const long rss_1000 = s.rss_kb();
  const auto [ok2, refused2] = run(9000);
  const long rss_10000 = s.rss_kb();
  // Five of the seven kinds succeed, two are refused (400, 404), in every cycle.
  auto expected_ok = [](int n) { return n / 7 * 5 + std::min(n % 7, 5); };
  EXPECT_EQ(ok1, expected_ok(1000));
  EXPECT_EQ(ok2, expected_ok(9000));
  EXPECT_EQ(ok1 + refused1 + ok2 + refused2, 10000);
  ASSERT_GT(rss_1000, 0);
  std::printf("server RSS after 1,000 requests: %ld KiB; after 10,000: %ld KiB (%+.2f%%)\n", rss_1000, rss_10000,
              100.0 * static_cast<double>(rss_10000 - rss_1000) / static_cast<double>(rss_1000));
  EXPECT_LE(std::abs(rss_10000 - rss_1000), rss_1000 / 20);
  // No request was taken for abandoned by its client (status 499 in the request log).
  EXPECT_EQ(s.log().find("\" 499 "), std::string::npos);
}

}  // namespace
}  // namespace inferdesk::test
