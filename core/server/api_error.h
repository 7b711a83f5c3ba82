// ApiError: what an HTTP request did wrong, as the status and OpenAI's error object
// {"error": {"message", "type", "param", "code"}} with vLLM's conventions (type names the HTTP
// status, e.g. "BadRequestError"; code is the status number). Thrown by request parsing and
// caught by the session, which answers with it; never escapes the server.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace inferdesk::server {

// Request and response JSON keeps keys in document order (chat templates may iterate them).
using Json = nlohmann::ordered_json;

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = {})
      : std::runtime_error(message), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string param_;
};

[[noreturn]] inline void bad_request(const std::string& message, std::string param = {}) {
  throw ApiError(400, message, std::move(param));
}

// "BadRequestError", "NotFoundError", ... for a status.
const char* error_type(int status);
// {"error": {"message": .., "type": .., "param": ..|null, "code": status}}
Json error_object(int status, const std::string& message, const std::string& param = {});
inline Json error_object(const ApiError& e) { return error_object(e.status(), e.what(), e.param()); }

}  // namespace inferdesk::server
