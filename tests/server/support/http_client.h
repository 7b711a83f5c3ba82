// A small HTTP client for the server tests, on libcurl (an HTTP implementation no one here wrote):
// whole requests, SSE streams split into events, and raw bytes over a plain socket for the
// malformed-HTTP tests.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace inferdesk::test {

using Json = nlohmann::ordered_json;

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string headers;                                // raw header block(s)
  std::string error;                                  // libcurl's, when the transfer failed
  Json json() const;                                  // parsed body (discarded value when it is not JSON)
  std::string header(const std::string& name) const;  // case-insensitive, "" when absent
};

// One connection, reused across calls (keep-alive), like a client library would.
class HttpClient {
 public:
  explicit HttpClient(std::string base_url);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse get(const std::string& path, const std::vector<std::string>& headers = {});
  HttpResponse post(const std::string& path, const std::string& body, const std::vector<std::string>& headers = {});
  HttpResponse post(const std::string& path, const Json& body) { return post(path, body.dump()); }
  long connects_last() const { return connects_; }  // new connections the last call made

  struct Stream {
    long status = 0;
    std::vector<Json> events;  // data: {...} payloads in order
    bool done = false;         // data: [DONE] arrived (and was the last event)
    std::string raw;
    std::string error;
  };
  Stream stream(const std::string& path, const Json& body);

 private:
  HttpResponse perform(const std::string& path, const std::string* body, const std::vector<std::string>& headers);
  std::string base_;
  void* curl_ = nullptr;
  long connects_ = 0;
};

// Plain TCP to 127.0.0.1:port for hand-made (and broken) requests.
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  bool send(const std::string& bytes);  // false when the peer is gone
  // Reads until the peer closes or `timeout` passes; returns what arrived.
  std::string read_all(std::chrono::milliseconds timeout);
  // Reads until `needle` arrived, the peer closed or `timeout` passed.
  std::string read_until(const std::string& needle, std::chrono::milliseconds timeout);
  bool closed_by_peer(std::chrono::milliseconds timeout);  // EOF (or reset) within timeout
  void close();
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::string got_;
};

// Splits an SSE byte stream into its data payloads.
std::vector<std::string> sse_data(const std::string& raw);

}  // namespace inferdesk::test
