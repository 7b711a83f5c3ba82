// Request parsing (vLLM's fields, defaults and errors), the output side of a generation (stop
// strings across tokens, stop tokens, exact usage) and the response shapes, without a network.
#include <gtest/gtest.h>

#include "core/chat/model_templates.h"
#include "core/server/generation.h"
#include "core/server/generation_request.h"
#include "core/server/openai_format.h"

namespace inferdesk::server {
namespace {

const std::string kTiny = std::string(INFERDESK_SOURCE_DIR) + "/tests/golden/models/tiny-chat";

// tiny-chat as the server sees it, minus the engine (parsing needs none).
ServedModel tiny_model(int32_t max_model_len = 64) {
  ServedModel m;
  m.names = {"tiny", "tiny-alias"};
  m.tokenizer = Tokenizer::from_dir(kTiny);
  const auto templates = chat::load_model_chat_templates(kTiny);
  m.templates.emplace("default", templates.parse(std::nullopt, false));
  m.bos_token = templates.bos_token;
  m.eos_token = templates.eos_token;
  m.max_model_len = max_model_len;
  m.vocab_size = 480;
  return m;
}

Json chat_body(Json extra = Json::object()) {
  Json j = {{"model", "tiny"}, {"messages", Json::array({{{"role", "user"}, {"content", "Hello"}}})}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

int status_of(const Json& body, bool chat, std::string* param = nullptr) {
  const ServedModel m = tiny_model();
  try {
    chat ? parse_chat_request(body, m, {}) : parse_completion_request(body, m, {});
  } catch (const ApiError& e) {
    if (param) *param = e.param();
    return e.status();
  }
  return 200;
}

TEST(ChatRequest, RendersTheChatTemplateAndTokenizesWithoutAddingSpecialTokens) {
  const ServedModel m = tiny_model();
  const GenerationRequest r = parse_chat_request(chat_body(), m, {});
  ASSERT_EQ(r.prompts.size(), 1u);
  const std::string want = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(r.prompts[0].text, want);
  EXPECT_EQ(r.prompts[0].ids, m.tokenizer->encode(want, false));
  // No max_tokens: the rest of the context, as vLLM.
  EXPECT_EQ(r.prompts[0].max_tokens, 64 - static_cast<int32_t>(r.prompts[0].ids.size()));
  EXPECT_EQ(r.params.temperature, 1.0f);
  EXPECT_EQ(r.n, 1);
}

TEST(ChatRequest, ReadsTheSamplingFieldsAndMaxCompletionTokensWins) {
  const ServedModel m = tiny_model();
  const GenerationRequest r = parse_chat_request(chat_body({{"max_tokens", 3},
                                                            {"max_completion_tokens", 5},
                                                            {"temperature", 0.5},
                                                            {"top_p", 0.9},
                                                            {"top_k", 7},
                                                            {"min_p", 0.1},
                                                            {"seed", -3},
                                                            {"stop", "x"},
                                                            {"stop_token_ids", {4, 5}},
                                                            {"presence_penalty", 0.5},
                                                            {"frequency_penalty", -0.5},
                                                            {"repetition_penalty", 1.2},
                                                            {"n", 2},
                                                            {"ignore_eos", true},
                                                            {"logprobs", true},
                                                            {"top_logprobs", 3},
                                                            {"stream", true},
                                                            {"stream_options", {{"include_usage", true}}}}),
                                                 m, {});
  EXPECT_EQ(r.prompts[0].max_tokens, 5);
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.params.top_p, 0.9f);
  EXPECT_EQ(r.params.top_k, 7);
  EXPECT_FLOAT_EQ(r.params.min_p, 0.1f);
  ASSERT_TRUE(r.params.seed);
  EXPECT_EQ(*r.params.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.params.stop_token_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_FLOAT_EQ(r.params.repetition_penalty, 1.2f);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.num_choices(), 2);
  EXPECT_TRUE(r.params.ignore_eos);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(r.params.logprobs, 3);
  EXPECT_TRUE(r.stream && r.include_usage);
}

TEST(ChatRequest, TextPartsAreJoinedAndKwargsReachTheTemplate) {
  const ServedModel m = tiny_model();
  Json body = chat_body({{"chat_template", "{{ greeting }}{% for m in messages %}{{ m['content'] }}{% endfor %}"},
                         {"chat_template_kwargs", {{"greeting", "Hi "}}}});
  body["messages"] = Json::array(
      {{{"role", "user"},
        {"content", Json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}})}}});
  const GenerationRequest r = parse_chat_request(body, m, {});
  EXPECT_EQ(r.prompts[0].text, "Hi a\nb");
}

TEST(ChatRequest, ContinueFinalMessageEndsThePromptAfterItsText) {
  const ServedModel m = tiny_model();
  Json body = chat_body({{"continue_final_message", true}, {"add_generation_prompt", false}});
  body["messages"].push_back({{"role", "assistant"}, {"content", "Sure, "}});
  const GenerationRequest r = parse_chat_request(body, m, {});
  EXPECT_EQ(r.prompts[0].text, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nSure, ");
}

TEST(CompletionRequest, AcceptsTextIdsAndListsOfEitherInOrder) {
  const ServedModel m = tiny_model();
  const GenerationRequest r = parse_completion_request(
      {{"prompt", Json::array({"Hello", "there"})}, {"max_tokens", 4}, {"n", 2}}, m, {});
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.num_choices(), 4);
  EXPECT_EQ(r.prompts[1].ids, m.tokenizer->encode("there", true));
  EXPECT_EQ(&r.prompt_of(3), &r.prompts[1]);
  const GenerationRequest ids = parse_completion_request(
      {{"prompt", Json::array({Json::array({5, 6}), Json::array({7})})}, {"max_tokens", 4}}, m, {});
  ASSERT_EQ(ids.prompts.size(), 2u);
  EXPECT_EQ(ids.prompts[0].ids, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(ids.prompts[1].ids, (std::vector<int32_t>{7}));
  const GenerationRequest flat = parse_completion_request({{"prompt", {9, 8, 7}}, {"max_tokens", 1}, {"logprobs", 2}},
                                                          m, {});
  EXPECT_EQ(flat.prompts.size(), 1u);
  EXPECT_TRUE(flat.logprobs);
  EXPECT_EQ(flat.top_logprobs, 2);
}

struct BadCase {
  const char* name;
  Json body;
  bool chat;
  int status;
  const char* param;
};

TEST(RequestErrors, WrongTypesRangesAndLimitsAreTypedErrorsNamingTheField) {
  const Json msgs = Json::array({{{"role", "user"}, {"content", "Hello"}}});
  const std::vector<BadCase> cases = {
      {"temperature type", chat_body({{"temperature", "hot"}}), true, 400, "temperature"},
      {"temperature range", chat_body({{"temperature", -1}}), true, 400, "temperature"},
      {"top_p zero", chat_body({{"top_p", 0}}), true, 400, "top_p"},
      {"top_p range", chat_body({{"top_p", 1.5}}), true, 400, "top_p"},
      {"top_k range", chat_body({{"top_k", -2}}), true, 400, "top_k"},
      {"min_p range", chat_body({{"min_p", 2}}), true, 400, "min_p"},
      {"presence range", chat_body({{"presence_penalty", 3}}), true, 400, "presence_penalty"},
      {"frequency range", chat_body({{"frequency_penalty", -2.5}}), true, 400, "frequency_penalty"},
      {"repetition zero", chat_body({{"repetition_penalty", 0}}), true, 400, "repetition_penalty"},
      {"max_tokens type", chat_body({{"max_tokens", "x"}}), true, 400, "max_tokens"},
      {"max_tokens fraction", chat_body({{"max_tokens", 2.5}}), true, 400, "max_tokens"},
      {"max_tokens zero", chat_body({{"max_tokens", 0}}), true, 400, "max_tokens"},
      {"max_tokens over context", chat_body({{"max_tokens", 60}}), true, 400, "max_tokens"},
      {"n zero", chat_body({{"n", 0}}), true, 400, "n"},
      {"n too large", chat_body({{"n", 100000}}), true, 400, "n"},
      {"seed type", chat_body({{"seed", "s"}}), true, 400, "seed"},
      {"stop type", chat_body({{"stop", 5}}), true, 400, "stop"},
      {"stop list type", chat_body({{"stop", {"a", 1}}}), true, 400, "stop"},
      {"stop ids type", chat_body({{"stop_token_ids", {"a"}}}), true, 400, "stop_token_ids"},
      {"top_logprobs without logprobs", chat_body({{"top_logprobs", 2}}), true, 400, "top_logprobs"},
      {"top_logprobs range", chat_body({{"logprobs", true}, {"top_logprobs", 21}}), true, 400, "top_logprobs"},
      {"logprobs type", chat_body({{"logprobs", 3}}), true, 400, "logprobs"},
      {"stream type", chat_body({{"stream", "yes"}}), true, 400, "stream"},
      {"stream_options without stream", chat_body({{"stream_options", {{"include_usage", true}}}}), true, 400,
       "stream_options"},
      {"messages missing", {{"model", "tiny"}}, true, 400, "messages"},
      {"messages empty", {{"messages", Json::array()}}, true, 400, "messages"},
      {"message role", {{"messages", Json::array({{{"content", "x"}}})}}, true, 400, "messages"},
      {"image part",
       {{"messages", Json::array({{{"role", "user"}, {"content", Json::array({{{"type", "image_url"}}})}}})}},
       true,
       400,
       "messages"},
      {"kwargs type", chat_body({{"chat_template_kwargs", 3}}), true, 400, "chat_template_kwargs"},
      {"bad own template", chat_body({{"chat_template", "{% for %}"}}), true, 400, "chat_template"},
      {"tools", chat_body({{"tools", Json::array()}, {"tool_choice", "auto"}}), true, 400, "tool_choice"},
      {"logit_bias", chat_body({{"logit_bias", {{"5", 10}}}}), true, 400, "logit_bias"},
      {"response_format", chat_body({{"response_format", {{"type", "json_object"}}}}), true, 400, "response_format"},
      {"unknown model", chat_body({{"model", "gpt-4"}}), true, 404, "model"},
      {"body not object", Json::array({1}), true, 400, ""},
      {"prompt missing", {{"max_tokens", 2}}, false, 400, "prompt"},
      {"prompt type", {{"prompt", 5}}, false, 400, "prompt"},
      {"prompt empty list", {{"prompt", Json::array()}}, false, 400, "prompt"},
      {"prompt id negative", {{"prompt", {1, -2}}}, false, 400, "prompt"},
      {"prompt id outside vocab", {{"prompt", {1, 480}}}, false, 400, "prompt"},
      {"prompt longer than context", {{"prompt", Json(std::vector<int>(64, 5))}}, false, 400, "prompt"},
      {"echo with logprobs", {{"prompt", "x"}, {"echo", true}, {"logprobs", 1}}, false, 400, "echo"},
      {"best_of", {{"prompt", "x"}, {"best_of", 3}}, false, 400, "best_of"},
      {"completion unknown model", {{"prompt", "x"}, {"model", "nope"}}, false, 404, "model"},
      {"completion logprobs range", {{"prompt", "x"}, {"logprobs", 21}}, false, 400, "logprobs"},
  };
  for (const BadCase& c : cases) {
    std::string param;
    EXPECT_EQ(status_of(c.body, c.chat, &param), c.status) << c.name;
    EXPECT_EQ(param, c.param) << c.name;
  }
  EXPECT_EQ(status_of(chat_body({{"model", "tiny-alias"}}), true), 200);
  EXPECT_EQ(status_of(chat_body({{"max_tokens", 5.0}, {"unknown_field", {1, 2}}}), true), 200);
}

TEST(RequestErrors, AModelWithoutTokenizerTakesOnlyTokenIds) {
  ServedModel m = tiny_model();
  m.tokenizer.reset();
  m.templates.clear();
  EXPECT_THROW(parse_chat_request(chat_body(), m, {}), ApiError);
  EXPECT_THROW(parse_completion_request({{"prompt", "text"}}, m, {}), ApiError);
  EXPECT_EQ(parse_completion_request({{"prompt", {1, 2}}, {"max_tokens", 3}}, m, {}).prompts[0].ids.size(), 2u);
}

// --- Generation -------------------------------------------------------------------------------

StreamEvent event(std::vector<int32_t> ids, bool finished = false, FinishReason reason = FinishReason::None) {
  StreamEvent ev;
  for (int32_t id : ids) ev.tokens.push_back(GeneratedToken{id, -0.5f, {}});
  ev.finished = finished;
  ev.reason = reason;
  return ev;
}

GenerationRequest completion_request(const ServedModel& m, Json extra) {
  Json body = {{"prompt", {1, 2, 3}}, {"max_tokens", 20}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  return parse_completion_request(body, m, {});
}

// Ids of plain ASCII words in tiny-chat's vocabulary.
std::vector<int32_t> ids_of(const ServedModel& m, const std::string& text) { return m.tokenizer->encode(text, false); }

TEST(Generation, AStopStringAcrossTokensEndsTheTextBeforeItAndCountsTheTokenThatCompletedIt) {
  const ServedModel m = tiny_model();
  const std::vector<int32_t> ids = ids_of(m, "the quick brown fox jumps");
  ASSERT_GE(ids.size(), 4u);
  std::vector<std::string> texts;
  for (int32_t id : ids) texts.push_back(m.tokenizer->decode(std::vector<int32_t>{id}, false));
  // A stop string made of the end of token 1 and the start of token 2.
  const std::string stop = texts[1].substr(texts[1].size() - 1) + texts[2].substr(0, 1);
  const GenerationRequest req = completion_request(m, {{"stop", stop}});
  Generation g(req, &*m.tokenizer);
  std::string streamed;
  for (size_t i = 0; i < ids.size(); ++i) {
    Generation::Update u = g.apply(0, event({ids[i]}));
    streamed += u.delta.text;
    if (i < 2) {
      EXPECT_FALSE(u.cancel_engine);
    }
    if (i == 2) {
      EXPECT_TRUE(u.cancel_engine);
      EXPECT_EQ(u.delta.finish_reason, "stop");
      EXPECT_EQ(u.delta.stop_reason, stop);
    }
    if (i > 2) {
      EXPECT_TRUE(u.delta.empty());  // tokens the engine made before the cancel landed
    }
  }
  g.apply(0, event({}, true, FinishReason::Cancelled));
  const std::string full = texts[0] + texts[1] + texts[2];
  EXPECT_EQ(streamed, full.substr(0, full.find(stop)));
  EXPECT_EQ(g.output(0).text, streamed);
  EXPECT_EQ(g.completion_tokens(), 3);
  EXPECT_EQ(g.prompt_tokens(), 3);
  EXPECT_TRUE(g.done());
}

TEST(Generation, AStopTokenIsCountedButNotDetokenizedAndNamedAsTheStopReason) {
  const ServedModel m = tiny_model();
  std::vector<int32_t> ids = ids_of(m, "the quick brown");
  ASSERT_GE(ids.size(), 3u);
  ids.resize(3);
  const GenerationRequest req = completion_request(m, {{"stop_token_ids", {ids.back()}}});
  Generation g(req, &*m.tokenizer);
  g.apply(0, event({ids[0], ids[1]}));
  Generation::Update u = g.apply(0, event({ids[2]}, true, FinishReason::Stop));
  EXPECT_EQ(u.delta.finish_reason, "stop");
  EXPECT_EQ(u.delta.stop_reason, ids.back());
  EXPECT_EQ(g.output(0).text, m.tokenizer->decode(std::vector<int32_t>{ids[0], ids[1]}, false));
  EXPECT_EQ(g.completion_tokens(), 3);
  // EOS (a stop the request did not list): stop_reason null.
  const GenerationRequest plain = completion_request(m, {});
  Generation eos(plain, &*m.tokenizer);
  EXPECT_TRUE(eos.apply(0, event({2}, true, FinishReason::Stop)).delta.stop_reason.is_null());
}

TEST(Generation, LengthFlushesHeldTextAndErrorsAndCancelsAreReported) {
  const ServedModel m = tiny_model();
  std::vector<int32_t> ids = ids_of(m, "the quick");
  ASSERT_GE(ids.size(), 2u);
  ids.resize(2);
  const std::string t1 = m.tokenizer->decode(std::vector<int32_t>{ids[1]}, false);
  // A stop string that starts like the last token's text but never completes: held, then released.
  const GenerationRequest held = completion_request(m, {{"stop", t1 + "ZZZ"}});
  Generation g(held, &*m.tokenizer);
  g.apply(0, event({ids[0]}));
  Generation::Update u = g.apply(0, event({ids[1]}, true, FinishReason::Length));
  EXPECT_EQ(u.delta.finish_reason, "length");
  EXPECT_EQ(g.output(0).text, m.tokenizer->decode(ids, false));
  const GenerationRequest plain = completion_request(m, {});
  Generation e(plain, &*m.tokenizer);
  StreamEvent fail = event({}, true, FinishReason::Error);
  fail.error = "device lost";
  EXPECT_EQ(e.apply(0, fail).error, "device lost");
  Generation c(plain, &*m.tokenizer);
  EXPECT_TRUE(c.apply(0, event({}, true, FinishReason::Cancelled)).cancelled);
}

TEST(Generation, LogprobOffsetsStartAfterAnEchoedPrompt) {
  const ServedModel m = tiny_model();
  const GenerationRequest req = parse_completion_request({{"prompt", "the"}, {"max_tokens", 4}, {"logprobs", 1}}, m,
                                                         {});
  Generation g(req, &*m.tokenizer);
  const std::vector<int32_t> ids = ids_of(m, " quick brown");
  g.apply(0, event(ids, true, FinishReason::Length));
  const auto& toks = g.output(0).tokens;
  ASSERT_EQ(toks.size(), ids.size());
  EXPECT_EQ(toks[0].text_offset, 0);
  EXPECT_EQ(toks[1].text_offset, static_cast<int64_t>(toks[0].text.size()));
  const Json full = full_response({"cmpl-1", 1, "tiny"}, req, g, &*m.tokenizer);
  const Json& lp = full["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"].size(), ids.size());
  EXPECT_EQ(lp["token_logprobs"][0].get<double>(), -0.5);
  EXPECT_EQ(full["usage"]["completion_tokens"], ids.size());
  EXPECT_EQ(full["usage"]["total_tokens"], ids.size() + req.prompts[0].ids.size());
}

// --- shapes -----------------------------------------------------------------------------------

TEST(Format, ErrorObjectsHaveOpenAIsFields) {
  const Json e = error_object(400, "bad", "temperature");
  EXPECT_EQ(e["error"]["message"], "bad");
  EXPECT_EQ(e["error"]["type"], "BadRequestError");
  EXPECT_EQ(e["error"]["param"], "temperature");
  EXPECT_EQ(e["error"]["code"], 400);
  EXPECT_TRUE(error_object(404, "x")["error"]["param"].is_null());
  EXPECT_EQ(error_object(429, "x")["error"]["type"], "RateLimitError");
}

TEST(Format, ChatChunksCarryTheDeltaAndTheFinishReason) {
  const ServedModel m = tiny_model();
  const GenerationRequest req = parse_chat_request(chat_body({{"stream", true}}), m, {});
  const ResponseMeta meta{"chatcmpl-x", 7, "tiny"};
  const Json role = chat_role_chunk(meta, 0);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  ChoiceDelta d;
  d.text = "hi";
  const Json c = stream_chunk(meta, req, d, &*m.tokenizer, std::nullopt, true);
  EXPECT_EQ(c["choices"][0]["delta"]["content"], "hi");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(c.contains("usage"));
  ChoiceDelta last;
  last.finish_reason = "length";
  const Json f = stream_chunk(meta, req, last, &*m.tokenizer, Usage{3, 4}, false);
  EXPECT_EQ(f["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(f["choices"][0]["delta"].contains("content"));
  EXPECT_EQ(f["usage"]["total_tokens"], 7);
  EXPECT_EQ(sse_event(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(dump(Json(std::string("\xff"))), "\"\xEF\xBF\xBD\"");  // invalid UTF-8 replaced
}

TEST(Format, TheDirectlyWrittenChunkIsTheJsonChunkByteForByte) {
  const ServedModel m = tiny_model();
  const ResponseMeta meta{"cmpl-\"x\"", 1796000000, "tiny \\ model"};
  std::vector<GenerationRequest> reqs = {
      parse_chat_request(chat_body({{"stream", true}}), m, {}),
      parse_chat_request(chat_body({{"stream", true}, {"return_token_ids", true}}), m, {}),
      parse_completion_request({{"prompt", "the quick"}, {"stream", true}, {"echo", true}, {"max_tokens", 4}}, m, {}),
      parse_completion_request({{"prompt", {1, 2}}, {"stream", true}, {"n", 3}, {"max_tokens", 4}}, m, {})};
  std::vector<ChoiceDelta> deltas(4);
  deltas[0].text = "a \"quote\"\n\xff and \xe2\x82\xac";  // escapes, invalid UTF-8, a 3-byte character
  deltas[0].tokens.push_back({GeneratedToken{7, -1, {}}, "", 0});
  deltas[1].index = 2;
  deltas[1].finish_reason = "stop";
  deltas[1].stop_reason = "</s>";
  deltas[2].finish_reason = "length";
  deltas[2].text = "end";
  deltas[3].finish_reason = "stop";
  deltas[3].stop_reason = 42;
  for (const GenerationRequest& r : reqs)
    for (const ChoiceDelta& d : deltas)
      for (const Tokenizer* tok : {&*m.tokenizer, static_cast<const Tokenizer*>(nullptr)})
        for (bool first : {true, false})
          for (const std::optional<Usage>& u : {std::optional<Usage>(), std::optional<Usage>(Usage{3, 9})}) {
            if (d.index >= r.num_choices()) continue;
            EXPECT_EQ(stream_chunk_text(meta, r, d, tok, u, first), dump(stream_chunk(meta, r, d, tok, u, first)));
          }
}

}  // namespace
}  // namespace inferdesk::server
