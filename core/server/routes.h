// Internal to core/server: the endpoints that answer at once (no engine stream): /health,
// /v1/models, /metrics, /tokenize, /detokenize, errors; and the API key check.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/server/api_error.h"
#include "core/server/server_context.h"

namespace inferdesk::server {

struct SimpleResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

SimpleResponse json_response(int status, const Json& body);
SimpleResponse error_response(const ApiError& e);
SimpleResponse health_response(const Server::Context& ctx);
SimpleResponse models_response(const Server::Context& ctx);
SimpleResponse metrics_response(const Server::Context& ctx);
// Throw ApiError for bad bodies.
SimpleResponse tokenize_response(const Server::Context& ctx, const Json& body);
SimpleResponse detokenize_response(const Server::Context& ctx, const Json& body);

// "Bearer <key>" with the configured key (constant-time comparison); true when no key is set.
bool authorized(const Server::Context& ctx, std::string_view authorization);

}  // namespace inferdesk::server
