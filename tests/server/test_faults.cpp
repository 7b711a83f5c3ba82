// Faults against a real server: malformed HTTP (bad request line, oversized headers, bad chunked
// bodies, random bytes), slow clients (partial headers held open: closed at the request deadline),
// too many connections, HTTP/1.0 streaming, and SIGTERM (stop accepting, finish in-flight work
// within the grace period or cancel it with an error event, exit 0). The server must answer or
// close, and keep serving.
#include <gtest/gtest.h>
#include <signal.h>

#include <random>
#include <thread>

#include "tests/server/support/protocol_helpers.h"

namespace inferdesk::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ServerProcess& server() {
  static ServerProcess s(tiny_args({"--request-timeout", "1", "--max-connections", "64"}));
  return s;
}

bool healthy() { return HttpClient(server().url()).get("/health").status == 200; }

std::string exchange(const std::string& bytes, std::chrono::milliseconds wait = 3000ms) {
  RawConnection c(server().port());
  c.send(bytes);
  return c.read_all(wait);
}

TEST(Faults, ABadRequestLineIsAnswered400AndClosed) {
  RawConnection c(server().port());
  ASSERT_TRUE(c.send("THIS IS NOT HTTP\r\n\r\n"));
  const std::string got = c.read_all(3000ms);
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_NE(got.find("\"error\""), std::string::npos);
  EXPECT_FALSE(c.ok());  // closed by the server
  EXPECT_TRUE(healthy());
}

TEST(Faults, OversizedHeadersAreRefusedWith431) {
  const std::string got = exchange("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 << 10, 'a') +
                                   "\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got.substr(0, 200);
  const std::string line = exchange("GET /" + std::string(40 << 10, 'p') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(line.rfind("HTTP/1.1 431", 0), 0u) << line.substr(0, 200);
  EXPECT_TRUE(healthy());
}

TEST(Faults, BodiesOverTheLimitOrBadlyChunkedAreRefused) {
  // A Content-Length far over the limit is refused before any body is read.
  const auto t0 = Clock::now();
  const std::string huge = exchange(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n{");
  EXPECT_EQ(huge.rfind("HTTP/1.1 413", 0), 0u) << huge;
  EXPECT_LT(Clock::now() - t0, 900ms);
  // Chunked bodies are counted as they arrive.
  std::string chunked = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 80; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";
  EXPECT_EQ(exchange(chunked).rfind("HTTP/1.1 413", 0), 0u);
  const std::string bad = exchange(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400", 0), 0u) << bad;
  const std::string conflict = exchange(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n12345");
  EXPECT_EQ(conflict.rfind("HTTP/1.1 400", 0), 0u) << conflict;
  EXPECT_TRUE(healthy());
}

TEST(Faults, SlowClientsAreClosedAtTheRequestDeadline) {
  // Partial headers, then silence: closed once the 1 s deadline passes.
  RawConnection quiet(server().port());
  ASSERT_TRUE(quiet.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"));
  const auto t0 = Clock::now();
  EXPECT_TRUE(quiet.closed_by_peer(4000ms));
  EXPECT_LT(Clock::now() - t0, 2500ms);
  // Trickling a byte at a time does not extend the deadline (slowloris).
  RawConnection trickle(server().port());
  const std::string req = "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(100, 'a');
  const auto t1 = Clock::now();
  bool closed = false;
  for (char ch : req) {
    if (!trickle.send(std::string(1, ch))) {
      closed = true;
      break;
    }
    if (trickle.closed_by_peer(50ms)) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - t1, 2500ms);
  // Many idle connections at once: all closed, the server still answers.
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<RawConnection>(server().port()));
  std::this_thread::sleep_for(1500ms);
  for (auto& c : idle) EXPECT_TRUE(c->closed_by_peer(1000ms));
  EXPECT_TRUE(healthy());
}

TEST(Faults, RandomBytesNeverBringTheServerDown) {
  std::mt19937 rng(99);
  const std::vector<std::string> starts = {
      "", "GET / HTTP/1.1\r\n", "POST /v1/completions HTTP/1.1\r\nContent-Length: 20\r\n\r\n",
      "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n"};
  for (int i = 0; i < 150; ++i) {
    std::string bytes = starts[rng() % starts.size()];
    const size_t n = rng() % 300;
    for (size_t k = 0; k < n; ++k) bytes += static_cast<char>(rng() % 256);
    if (rng() % 2) bytes += "\r\n\r\n";
    RawConnection c(server().port());
    c.send(bytes);
    c.read_all(30ms);
  }
  EXPECT_TRUE(healthy());
  HttpClient h(server().url());
  EXPECT_EQ(h.post("/v1/completions", completion({1, 2}, {{"max_tokens", 3}})).status, 200);
}

TEST(Faults, ConnectionsOverTheLimitGet503) {
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 64; ++i) held.push_back(std::make_unique<RawConnection>(server().port()));
  std::this_thread::sleep_for(100ms);
  // On a loaded machine the server may not have accepted every held connection yet, and then the
  // next one still counts within the limit (it gets no answer, as it sends no request): it is held
  // too and another one tried, a few times at most, all well inside the 1 s request timeout that
  // closes the held ones.
  std::string got;
  for (int attempt = 0; attempt < 6 && got.rfind("HTTP/1.1 503", 0) != 0; ++attempt) {
    held.push_back(std::make_unique<RawConnection>(server().port()));
    got = held.back()->read_all(120ms);
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  held.clear();
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(healthy());
}

TEST(Faults, Http10StreamsEndByClosingTheConnection) {
  const std::string body = completion({1, 2}, {{"max_tokens", 3}, {"stream", true}, {"ignore_eos", true}}).dump();
  const std::string got = exchange("POST /v1/completions HTTP/1.0\r\nContent-Length: " + std::to_string(body.size()) +
                                   "\r\n\r\n" + body);
  EXPECT_EQ(got.rfind("HTTP/1.0 200", 0), 0u) << got;
  EXPECT_EQ(got.find("Transfer-Encoding"), std::string::npos);
  EXPECT_EQ(sse_data(got.substr(got.find("\r\n\r\n") + 4)).size(), 4u) << got;  // 3 tokens + [DONE]
}

TEST(Faults, SigtermFinishesInFlightStreamsAndExitsZero) {
  ServerProcess s(tiny_args({"--shutdown-grace", "30"}, 4096));
  RawConnection conn(s.port());
  const std::string body = completion({1, 2, 3}, {{"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}).dump();
  ASSERT_TRUE(conn.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body));
  ASSERT_NE(conn.read_until("data: {", 5000ms).find("data: {"), std::string::npos);
  s.signal(SIGTERM);
  std::this_thread::sleep_for(100ms);
  // Still streaming, and the listening socket is closed: a new client is refused.
  ASSERT_EQ(conn.read_until("[DONE]", 0ms).find("[DONE]"), std::string::npos) << "finished before the check";
  RawConnection late(s.port());
  EXPECT_FALSE(late.ok()) << "a new connection was accepted after SIGTERM";
  const std::string all = conn.read_until("[DONE]", 20000ms);
  const auto events = sse_data(all.substr(all.find("\r\n\r\n") + 4));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_NE(all.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_EQ(all.find("\"error\""), std::string::npos);
  EXPECT_EQ(s.wait_exit(10000ms), 0) << s.log();
}

TEST(Faults, SigtermCancelsWhatOutlastsTheGraceWithAnErrorEvent) {
  ServerProcess s(tiny_args({"--shutdown-grace", "0.2"}, 4096));
  RawConnection conn(s.port());
  const std::string body = completion({1, 2, 3}, {{"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}).dump();
  ASSERT_TRUE(conn.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body));
  ASSERT_NE(conn.read_until("data: {", 5000ms).find("data: {"), std::string::npos);
  const auto t0 = Clock::now();
  s.signal(SIGTERM);
  const std::string rest = conn.read_all(10000ms);
  const auto events = sse_data(rest);
  ASSERT_GE(events.size(), 2u) << rest;
  EXPECT_EQ(events.back(), "[DONE]");
  const Json err = Json::parse(events[events.size() - 2], nullptr, false);
  EXPECT_EQ(err["error"]["code"], 503) << events[events.size() - 2];
  EXPECT_EQ(s.wait_exit(10000ms), 0) << s.log();
  EXPECT_LT(Clock::now() - t0, 5000ms);
}

}  // namespace
}  // namespace inferdesk::test
