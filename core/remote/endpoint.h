// core/remote: OpenAI-compatible endpoints the desktop app talks to (vLLM, TGI, LMDeploy,
// TensorRT-LLM's trtllm-serve, MLC-LLM, SGLang, llama.cpp's server, Ollama, InferDesk's own).
// No Qt. An Endpoint names a server; probe_endpoint() asks it what it is (models, engine,
// version) and turns every failure into a RemoteError with a reason a user can act on.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace inferdesk::remote {

enum class ApiKind { Chat, Completions };  // /v1/chat/completions or /v1/completions

struct Endpoint {
  std::string name;
  std::string base_url;  // "http://host:port" (a trailing "/v1" or "/" is accepted and dropped)
  std::string api_key;   // sent as "Authorization: Bearer ..."; never logged or put in errors
  ApiKind kind = ApiKind::Chat;
  std::string model;  // "" : the first model the server lists
};

const char* to_string(ApiKind kind);                 // "chat" / "completions"
ApiKind parse_api_kind(std::string_view text);       // anything else: Chat
std::string normalized_base_url(std::string_view url);  // no trailing "/" or "/v1"

enum class RemoteErrorCode {
  InvalidUrl,    // not http(s)://host...
  Unreachable,   // DNS, refused, timed out
  Unauthorized,  // 401 / 403: the API key is missing or wrong
  HttpStatus,    // another non-2xx status
  NotJson,       // the body is not the JSON an OpenAI-compatible server sends
  Stream,        // a stream broke off or carried an error event
  Cancelled,
};

class RemoteError : public std::runtime_error {
 public:
  RemoteError(RemoteErrorCode code, const std::string& message, int http_status = 0)
      : std::runtime_error(message), code_(code), status_(http_status) {}
  RemoteErrorCode code() const { return code_; }
  int http_status() const { return status_; }

 private:
  RemoteErrorCode code_;
  int status_;
};

}  // namespace inferdesk::remote
