#include "core/server/routes.h"

#include "core/server/generation_request.h"
#include "core/server/json_fields.h"
#include "core/server/openai_format.h"
#include "core/util/error.h"

namespace inferdesk::server {

SimpleResponse json_response(int status, const Json& body) {
  SimpleResponse r;
  r.status = status;
  r.body = dump(body);
  return r;
}

SimpleResponse error_response(const ApiError& e) { return json_response(e.status(), error_object(e)); }

SimpleResponse health_response(const Server::Context& ctx) {
  // vLLM: 200 with an empty body while the engine is alive.
  if (ctx.model.engine.expired()) return error_response(ApiError(503, "no model is loaded"));
  SimpleResponse r;
  r.content_type = "text/plain";
  return r;
}

SimpleResponse models_response(const Server::Context& ctx) {
  const ServedModel& m = ctx.model;
  Json data = Json::array();
  for (const std::string& name : m.names) {
    Json perm = {{"id", "modelperm-" + name},
                 {"object", "model_permission"},
                 {"created", m.created},
                 {"allow_create_engine", false},
                 {"allow_sampling", true},
                 {"allow_logprobs", true},
                 {"allow_search_indices", false},
                 {"allow_view", true},
                 {"allow_fine_tuning", false},
                 {"organization", "*"},
                 {"group", nullptr},
                 {"is_blocking", false}};
    data.push_back({{"id", name},
                    {"object", "model"},
                    {"created", m.created},
                    {"owned_by", "inferdesk"},
                    {"root", m.root},
                    {"parent", nullptr},
                    {"max_model_len", m.max_model_len},
                    {"permission", Json::array({std::move(perm)})}});
  }
  return json_response(200, {{"object", "list"}, {"data", std::move(data)}});
}

SimpleResponse metrics_response(const Server::Context& ctx) {
  std::optional<EngineStats> st;
  if (std::shared_ptr<Engine> e = ctx.model.engine.lock()) st = e->stats();
  SimpleResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.metrics.render(ctx.model.name(), st ? &*st : nullptr, ctx.open_connections.load(),
                              ctx.admission.in_use());
  return r;
}

SimpleResponse tokenize_response(const Server::Context& ctx, const Json& body) {
  const ServedModel& m = ctx.model;
  const JsonFields f(body);
  check_model_name(body, m);
  if (!m.tokenizer) bad_request("this model has no tokenizer");
  std::vector<int32_t> ids;
  if (f.raw("messages")) {
    ids = chat_prompt(body, m).ids;
  } else {
    const auto prompt = f.string("prompt", ctx.options.max_body_bytes);
    if (!prompt) bad_request("give prompt or messages", "prompt");
    ids = m.tokenizer->encode(*prompt, EncodeOptions{f.boolean("add_special_tokens").value_or(true), false});
  }
  Json strs = nullptr;
  if (f.boolean("return_token_strs").value_or(false)) {
    strs = Json::array();
    for (int32_t id : ids) strs.push_back(m.tokenizer->id_to_token(id).value_or(""));
  }
  return json_response(200, {{"count", ids.size()},
                             {"max_model_len", m.max_model_len},
                             {"tokens", ids},
                             {"token_strs", std::move(strs)}});
}

SimpleResponse detokenize_response(const Server::Context& ctx, const Json& body) {
  const ServedModel& m = ctx.model;
  const JsonFields f(body);
  check_model_name(body, m);
  if (!m.tokenizer) bad_request("this model has no tokenizer");
  const auto ids = f.int_list("tokens", ctx.options.max_body_bytes, 0, INT32_MAX);
  if (!ids) bad_request("tokens is required", "tokens");
  for (int32_t id : *ids)
    if (id >= m.vocab_size || !m.tokenizer->id_to_token(id))
      bad_request("token id " + std::to_string(id) + " is not in the vocabulary", "tokens");
  std::string text;
  try {
    text = m.tokenizer->decode(*ids, false);
  } catch (const Error& e) {
    bad_request(e.what(), "tokens");
  }
  return json_response(200, {{"prompt", text}});
}

bool authorized(const Server::Context& ctx, std::string_view authorization) {
  const std::string& key = ctx.options.api_key;
  if (key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.substr(0, kBearer.size()) != kBearer) return false;
  const std::string_view given = authorization.substr(kBearer.size());
  // Constant time in the key's length: no early exit on the first differing byte.
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned>(static_cast<unsigned char>(key[i]) ^
                                  static_cast<unsigned char>(i < given.size() ? given[i] : 0));
  return diff == 0;
}

}  // namespace inferdesk::server
