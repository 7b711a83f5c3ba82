// Streaming quirks of real servers, reproduced by mocks: each is measured correctly (TTFT from the
// first chunk with content, tokens from usage or re-tokenized) or reported failed with the reason.
// Shapes follow each server's documented / observed SSE output: vLLM (role-only first delta, usage
// chunk with empty choices), TGI ("data:" without a space), llama.cpp's server (empty content
// deltas, a final empty delta with finish_reason), Ollama's OpenAI endpoint (no usage at all).
#include <gtest/gtest.h>

#include "core/bench/bench_metrics.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/bench/support/mock_server.h"

namespace inferdesk::test {
namespace {

std::string delta(const std::string& content) {
  return sse(R"({"choices":[{"index":0,"delta":{"content":")" + content + R"("},"finish_reason":null}]})");
}

bench::RequestResult one(const MockResponse& resp, bench::LoadResult* out = nullptr) {
  MockServer mock([&](const MockRequest&) { return resp; });
  bench::LoadOptions o;
  o.base_url = mock.url();
  o.endpoint = "/v1/chat/completions";
  std::vector<bench::BenchRequest> reqs(1);
  reqs[0].body = R"({"messages":[{"role":"user","content":"hi"}],"stream":true})";
  bench::LoadResult run = bench::run_load(o, reqs);
  if (out) *out = run;
  return run.requests[0];
}

TEST(Quirks, VllmRoleOnlyFirstChunkAndUsageInALastChunkWithoutChoices) {
  MockResponse m;
  m.pieces = {{0, sse(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})")},
              {0.030, delta("Hel")}, {0.010, delta("lo")},
              {0, sse(R"({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})")},
              {0, sse(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}})")}, {0, sse_done()}};
  const auto r = one(m);
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.chunks, 2);
  EXPECT_GE(r.ttft_s, 0.030);  // not the role chunk's time
  EXPECT_EQ(r.itl_s.size(), 1u);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(r.finish_reason, "length");
}

TEST(Quirks, TgiDataWithoutASpaceAndUsageOnTheFinalChunk) {
  MockResponse m;
  m.pieces = {{0.020, "data:" + delta("a").substr(6)}, {0.010, "data:" + delta("b").substr(6)},
              {0, R"(data:{"choices":[{"index":0,"delta":{"content":"c"},"finish_reason":"stop"}],)"
                  R"("usage":{"prompt_tokens":4,"completion_tokens":3}})" "\n\n"},
              {0, "data:[DONE]\n\n"}};
  const auto r = one(m);
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.chunks, 3);
  EXPECT_EQ(r.text, "abc");
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.finish_reason, "stop");
}

TEST(Quirks, LlamaCppEmptyContentChunksAreNotTokens) {
  MockResponse m;
  m.pieces = {{0.020, delta("")}, {0.010, delta("x")}, {0.010, delta("")}, {0.010, delta("y")},
              {0, sse(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"timings":{"predicted_n":2}})")},
              {0, sse_done()}};
  const auto r = one(m);
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.chunks, 2);
  EXPECT_GE(r.ttft_s, 0.030);  // the first empty delta is not the first token
  ASSERT_EQ(r.itl_s.size(), 1u);
  EXPECT_GE(r.itl_s[0], 0.020);  // x to y spans the empty chunk between them
}

TEST(Quirks, OllamaWithoutUsageAndMultiTokenChunksAreReTokenized) {
  const Tokenizer tok = Tokenizer::from_dir(std::string(INFERDESK_SHARED_DIR) + "/tokenizers/GPT-2");
  MockResponse m;
  m.pieces = {{0.010, delta("The quick brown")}, {0.010, delta(" fox jumps over")}, {0, sse_done()}};
  bench::LoadResult run;
  const auto r = one(m, &run);
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.output_tokens, 0);
  EXPECT_EQ(r.chunks, 2);
  bench::SummaryOptions so;
  so.tokenizer = &tok;
  const auto s = bench::summarize(run, {}, so);
  const auto expected = static_cast<int64_t>(tok.encode("The quick brown fox jumps over", false).size());
  EXPECT_EQ(expected, 6);
  EXPECT_EQ(s.total_output_tokens, expected);
  EXPECT_EQ(s.outputs_retokenized, 1);
  // TPOT divides by the tokens, not the chunks.
  EXPECT_NEAR(s.tpot_ms.mean, (r.latency_s - r.ttft_s) / 5 * 1000, 1e-9);
  const auto without = bench::summarize(run, {}, bench::SummaryOptions{});
  EXPECT_EQ(without.total_output_tokens, 2);  // no tokenizer: the chunks, flagged as such
  EXPECT_EQ(without.outputs_from_chunks, 1);
}

TEST(Quirks, AStreamEndingWithoutDoneIsAFailureWithTheReason) {
  MockResponse m;
  m.pieces = {{0.010, delta("a")}, {0.010, delta("b")}};
  const auto r = one(m);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "the stream ended without [DONE]");
  EXPECT_EQ(r.chunks, 2);
}

TEST(Quirks, AnErrorMidStreamFailsTheRequestWithTheServersMessage) {
  MockResponse m;
  m.pieces = {{0.010, delta("a")}, {0.010, sse(R"({"error":{"message":"KV cache exhausted","code":500}})")}};
  const auto r = one(m);
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.error.find("KV cache exhausted"), std::string::npos) << r.error;
}

TEST(Quirks, TooManyRequestsKeepsStatusRetryAfterAndMessage) {
  MockResponse m;
  m.status = 429;
  m.sse = false;
  m.headers = {"Retry-After: 3"};
  m.pieces = {{0, R"({"error":{"message":"server at capacity","type":"rate_limit"}})"}};
  const auto r = one(m);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.http_status, 429);
  EXPECT_EQ(r.retry_after, "3");
  EXPECT_NE(r.error.find("server at capacity"), std::string::npos) << r.error;
  bench::LoadResult run;
  one(m, &run);
  const auto s = bench::summarize(run, {}, bench::SummaryOptions{});
  EXPECT_EQ(s.failed, 1);
  ASSERT_EQ(s.errors.size(), 1u);  // kept for the report
}

}  // namespace
}  // namespace inferdesk::test
