// A minimal libcurl client for core/remote: one easy handle per call (safe on any thread),
// response headers kept (lower-cased names), the body collected up to a limit or streamed to a
// callback. Transport failures become RemoteError(Unreachable / Cancelled); statuses are left
// to the caller. The API key is passed as a header and never appears in an error message.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace inferdesk::remote {

struct HttpResult {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names, last value wins
  std::string body;
};

struct HttpCall {
  std::string method = "GET";  // GET or POST
  std::string url;
  std::string body;            // POST body (JSON)
  std::string bearer;          // API key ("" : none)
  double timeout_s = 10;       // whole call (0: none)
  double connect_timeout_s = 5;
  size_t max_body = 4u << 20;  // collected body limit (a larger one is cut, with truncated set)
  const std::atomic<bool>* cancel = nullptr;
  // When set, body bytes go here instead of HttpResult::body; false hangs up.
  std::function<bool(const char* data, size_t size)> on_data;
};

// Throws RemoteError(Unreachable) with libcurl's reason and the host, or (Cancelled).
HttpResult http_call(const HttpCall& call);

}  // namespace inferdesk::remote
