// core/remote: the streaming chat client against scripted streams with engines' quirks (role-only
// first chunk, empty chunks, usage last or absent, [DONE] missing, an error mid-stream), Stop,
// and its stats measured as the dashboard measures.
#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "core/remote/chat_client.h"
#include "core/remote/key_file.h"
#include "core/remote/machine_info.h"
#include "core/remote/sse.h"
#include "tests/unit/remote/mock_http.h"

namespace inferdesk::remote {
namespace {

using test::MockHttpServer;
using test::MockRoute;

std::string delta(const std::string& text) {
  return R"({"choices":[{"index":0,"delta":{"content":")" + text + R"("},"finish_reason":null}]})";
}

struct Reply {
  std::string text;
  ReplyStats stats;
};

Reply run(MockHttpServer& s, const std::atomic<bool>* stop = nullptr, std::function<void()> on_first = {}) {
  Reply r;
  Endpoint e{"m", s.url(), "", ApiKind::Chat, "tiny"};
  r.stats = stream_chat(e, {{"user", "hi"}}, ChatOptions{}, [&](std::string_view t) {
    if (r.text.empty() && on_first) on_first();
    r.text += t;
  }, stop);
  return r;
}

TEST(SseParser, LinesSplitAnywhereAndCrlfGiveTheSameEvents) {
  std::vector<std::string> got;
  SseParser p([&](std::string_view d) { got.emplace_back(d); });
  const std::string stream = ": keep-alive\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata:[DONE]\n\n";
  for (char c : stream) p.feed(std::string_view(&c, 1));
  EXPECT_EQ(got, (std::vector<std::string>{"{\"a\":1}", "[DONE]"}));
}

TEST(ChatClient, VllmStyleStreamWithUsageInTheLastChunk) {
  MockHttpServer s;
  s.route("/v1/chat/completions",
          {200, {}, "",
           {R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})", delta("Hel"), delta(""),
            delta("lo"), R"({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})",
            R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}})", "[DONE]"},
           20});
  const Reply r = run(s);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.stats.chunks, 2);
  EXPECT_TRUE(r.stats.usage_from_server);
  EXPECT_EQ(r.stats.prompt_tokens, 7);
  EXPECT_EQ(r.stats.output_tokens, 3);
  EXPECT_EQ(r.stats.finish_reason, "length");
  EXPECT_GT(r.stats.ttft_s, 0.02);  // the first content chunk is the second one sent
  EXPECT_GT(r.stats.latency_s, r.stats.ttft_s);
  EXPECT_NEAR(r.stats.tokens_per_s, 2.0 / (r.stats.latency_s - r.stats.ttft_s), 1e-9);
  const auto body = nlohmann::json::parse(s.last_body("/v1/chat/completions"));
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["messages"][0]["content"], "hi");
}

TEST(ChatClient, NoUsageAndNoDoneCountsChunks) {
  MockHttpServer s;
  s.route("/v1/chat/completions", {200, {}, "", {delta("a"), delta("b"), delta("c")}, 5});
  const Reply r = run(s);
  EXPECT_EQ(r.text, "abc");
  EXPECT_FALSE(r.stats.usage_from_server);
  EXPECT_EQ(r.stats.output_tokens, 3);
  EXPECT_EQ(r.stats.finish_reason, "stop");
}

TEST(ChatClient, AnErrorMidStreamIsAStreamError) {
  MockHttpServer s;
  s.route("/v1/chat/completions", {200, {}, "", {delta("a"), R"({"error":{"message":"out of memory"}})"}, 5});
  try {
    run(s);
    FAIL() << "no error";
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.code(), RemoteErrorCode::Stream);
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos);
  }
}

TEST(ChatClient, HttpErrorsCarryTheServersMessage) {
  MockHttpServer s;
  s.route("/v1/chat/completions", {429, {}, R"({"error":{"message":"too many requests"}})"});
  try {
    run(s);
    FAIL() << "no error";
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.code(), RemoteErrorCode::HttpStatus);
    EXPECT_EQ(e.http_status(), 429);
    EXPECT_NE(std::string(e.what()).find("too many requests"), std::string::npos);
  }
}

TEST(ChatClient, StopHangsUpAndKeepsTheTextSoFar) {
  MockHttpServer s;
  std::vector<std::string> chunks(50, delta("x"));
  s.route("/v1/chat/completions", {200, {}, "", chunks, 40});
  std::atomic<bool> stop{false};
  const auto t0 = std::chrono::steady_clock::now();
  const Reply r = run(s, &stop, [&] { stop = true; });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));  // 50 chunks would take 2 s
  EXPECT_EQ(r.stats.finish_reason, "cancelled");
  EXPECT_FALSE(r.text.empty());
  EXPECT_LT(r.text.size(), 50u);
}

TEST(ChatClient, CompletionsKindSendsAPrompt) {
  Endpoint e{"m", "http://x", "", ApiKind::Completions, ""};
  const auto body = nlohmann::json::parse(chat_request_body(e, {{"user", "hi"}}, ChatOptions{}));
  EXPECT_TRUE(body.contains("prompt"));
  EXPECT_FALSE(body.contains("messages"));
  EXPECT_FALSE(body.contains("model"));
}

TEST(KeyFile, KeysRoundTripInAPrivateFile) {
  const auto path = std::filesystem::temp_directory_path() / ("inferdesk-keys-" + std::to_string(::getpid()));
  {
    KeyFile keys(path);
    EXPECT_EQ(keys.get("a"), "");
    keys.set("a", "sk-1");
    keys.set("b", "sk-2");
    keys.rename("a", "c");
    keys.set("b", "");
  }
  KeyFile again(path);
  EXPECT_EQ(again.get("c"), "sk-1");
  EXPECT_EQ(again.get("a"), "");
  EXPECT_EQ(again.get("b"), "");
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::group_read,
            std::filesystem::perms::none);
  std::filesystem::remove(path);
}

TEST(MachineInfo, CpuAndRamAreReadFromProcText) {
  int threads = 0;
  EXPECT_EQ(cpu_model_of("processor\t: 0\nmodel name\t: Test CPU 9000\nprocessor\t: 1\nmodel name\t: Test CPU 9000\n",
                         &threads),
            "Test CPU 9000");
  EXPECT_EQ(threads, 2);
  EXPECT_EQ(ram_bytes_of("MemTotal:       16384 kB\nMemFree: 1 kB\n"), 16384 * 1024);
  const MachineInfo m = machine_info();
  EXPECT_FALSE(m.cpu.empty());
  EXPECT_GT(m.ram_bytes, 0);
  EXPECT_FALSE(m.gpu.empty());  // a name or "none"
}

}  // namespace
}  // namespace inferdesk::remote
