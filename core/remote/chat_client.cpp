#include "core/remote/chat_client.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "core/remote/http_client.h"
#include "core/remote/sse.h"

namespace inferdesk::remote {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string joined_prompt(const std::vector<ChatMessage>& messages) {
  std::string p;
  for (const auto& m : messages) p += m.role + ": " + m.content + "\n";
  return p + "assistant:";
}

// What one streamed chunk carries; fields not present keep their defaults.
struct Chunk {
  std::string text;
  std::string finish_reason;
  std::optional<Json> usage;
  std::string error;
};

Chunk read_chunk(const Json& j) {
  Chunk c;
  if (!j.is_object()) return c;
  if (j.contains("error")) {
    const Json& e = j["error"];
    c.error = e.is_object() && e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                                : e.dump();
    return c;
  }
  if (j.contains("usage") && j["usage"].is_object()) c.usage = j["usage"];
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return c;
  const Json& ch = j["choices"][0];
  if (!ch.is_object()) return c;
  if (ch.contains("delta") && ch["delta"].is_object() && ch["delta"].contains("content") &&
      ch["delta"]["content"].is_string())
    c.text = ch["delta"]["content"].get<std::string>();
  else if (ch.contains("text") && ch["text"].is_string())
    c.text = ch["text"].get<std::string>();
  if (ch.contains("finish_reason") && ch["finish_reason"].is_string()) c.finish_reason = ch["finish_reason"];
  return c;
}

int64_t int_field(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

std::string error_message_of(const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const Json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"];
    if (e.is_string()) return e.get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace

std::string chat_request_body(const Endpoint& endpoint, const std::vector<ChatMessage>& messages,
                              const ChatOptions& options) {
  Json body = {{"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"max_tokens", options.max_tokens},
               {"temperature", options.temperature},
               {"top_p", options.top_p}};
  if (!endpoint.model.empty()) body["model"] = endpoint.model;
  if (options.seed) body["seed"] = *options.seed;
  if (endpoint.kind == ApiKind::Completions) {
    body["prompt"] = joined_prompt(messages);
  } else {
    Json list = Json::array();
    for (const auto& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(list);
  }
  return body.dump();
}

ReplyStats stream_chat(const Endpoint& endpoint, const std::vector<ChatMessage>& messages, const ChatOptions& options,
                       const std::function<void(std::string_view)>& on_text, const std::atomic<bool>* stop) {
  ReplyStats stats;
  std::string error, raw;  // raw: the first bytes, for a non-2xx status's message
  const auto t0 = Clock::now();
  auto seconds = [t0] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  SseParser parser([&](std::string_view data) {
    if (data == "[DONE]" || !error.empty()) return;
    const Json j = Json::parse(data, nullptr, false);
    if (j.is_discarded()) return;  // a keep-alive or a quirk: not a chunk
    const Chunk c = read_chunk(j);
    if (!c.error.empty()) error = c.error;
    if (c.usage) {
      stats.prompt_tokens = int_field(*c.usage, "prompt_tokens");
      stats.output_tokens = int_field(*c.usage, "completion_tokens");
      stats.usage_from_server = true;
    }
    if (!c.finish_reason.empty()) stats.finish_reason = c.finish_reason;
    if (c.text.empty()) return;  // role-only and empty chunks carry no token
    if (stats.chunks++ == 0) stats.ttft_s = seconds();
    on_text(c.text);
  });
  HttpCall call;
  call.method = "POST";
  call.url = normalized_base_url(endpoint.base_url) +
             (endpoint.kind == ApiKind::Completions ? "/v1/completions" : "/v1/chat/completions");
  call.body = chat_request_body(endpoint, messages, options);
  call.bearer = endpoint.api_key;
  call.timeout_s = options.timeout_s;
  call.cancel = stop;
  call.on_data = [&](const char* d, size_t n) {
    if (raw.size() < 4096) raw.append(d, std::min(n, 4096 - raw.size()));
    parser.feed(std::string_view(d, n));
    return error.empty();
  };
  HttpResult r;
  try {
    r = http_call(call);
  } catch (const RemoteError& e) {
    if (e.code() != RemoteErrorCode::Cancelled) throw;
    stats.finish_reason = "cancelled";
  }
  parser.finish();
  stats.latency_s = seconds();
  if (stats.finish_reason != "cancelled") {
    if (r.status == 401 || r.status == 403)
      throw RemoteError(RemoteErrorCode::Unauthorized, "the server refused the API key (HTTP " +
                                                           std::to_string(r.status) + ")", static_cast<int>(r.status));
    if (r.status < 200 || r.status >= 300)
      throw RemoteError(RemoteErrorCode::HttpStatus,
                        "HTTP " + std::to_string(r.status) + ": " + error_message_of(raw), static_cast<int>(r.status));
    if (!error.empty()) throw RemoteError(RemoteErrorCode::Stream, "the server reported an error mid-stream: " + error);
    if (stats.finish_reason.empty()) stats.finish_reason = "stop";
  }
  if (!stats.usage_from_server) stats.output_tokens = stats.chunks;
  if (stats.output_tokens > 1 && stats.latency_s > stats.ttft_s)
    stats.tokens_per_s = static_cast<double>(stats.output_tokens - 1) / (stats.latency_s - stats.ttft_s);
  return stats;
}

}  // namespace inferdesk::remote
