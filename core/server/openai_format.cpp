#include "core/server/openai_format.h"

#include <algorithm>

#include "core/util/error.h"

namespace inferdesk::server {

namespace {

// JSON has no -inf; vLLM reports such log-probabilities as -9999.0.
double finite_logprob(float lp) { return std::max(static_cast<double>(lp), -9999.0); }

std::string token_text(const Tokenizer* tok, int32_t id) {
  if (!tok) return "token_id:" + std::to_string(id);  // vLLM's return_tokens_as_token_ids form
  try {
    return tok->decode(std::span<const int32_t>(&id, 1), false);
  } catch (const Error&) {
    return "token_id:" + std::to_string(id);
  }
}

std::string text_of(const Tokenizer* tok, const OutputToken& t) {
  return t.text.empty() && !tok ? token_text(tok, t.token.id) : t.text;
}

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]}
Json chat_logprobs(const std::vector<OutputToken>& tokens, int32_t top, const Tokenizer* tok) {
  Json content = Json::array();
  for (const OutputToken& t : tokens) {
    const std::string text = text_of(tok, t);
    Json alts = Json::array();
    for (size_t i = 0; i < t.token.top.size() && i < static_cast<size_t>(top); ++i) {
      const std::string s = token_text(tok, t.token.top[i].id);
      alts.push_back({{"token", s}, {"logprob", finite_logprob(t.token.top[i].logprob)}, {"bytes", bytes_of(s)}});
    }
    content.push_back({{"token", text},
                       {"logprob", finite_logprob(t.token.logprob)},
                       {"bytes", bytes_of(text)},
                       {"top_logprobs", std::move(alts)}});
  }
  return {{"content", std::move(content)}};
}

// {"text_offset", "token_logprobs", "tokens", "top_logprobs": [{token: logprob}, ...]}; the
// sampled token is in its top dict as vLLM puts it there (so up to top + 1 entries).
Json completion_logprobs(const std::vector<OutputToken>& tokens, int32_t top, const Tokenizer* tok) {
  Json offsets = Json::array(), lps = Json::array(), texts = Json::array(), tops = Json::array();
  for (const OutputToken& t : tokens) {
    const std::string text = text_of(tok, t);
    offsets.push_back(t.text_offset);
    lps.push_back(finite_logprob(t.token.logprob));
    texts.push_back(text);
    if (top <= 0) {
      tops.push_back(nullptr);
      continue;
    }
    Json d = Json::object();
    // Tokens that decode alike (byte pieces as U+FFFD) share a key: the best-ranked one keeps it.
    for (size_t i = 0; i < t.token.top.size() && i < static_cast<size_t>(top); ++i)
      d.emplace(token_text(tok, t.token.top[i].id), finite_logprob(t.token.top[i].logprob));
    d.emplace(text, finite_logprob(t.token.logprob));
    tops.push_back(std::move(d));
  }
  return {{"text_offset", std::move(offsets)},
          {"token_logprobs", std::move(lps)},
          {"tokens", std::move(texts)},
          {"top_logprobs", std::move(tops)}};
}

Json logprobs_of(const GenerationRequest& req, const std::vector<OutputToken>& tokens, const Tokenizer* tok) {
  if (!req.logprobs) return nullptr;
  return req.endpoint == Endpoint::Chat ? chat_logprobs(tokens, req.top_logprobs, tok)
                                        : completion_logprobs(tokens, req.top_logprobs, tok);
}

Json token_ids_of(const std::vector<OutputToken>& tokens) {
  Json ids = Json::array();
  for (const OutputToken& t : tokens) ids.push_back(t.token.id);
  return ids;
}

Json finish_value(const std::string& reason) { return reason.empty() ? Json(nullptr) : Json(reason); }

Json header(const ResponseMeta& meta, const char* object) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

const char* chunk_object(const GenerationRequest& req) {
  return req.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
}

}  // namespace

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"completion_tokens", u.completion_tokens},
          {"prompt_tokens_details", nullptr}};
}

Json chat_role_chunk(const ResponseMeta& meta, int32_t index) {
  Json j = header(meta, "chat.completion.chunk");
  j["choices"] = Json::array({{{"index", index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  return j;
}

Json stream_chunk(const ResponseMeta& meta, const GenerationRequest& req, const ChoiceDelta& d, const Tokenizer* tok,
                  const std::optional<Usage>& usage, bool first_of_choice) {
  Json choice = {{"index", d.index}};
  if (req.endpoint == Endpoint::Chat) {
    Json delta = Json::object();
    if (!d.text.empty() || d.finish_reason.empty()) delta["content"] = d.text;
    choice["delta"] = std::move(delta);
  } else {
    std::string text = d.text;
    if (req.echo && first_of_choice) text = req.prompt_of(d.index).text + text;
    choice["text"] = std::move(text);
  }
  choice["logprobs"] = logprobs_of(req, d.tokens, tok);
  choice["finish_reason"] = finish_value(d.finish_reason);
  choice["stop_reason"] = d.stop_reason;
  if (req.return_token_ids || !tok) choice["token_ids"] = token_ids_of(d.tokens);
  Json j = header(meta, chunk_object(req));
  j["choices"] = Json::array({std::move(choice)});
  if (usage) j["usage"] = usage_json(*usage);
  return j;
}

std::string stream_chunk_text(const ResponseMeta& meta, const GenerationRequest& req, const ChoiceDelta& d,
                              const Tokenizer* tok, const std::optional<Usage>& usage, bool first_of_choice) {
  if (req.logprobs) return dump(stream_chunk(meta, req, d, tok, usage, first_of_choice));
  const bool chat = req.endpoint == Endpoint::Chat;
  std::string out;
  out.reserve(256 + d.text.size());
  out += "{\"id\":";
  out += dump(Json(meta.id));
  out += chat ? ",\"object\":\"chat.completion.chunk\",\"created\":" : ",\"object\":\"text_completion\",\"created\":";
  out += std::to_string(meta.created);
  out += ",\"model\":";
  out += dump(Json(meta.model));
  out += ",\"choices\":[{\"index\":";
  out += std::to_string(d.index);
  if (chat) {
    out += ",\"delta\":{";
    if (!d.text.empty() || d.finish_reason.empty()) out += "\"content\":" + dump(Json(d.text));
    out += "}";
  } else {
    out += ",\"text\":";
    out += dump(Json(req.echo && first_of_choice ? req.prompt_of(d.index).text + d.text : d.text));
  }
  out += ",\"logprobs\":null,\"finish_reason\":";
  out += d.finish_reason.empty() ? "null" : dump(Json(d.finish_reason));
  out += ",\"stop_reason\":";
  out += dump(d.stop_reason);
  if (req.return_token_ids || !tok) {
    out += ",\"token_ids\":[";
    for (size_t i = 0; i < d.tokens.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(d.tokens[i].token.id);
    }
    out += "]";
  }
  out += "}]";
  if (usage) out += ",\"usage\":" + dump(usage_json(*usage));
  out += "}";
  return out;
}

Json usage_chunk(const ResponseMeta& meta, const GenerationRequest& req, const Usage& u) {
  Json j = header(meta, chunk_object(req));
  j["choices"] = Json::array();
  j["usage"] = usage_json(u);
  return j;
}

Json full_response(const ResponseMeta& meta, const GenerationRequest& req, const Generation& g, const Tokenizer* tok) {
  const bool chat = req.endpoint == Endpoint::Chat;
  Json j = header(meta, chat ? "chat.completion" : "text_completion");
  Json choices = Json::array();
  for (size_t i = 0; i < g.num_choices(); ++i) {
    const ChoiceOutput& o = g.output(i);
    Json c = {{"index", static_cast<int64_t>(i)}};
    if (chat) {
      c["message"] = {{"role", "assistant"}, {"content", o.text}, {"tool_calls", Json::array()}};
    } else {
      c["text"] = req.echo ? req.prompt_of(static_cast<int64_t>(i)).text + o.text : o.text;
    }
    c["logprobs"] = logprobs_of(req, o.tokens, tok);
    c["finish_reason"] = finish_value(o.finish_reason);
    c["stop_reason"] = o.stop_reason;
    if (req.return_token_ids || !tok) c["token_ids"] = token_ids_of(o.tokens);
    choices.push_back(std::move(c));
  }
  j["choices"] = std::move(choices);
  j["usage"] = usage_json({g.prompt_tokens(), g.completion_tokens()});
  return j;
}

}  // namespace inferdesk::server
