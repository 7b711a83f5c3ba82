// The server's protocol against a real `inferdesk-cli serve` process with tiny-chat on the CPU:
// every endpoint streamed and not, exact usage, stop strings split across tokens, stop token ids,
// n > 1 and seeds, logprobs, keep-alive, 100-continue, raw SSE through the curl CLI, and a client
// that disconnects mid-stream.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/server/support/protocol_helpers.h"

namespace inferdesk::test {
namespace {

using Clock = std::chrono::steady_clock;

ServerProcess& server() {
  static ServerProcess s(tiny_args());
  return s;
}

HttpClient& client() {
  static HttpClient c(server().url());
  return c;
}

Json post(const std::string& path, const Json& body, long want = 200) {
  HttpResponse r = client().post(path, body);
  EXPECT_EQ(r.status, want) << path << " " << body.dump() << " -> " << r.body;
  return r.json();
}

std::string detokenize(const std::vector<int32_t>& ids) {
  return post("/detokenize", {{"tokens", ids}})["prompt"].get<std::string>();
}

// Greedy, EOS ignored, token ids returned: the reference run of most tests.
Json greedy(Json extra = Json::object()) {
  Json e = {{"temperature", 0}, {"ignore_eos", true}, {"return_token_ids", true}, {"skip_special_tokens", false}};
  for (auto it = extra.begin(); it != extra.end(); ++it) e[it.key()] = it.value();
  return e;
}

std::string run(const std::string& cmd);  // a shell command's stdout (below)

std::string stream_text(const HttpClient::Stream& s, bool chat) {
  std::string text;
  for (const Json& e : s.events)
    for (const Json& c : e["choices"]) {
      if (chat && c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
      if (!chat) text += c["text"].get<std::string>();
    }
  return text;
}

TEST(Protocol, HealthAndModels) {
  HttpResponse h = client().get("/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, "");
  // HEAD answers like GET, without a body (health probes use it).
  const std::string head = run("curl -s -I " + server().url() + "/v1/models");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: "), std::string::npos);
  const Json m = client().get("/v1/models").json();
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 2u);
  EXPECT_EQ(m["data"][0]["id"], "tiny");
  EXPECT_EQ(m["data"][1]["id"], "tiny-alias");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["max_model_len"], 256);
  EXPECT_TRUE(m["data"][0]["created"].is_number_integer());
}

TEST(Protocol, ChatResponseHasExactUsageAndTheTokensItReports) {
  const Json body = user_chat("Hello there", greedy({{"max_tokens", 12}}));
  const Json r = post("/v1/chat/completions", body);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(r["model"], "tiny");
  ASSERT_EQ(r["choices"].size(), 1u);
  const Json& c = r["choices"][0];
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(c["token_ids"].size(), 12u);
  EXPECT_EQ(c["message"]["content"], detokenize(c["token_ids"].get<std::vector<int32_t>>()));
  const Json tok = post("/tokenize", {{"messages", body["messages"]}});
  EXPECT_EQ(r["usage"]["prompt_tokens"], tok["count"]);
  EXPECT_EQ(r["usage"]["completion_tokens"], 12);
  EXPECT_EQ(r["usage"]["total_tokens"], tok["count"].get<int>() + 12);
}

TEST(Protocol, ChatStreamCarriesTheSameTextAsTheWholeResponse) {
  const Json whole = post("/v1/chat/completions", user_chat("Stream me", greedy({{"max_tokens", 10}})));
  Json body = user_chat("Stream me", greedy({{"max_tokens", 10}, {"stream", true}}));
  body["stream_options"] = {{"include_usage", true}};
  const HttpClient::Stream s = client().stream("/v1/chat/completions", body);
  ASSERT_EQ(s.status, 200);
  ASSERT_TRUE(s.done) << s.raw;
  ASSERT_GE(s.events.size(), 3u);
  EXPECT_EQ(s.events[0]["choices"][0]["delta"]["role"], "assistant");
  const std::string id = s.events[0]["id"];
  for (const Json& e : s.events) {
    EXPECT_EQ(e["id"], id);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
  }
  EXPECT_EQ(stream_text(s, true), whole["choices"][0]["message"]["content"]);
  const Json& last_choice = s.events[s.events.size() - 2]["choices"][0];
  EXPECT_EQ(last_choice["finish_reason"], "length");
  const Json& usage = s.events.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"], whole["usage"]);
  // Without include_usage no usage chunk.
  const HttpClient::Stream plain = client().stream("/v1/chat/completions",
                                                   user_chat("x", greedy({{"max_tokens", 2}, {"stream", true}})));
  for (const Json& e : plain.events) EXPECT_FALSE(e.contains("usage") && !e["usage"].is_null());
}

TEST(Protocol, CompletionsTakeTextIdsAndBatchesWithEchoAndCountPromptsOnce) {
  const Json r = post("/v1/completions",
                      completion(Json::array({"Hello", "the quick"}), greedy({{"max_tokens", 3}, {"n", 2}})));
  EXPECT_EQ(r["object"], "text_completion");
  ASSERT_EQ(r["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r["choices"][i]["index"], i);
  const int p0 = post("/tokenize", {{"prompt", "Hello"}})["count"],
            p1 = post("/tokenize", {{"prompt", "the quick"}})["count"];
  EXPECT_EQ(r["usage"]["prompt_tokens"], p0 + p1);
  EXPECT_EQ(r["usage"]["completion_tokens"], 12);
  // Greedy: both choices of one prompt agree.
  EXPECT_EQ(r["choices"][0]["text"], r["choices"][1]["text"]);
  const Json ids = post("/v1/completions", completion({5, 6, 7}, greedy({{"max_tokens", 4}})));
  EXPECT_EQ(ids["usage"]["prompt_tokens"], 3);
  const Json echo = post("/v1/completions", completion("the quick", greedy({{"max_tokens", 4}, {"echo", true}})));
  const std::string text = echo["choices"][0]["text"];
  EXPECT_EQ(text.rfind("the quick", 0), 0u);
  const HttpClient::Stream s = client().stream(
      "/v1/completions", completion("the quick", greedy({{"max_tokens", 4}, {"echo", true}, {"stream", true}})));
  ASSERT_TRUE(s.done);
  EXPECT_EQ(stream_text(s, false), text);
}

TEST(Protocol, LogprobsInBothShapes) {
  const Json c = post("/v1/completions", completion("the", greedy({{"max_tokens", 6}, {"logprobs", 3}})));
  const Json& lp = c["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u);
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  ASSERT_EQ(lp["text_offset"].size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const Json& top = lp["top_logprobs"][i];
    ASSERT_TRUE(top.is_object());
    EXPECT_GE(top.size(), 1u);
    EXPECT_LE(top.size(), 4u);
    double best = -1e9;
    for (auto it = top.begin(); it != top.end(); ++it) best = std::max(best, it.value().get<double>());
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), best, 1e-6);  // greedy picks the best
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
  }
  const Json chat = post("/v1/chat/completions",
                         user_chat("hi", greedy({{"max_tokens", 5}, {"logprobs", true}, {"top_logprobs", 2}})));
  const Json& content = chat["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const Json& t : content) {
    ASSERT_EQ(t["top_logprobs"].size(), 2u);
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_EQ(t["token"], t["top_logprobs"][0]["token"]);
    EXPECT_TRUE(t["bytes"].is_array());
  }
  EXPECT_TRUE(
      post("/v1/chat/completions", user_chat("hi", greedy({{"max_tokens", 2}})))["choices"][0]["logprobs"].is_null());
}

bool printable_ascii(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

TEST(Protocol, AStopStringSplitAcrossTokensEndsTheOutputAndNeverLeaks) {
  const Json prompt = {11, 12, 13, 14};
  const Json ref = post("/v1/completions", completion(prompt, greedy({{"max_tokens", 60}})));
  const std::string full = ref["choices"][0]["text"];
  const auto ids = ref["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  // A boundary between two plain-text tokens whose two characters around it occur first there.
  std::string stop;
  size_t pos = 0, tokens_needed = 0;
  for (size_t i = 0; i + 1 < ids.size() && stop.empty(); ++i) {
    const std::string a = detokenize({ids[i]}), b = detokenize({ids[i + 1]});
    if (!printable_ascii(a) || !printable_ascii(b)) continue;
    const std::string prefix = detokenize(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(i) + 1));
    if (full.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string candidate = a.substr(a.size() - 1) + b.substr(0, 1);
    if (full.find(candidate) != prefix.size() - 1) continue;
    stop = candidate;
    pos = prefix.size() - 1;
    tokens_needed = i + 2;
  }
  ASSERT_FALSE(stop.empty()) << "no usable token boundary in: " << full;
  for (bool stream : {false, true}) {
    Json extra = greedy({{"max_tokens", 60}, {"stop", Json::array({"never-there", stop})}});
    if (stream) {
      extra["stream"] = true;
      extra["stream_options"] = {{"include_usage", true}};
      const HttpClient::Stream s = client().stream("/v1/completions", completion(prompt, extra));
      ASSERT_TRUE(s.done);
      EXPECT_EQ(stream_text(s, false), full.substr(0, pos));
      for (const Json& e : s.events)
        for (const Json& c : e["choices"]) EXPECT_EQ(c["text"].get<std::string>().find(stop), std::string::npos);
      EXPECT_EQ(s.events.back()["usage"]["completion_tokens"], tokens_needed);
      EXPECT_EQ(s.events[s.events.size() - 2]["choices"][0]["finish_reason"], "stop");
    } else {
      const Json r = post("/v1/completions", completion(prompt, extra));
      EXPECT_EQ(r["choices"][0]["text"], full.substr(0, pos));
      EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
      EXPECT_EQ(r["choices"][0]["stop_reason"], stop);
      EXPECT_EQ(r["usage"]["completion_tokens"], tokens_needed);
      EXPECT_EQ(r["choices"][0]["token_ids"].size(), tokens_needed);
    }
  }
  const Json inc = post("/v1/completions",
                        completion(prompt,
                                   greedy({{"max_tokens", 60}, {"stop", stop}, {"include_stop_str_in_output", true}})));
  EXPECT_EQ(inc["choices"][0]["text"], full.substr(0, pos + stop.size()));
}

TEST(Protocol, AStopTokenIdEndsTheOutputWithoutItsText) {
  const Json prompt = {21, 22, 23};
  const Json ref = post("/v1/completions", completion(prompt, greedy({{"max_tokens", 30}})));
  const auto ids = ref["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  size_t k = 3;
  while (k < ids.size() &&
         std::find(ids.begin(), ids.begin() + static_cast<long>(k), ids[k]) != ids.begin() + static_cast<long>(k))
    ++k;
  ASSERT_LT(k, ids.size());
  const Json r = post("/v1/completions",
                      completion(prompt, greedy({{"max_tokens", 30}, {"stop_token_ids", {ids[k]}}})));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["choices"][0]["stop_reason"], ids[k]);
  EXPECT_EQ(r["usage"]["completion_tokens"], k + 1);
  EXPECT_EQ(r["choices"][0]["text"], detokenize(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(k))));
}

TEST(Protocol, NChoicesUseSeedPlusIndexAndSeedsReproduce) {
  const Json extra = {{"temperature", 1.0}, {"seed", 1234}, {"n", 3}, {"max_tokens", 16}, {"ignore_eos", true}};
  const Json a = post("/v1/chat/completions", user_chat("Tell me", extra));
  const Json b = post("/v1/chat/completions", user_chat("Tell me", extra));
  ASSERT_EQ(a["choices"].size(), 3u);
  EXPECT_EQ(a["usage"]["completion_tokens"], 48);
  EXPECT_EQ(a["usage"]["prompt_tokens"], post("/tokenize", {{"messages", user_chat("Tell me")["messages"]}})["count"]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a["choices"][i]["message"]["content"], b["choices"][i]["message"]["content"]);
  EXPECT_FALSE(a["choices"][0]["message"]["content"] == a["choices"][1]["message"]["content"] &&
               a["choices"][1]["message"]["content"] == a["choices"][2]["message"]["content"]);
  Json one = extra;
  one["n"] = 1;
  one["seed"] = 1235;
  EXPECT_EQ(post("/v1/chat/completions", user_chat("Tell me", one))["choices"][0]["message"]["content"],
            a["choices"][1]["message"]["content"]);
  one["seed"] = 99;
  EXPECT_NE(post("/v1/chat/completions", user_chat("Tell me", one))["choices"][0]["message"]["content"],
            a["choices"][1]["message"]["content"]);
}

TEST(Protocol, SamplingFieldsReachTheSampler) {
  const Json prompt = {31, 32, 33};
  auto text = [&](Json extra) {
    extra["max_tokens"] = 40;
    extra["ignore_eos"] = true;
    return post("/v1/completions", completion(prompt, extra))["choices"][0]["text"].get<std::string>();
  };
  const std::string plain = text({{"temperature", 0}});
  EXPECT_EQ(text({{"temperature", 1.0}, {"top_k", 1}, {"seed", 3}}), plain);
  EXPECT_EQ(text({{"temperature", 1.0}, {"min_p", 1.0}, {"seed", 3}}), plain);
  EXPECT_NE(text({{"temperature", 0}, {"repetition_penalty", 2.0}}), plain);
  EXPECT_NE(text({{"temperature", 0}, {"presence_penalty", 2.0}}), plain);
  EXPECT_NE(text({{"temperature", 0}, {"frequency_penalty", 2.0}}), plain);
  EXPECT_EQ(text({{"temperature", 0.8}, {"top_p", 0.9}, {"seed", 5}}),
            text({{"temperature", 0.8}, {"top_p", 0.9}, {"seed", 5}}));
  const Json r = post("/v1/chat/completions",
                      user_chat("x", {{"max_tokens", 9}, {"max_completion_tokens", 3}, {"ignore_eos", true}}));
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
}

TEST(Protocol, TokenizeAndDetokenizeRoundTrip) {
  const Json t = post("/tokenize", {{"prompt", "the quick brown fox"}, {"return_token_strs", true}});
  EXPECT_EQ(t["count"], t["tokens"].size());
  EXPECT_EQ(t["max_model_len"], 256);
  EXPECT_EQ(t["token_strs"].size(), t["tokens"].size());
  EXPECT_EQ(post("/detokenize", {{"tokens", t["tokens"]}})["prompt"], "the quick brown fox");
  EXPECT_EQ(client().post("/detokenize", Json{{"tokens", {100000}}}).status, 400);
}

TEST(Protocol, ChatTemplateKwargsReachTheTemplate) {
  // A request's own template that uses a kwarg: the prompt the server counts is the one rendered.
  const Json extra = {{"chat_template", "{{ greeting }}{% for m in messages %}{{ m['content'] }}{% endfor %}"},
                      {"chat_template_kwargs", {{"greeting", "the quick "}}}};
  Json tok_body = extra;
  tok_body["messages"] = user_chat("brown fox")["messages"];
  const Json t = post("/tokenize", tok_body);
  EXPECT_EQ(t["tokens"],
            post("/tokenize", {{"prompt", "the quick brown fox"}, {"add_special_tokens", false}})["tokens"]);
  Json chat = extra;
  chat["max_tokens"] = 2;
  const Json r = post("/v1/chat/completions", user_chat("brown fox", chat));
  EXPECT_EQ(r["usage"]["prompt_tokens"], t["count"]);
}

TEST(Protocol, DummyWeightsServeTokenIdPromptsWithTokenIdsInEveryChunk) {
  // What the GPU benchmark runs: random weights of a shape, no tokenizer.
  ServerProcess dummy({"--dummy", ServerProcess::tiny_chat() + "/config.json", "--threads", "1", "--max-model-len",
                       "256", "--served-model-name", "shape"});
  HttpClient c(dummy.url());
  const HttpClient::Stream s = c.stream("/v1/completions",
                                        completion({5, 6, 7}, {{"model", "shape"},
                                                               {"max_tokens", 4},
                                                               {"ignore_eos", true},
                                                               {"stream", true},
                                                               {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(s.done) << s.raw;
  ASSERT_EQ(s.events.size(), 5u);  // 4 tokens + usage
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.events[i]["choices"][0]["token_ids"].size(), 1u);
    EXPECT_EQ(s.events[i]["choices"][0]["text"], "");
  }
  EXPECT_EQ(s.events[4]["usage"]["completion_tokens"], 4);
  EXPECT_EQ(c.post("/v1/completions", completion("text", {{"model", "shape"}})).status, 400);
  EXPECT_EQ(c.post("/v1/chat/completions", user_chat("x", {{"model", "shape"}})).status, 400);
}

TEST(Protocol, KeepAliveReusesOneConnection) {
  HttpClient c(server().url());
  EXPECT_EQ(c.get("/health").status, 200);
  EXPECT_EQ(c.connects_last(), 1);
  EXPECT_EQ(c.post("/v1/completions", completion({1, 2}, {{"max_tokens", 2}})).status, 200);
  EXPECT_EQ(c.connects_last(), 0);
  const HttpClient::Stream s = c.stream("/v1/completions", completion({1, 2}, {{"max_tokens", 2}, {"stream", true}}));
  EXPECT_TRUE(s.done);
  EXPECT_EQ(c.get("/health").status, 200);
  EXPECT_EQ(c.connects_last(), 0);  // still the same connection after a stream
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

TEST(Protocol, CurlSeesWellFormedServerSentEvents) {
  const std::string body = completion({1, 2, 3}, {{"max_tokens", 5}, {"stream", true}, {"ignore_eos", true}}).dump();
  const std::string raw = run("curl -N -s -X POST " + server().url() +
                              "/v1/completions -H 'Content-Type: application/json' -d '" + body + "'");
  // Events are "data: <json>" lines, each followed by a blank line; the last one is [DONE].
  std::vector<std::string> lines;
  for (size_t at = 0; at < raw.size();) {
    const size_t nl = raw.find('\n', at);
    ASSERT_NE(nl, std::string::npos) << raw;
    lines.push_back(raw.substr(at, nl - at));
    at = nl + 1;
  }
  ASSERT_EQ(lines.size(), 12u) << raw;  // 5 tokens + [DONE], each with its blank line
  for (size_t i = 0; i < lines.size(); i += 2) {
    EXPECT_EQ(lines[i].rfind("data: ", 0), 0u) << lines[i];
    EXPECT_EQ(lines[i + 1], "");
  }
  EXPECT_EQ(lines[10], "data: [DONE]");
  for (size_t i = 0; i < 10; i += 2) EXPECT_FALSE(Json::parse(lines[i].substr(6), nullptr, false).is_discarded());
}

TEST(Protocol, ALargeBodyWithExpectContinueIsNotDelayed) {
  // curl sends "Expect: 100-continue" for bodies over 1 KiB and waits up to 1 s for it.
  Json body = completion("a", {{"max_tokens", 1}, {"user", std::string(3000, 'u')}});
  const auto t0 = Clock::now();
  const std::string out = run("curl -s -X POST " + server().url() +
                              "/v1/completions -H 'Content-Type: application/json' -d '" + body.dump() + "'");
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(Json::parse(out, nullptr, false)["object"], "text_completion") << out;
  EXPECT_LT(s, 0.9);
}

TEST(Protocol, AClientThatDisconnectsMidStreamIsCancelledAtOnce) {
  // A context long enough for a generation that would outlast the test if it were not cancelled.
  ServerProcess long_server(tiny_args({}, 4096));
  HttpClient c(long_server.url());
  RawConnection conn(long_server.port());
  ASSERT_TRUE(conn.ok());
  const std::string body =
      completion({1, 2, 3}, {{"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}, {"temperature", 0}}).dump();
  ASSERT_TRUE(conn.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body));
  const std::string got = conn.read_until("data: {\"id\"", std::chrono::seconds(10));
  ASSERT_NE(got.find("data: "), std::string::npos);
  conn.close();
  const auto t0 = Clock::now();
  double running = 1;
  while (Clock::now() - t0 < std::chrono::seconds(3)) {
    running = metric(c.get("/metrics").body, "vllm:num_requests_running{");
    if (running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(running, 0);
  EXPECT_LT(waited, 1.0);
  const std::string m = c.get("/metrics").body;
  EXPECT_EQ(metric(m, "inferdesk:kv_blocks_used{"), 0);
  EXPECT_EQ(metric(m, "inferdesk:admitted_requests{"), 0);
  EXPECT_EQ(metric(m, "vllm:request_success_total{", "abort"), 1);
  EXPECT_EQ(metric(m, "vllm:request_success_total{", "length"), 0);
  // Within one engine step: the step running when the cancel arrived, at most.
  EXPECT_EQ(metric(m, "inferdesk:cancel_steps_count{"), 1);
  EXPECT_EQ(metric(m, "inferdesk:cancel_steps_bucket{", "le=\"1\""), 1);
  const double generated = metric(m, "vllm:generation_tokens_total{");
  EXPECT_LT(generated, 2000);  // of the 4000 asked for
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(metric(c.get("/metrics").body, "vllm:generation_tokens_total{"), generated);  // stopped
}

TEST(Protocol, MetricsReportTheTraffic) {
  post("/v1/completions", completion({1, 2}, {{"max_tokens", 3}}));
  const HttpResponse r = client().get("/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type").rfind("text/plain", 0), 0u);
  for (const char* name :
       {"vllm:num_requests_running{", "vllm:num_requests_waiting{", "vllm:kv_cache_usage_perc{",
        "vllm:prompt_tokens_total{", "vllm:generation_tokens_total{", "vllm:time_to_first_token_seconds_count{",
        "vllm:time_per_output_token_seconds_count{", "vllm:e2e_request_latency_seconds_count{"})
    EXPECT_GE(metric(r.body, name), 0) << name;
  EXPECT_GT(metric(r.body, "vllm:prompt_tokens_total{"), 0);
  EXPECT_GT(metric(r.body, "vllm:generation_tokens_total{"), 0);
  EXPECT_GT(metric(r.body, "vllm:e2e_request_latency_seconds_count{"), 0);
  EXPECT_GT(metric(r.body, "vllm:time_to_first_token_seconds_count{"), 0);
}

}  // namespace
}  // namespace inferdesk::test
