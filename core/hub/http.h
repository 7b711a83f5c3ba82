// A small libcurl wrapper for the Hub client and the downloader: one easy handle per request (so a
// request is safe on any thread), headers of the final response only, bodies either collected up to
// a limit (API replies) or streamed to a sink (downloads). Network failures become HubErrors naming
// the host and libcurl's reason. Proxies come from libcurl's usual environment (http_proxy, ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferdesk::hub {

class HttpHeaders {
 public:
  void add(std::string name, std::string value);
  void clear() { entries_.clear(); }
  // The last value of `name` (case-insensitive), if any.
  std::optional<std::string> get(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;
  std::string body;           // fetch(): the body; stream(): empty
  std::string effective_url;  // after redirects that were followed
  bool aborted = false;       // stream(): the sink or keep_going() stopped the transfer
};

struct HttpOptions {
  std::string user_agent = "inferdesk";
  std::chrono::milliseconds connect_timeout{15000};
  // A transfer slower than low_speed_bytes per second for low_speed_time fails (Timeout), so a
  // stalled connection is retried instead of hanging forever.
  long low_speed_bytes = 1;
  std::chrono::seconds low_speed_time{60};
  // Whole request limit for API calls (fetch); downloads (stream) have none.
  std::chrono::seconds api_timeout{60};
};

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  bool follow_redirects = false;
  int64_t max_body = 16 << 20;  // fetch(): a larger body is BadResponse
};

// What stream() delivers. Each callback may throw; the exception is rethrown from stream().
struct BodySink {
  // The final response's status and headers, before its first body byte. false aborts.
  std::function<bool(long status, const HttpHeaders& headers)> on_headers;
  // A chunk of the body. false aborts.
  std::function<bool(const char* data, size_t size)> on_data;
  // Polled during the transfer (about every second and on each chunk); false aborts (pause, cancel).
  std::function<bool()> keep_going;
};

// Collects the body (at most request.max_body bytes). Throws HubError for network failures only;
// the caller judges the status.
HttpResponse http_fetch(const HttpOptions& options, const HttpRequest& request);
// Streams the body to the sink. Throws HubError for network failures (ConnectionDropped when the
// body ends early), and whatever a sink callback threw.
HttpResponse http_stream(const HttpOptions& options, const HttpRequest& request, BodySink& sink);

// Percent-encodes everything but unreserved characters (and '/' when keep_slash).
std::string url_encode(std::string_view text, bool keep_slash = false);
// "https://host:port/path" -> "host:port" ("" when not a URL).
std::string url_authority(std::string_view url);

}  // namespace inferdesk::hub
