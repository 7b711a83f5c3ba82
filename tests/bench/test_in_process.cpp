// The in-process target (Engine, no HTTP) and `inferdesk-cli serve` over HTTP, on tiny-chat on
// the CPU, given the same request list: the same prompt and output token counts per request and
// the same greedy text, so their timings differ only by the protocol.
#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/bench/engine_target.h"
#include "core/bench/workload_random.h"
#include "core/engine/engine.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/server/support/protocol_helpers.h"

namespace inferdesk::test {
namespace {

TEST(InProcess, SameTokenCountsAndTextAsTheHttpServer) {
  const std::string dir = ServerProcess::tiny_chat();
  bench::RandomDataset d;
  d.num_requests = 8;
  d.input_len = 8;
  d.output_len = 12;
  d.range_ratio = 0.5;  // lengths differ per request
  d.token_id_max = 470;  // tiny-chat has 480 ids
  d.seed = 3;
  bench::BodyOptions bo;
  bo.model = "tiny";
  const auto reqs = bench::make_requests(bench::sample_random(d, nullptr), bo);
  ServerProcess server(tiny_args());
  bench::LoadOptions o;
  o.base_url = server.url();
  o.max_concurrency = 4;
  const bench::LoadResult http = bench::run_load(o, reqs);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  EngineOptions eo;
  eo.max_model_len = 256;  // as tiny_args() serves it
  Engine engine(load_model_folder(dir, make_cpu_backend(1)), eo);
  const bench::LoadResult local = bench::run_engine_load(engine, &tok, o, reqs);
  ASSERT_EQ(http.requests.size(), local.requests.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto& a = http.requests[i];
    const auto& b = local.requests[i];
    ASSERT_TRUE(a.success) << i << ": " << a.error;
    ASSERT_TRUE(b.success) << i << ": " << b.error;
    EXPECT_EQ(a.prompt_tokens, b.prompt_tokens) << i;
    EXPECT_EQ(a.prompt_tokens, reqs[i].prompt_tokens) << i;
    EXPECT_EQ(a.output_tokens, b.output_tokens) << i;
    EXPECT_GT(b.chunks, 0);
    EXPECT_EQ(a.text, b.text) << i;
  }
  const auto sa = bench::summarize(http, reqs, {50});
  const auto sb = bench::summarize(local, reqs, {50});
  EXPECT_EQ(sa.total_output_tokens, sb.total_output_tokens);
  std::printf("tiny-chat, 8 requests: median TTFT %.2f ms over HTTP, %.2f ms in process\n", sa.ttft_ms.median,
              sb.ttft_ms.median);
}

TEST(InProcess, ChatBodiesFailWithTheReason) {
  const std::string dir = ServerProcess::tiny_chat();
  Engine engine(load_model_folder(dir, make_cpu_backend(1)), EngineOptions{});
  std::vector<bench::BenchRequest> reqs(1);
  reqs[0].body = R"({"messages":[{"role":"user","content":"hi"}]})";
  const auto run = bench::run_engine_load(engine, nullptr, {}, reqs);
  EXPECT_FALSE(run.requests[0].success);
  EXPECT_NE(run.requests[0].error.find("completions"), std::string::npos) << run.requests[0].error;
}

}  // namespace
}  // namespace inferdesk::test
