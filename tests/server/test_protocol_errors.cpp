// Every refusal is OpenAI's error object with the right status: malformed JSON, fields of the
// wrong type or out of range, prompts longer than the context, unknown models, paths and methods,
// bodies over the limit (413), a missing or wrong API key (401).
#include <gtest/gtest.h>

#include "tests/server/support/protocol_helpers.h"

namespace inferdesk::test {
namespace {

ServerProcess& server() {
  static ServerProcess s(tiny_args());
  return s;
}

void expect_error_object(const HttpResponse& r, long status, const std::string& param, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.body;
  EXPECT_EQ(r.header("Content-Type"), "application/json") << what;
  const Json j = r.json();
  ASSERT_TRUE(j.is_object() && j.contains("error")) << what << ": " << r.body;
  const Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << what;
  EXPECT_TRUE(e["type"].is_string()) << what;
  EXPECT_EQ(e["code"], status) << what;
  if (param.empty())
    EXPECT_TRUE(e["param"].is_null()) << what << ": " << r.body;
  else
    EXPECT_EQ(e["param"], param) << what;
}

struct Case {
  const char* what;
  const char* path;
  std::string body;
  long status;
  const char* param;
};

TEST(ProtocolErrors, BadRequestsGetTypedErrorObjects) {
  HttpClient c(server().url());
  auto chat_with = [](Json extra) { return user_chat("hi", std::move(extra)).dump(); };
  const std::vector<Case> cases = {
      {"malformed JSON", "/v1/chat/completions", "{bad", 400, ""},
      {"truncated JSON", "/v1/completions", "{\"prompt\": [1, 2", 400, ""},
      {"empty body", "/v1/completions", "", 400, ""},
      {"deep nesting", "/v1/completions", std::string(5000, '[') + std::string(5000, ']'), 400, ""},
      {"not an object", "/v1/completions", "[1, 2]", 400, ""},
      {"temperature type", "/v1/chat/completions", chat_with({{"temperature", "warm"}}), 400, "temperature"},
      {"max_tokens type", "/v1/chat/completions", chat_with({{"max_tokens", {1}}}), 400, "max_tokens"},
      {"messages type", "/v1/chat/completions", Json{{"messages", "hi"}}.dump(), 400, "messages"},
      {"stop type", "/v1/chat/completions", chat_with({{"stop", 7}}), 400, "stop"},
      {"n type", "/v1/chat/completions", chat_with({{"n", true}}), 400, "n"},
      {"temperature range", "/v1/chat/completions", chat_with({{"temperature", -0.5}}), 400, "temperature"},
      {"top_p range", "/v1/chat/completions", chat_with({{"top_p", 1.01}}), 400, "top_p"},
      {"top_k range", "/v1/chat/completions", chat_with({{"top_k", -5}}), 400, "top_k"},
      {"min_p range", "/v1/chat/completions", chat_with({{"min_p", -0.1}}), 400, "min_p"},
      {"presence range", "/v1/chat/completions", chat_with({{"presence_penalty", 2.5}}), 400, "presence_penalty"},
      {"frequency range", "/v1/chat/completions", chat_with({{"frequency_penalty", -3}}), 400, "frequency_penalty"},
      {"repetition range", "/v1/chat/completions", chat_with({{"repetition_penalty", -1}}), 400, "repetition_penalty"},
      {"top_logprobs range", "/v1/chat/completions", chat_with({{"logprobs", true}, {"top_logprobs", 50}}), 400,
       "top_logprobs"},
      {"n range", "/v1/chat/completions", chat_with({{"n", 0}}), 400, "n"},
      {"max_tokens over context", "/v1/chat/completions", chat_with({{"max_tokens", 1000}}), 400, "max_tokens"},
      {"chat prompt over context", "/v1/chat/completions", user_chat(std::string(2000, 'z')).dump(), 400, "messages"},
      {"prompt over context", "/v1/completions", completion(Json(std::vector<int>(300, 7))).dump(), 400, "prompt"},
      {"token outside vocab", "/v1/completions", completion({1, 480}).dump(), 400, "prompt"},
      {"stream_options alone", "/v1/completions",
       completion({1}, {{"stream_options", {{"include_usage", true}}}}).dump(), 400, "stream_options"},
      {"stream with a bad field", "/v1/completions", completion({1}, {{"stream", true}, {"top_p", 7}}).dump(), 400,
       "top_p"},
      {"unknown chat model", "/v1/chat/completions", chat_with({{"model", "llama"}}), 404, "model"},
      {"unknown completion model", "/v1/completions", completion({1}, {{"model", "llama"}}).dump(), 404, "model"},
      {"tokenize without prompt", "/tokenize", "{}", 400, "prompt"},
  };
  for (const Case& k : cases) expect_error_object(c.post(k.path, k.body), k.status, k.param, k.what);
  expect_error_object(c.get("/v1/nothing-here"), 404, "", "unknown path");
  expect_error_object(c.get("/v1/chat/completions"), 405, "", "GET on a POST endpoint");
  expect_error_object(c.post("/health", std::string("{}")), 405, "", "POST on a GET endpoint");
  // The server is still fine after all of that.
  EXPECT_EQ(c.post("/v1/completions", completion({1, 2}, {{"max_tokens", 2}})).status, 200);
}

TEST(ProtocolErrors, ABodyOverTheLimitIs413) {
  HttpClient c(server().url());
  const std::string huge = completion(std::string(100 << 10, 'a')).dump();  // 100 KiB > 64 KiB
  expect_error_object(c.post("/v1/completions", huge), 413, "", "large body");
  EXPECT_EQ(c.get("/health").status, 200);
}

TEST(ProtocolErrors, TheApiKeyGuardsV1Only) {
  ServerProcess guarded(tiny_args({"--api-key", "sekrit"}));
  HttpClient c(guarded.url());
  expect_error_object(c.get("/v1/models"), 401, "", "no key");
  expect_error_object(c.get("/v1/models", {"Authorization: Bearer wrong"}), 401, "", "wrong key");
  expect_error_object(c.get("/v1/models", {"Authorization: Bearer sekri"}), 401, "", "a prefix of the key");
  expect_error_object(c.post("/v1/completions", completion({1}).dump()), 401, "", "no key on a POST");
  EXPECT_EQ(c.get("/v1/models", {"Authorization: Bearer sekrit"}).status, 200);
  EXPECT_EQ(
      c.post("/v1/completions", completion({1}, {{"max_tokens", 1}}).dump(), {"Authorization: Bearer sekrit"}).status,
      200);
  EXPECT_EQ(c.get("/health").status, 200);
  EXPECT_EQ(c.get("/metrics").status, 200);
}

}  // namespace
}  // namespace inferdesk::test
