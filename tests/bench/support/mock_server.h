// A scripted OpenAI-style HTTP server on 127.0.0.1 for the load generator's tests: a plain socket
// thread per connection, TCP_NODELAY (so each scripted write leaves at once), responses built by
// a script from the request, and the steady-clock time of every write recorded, so a test can
// compare the client's measurements with what the server really did.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferdesk::test {

using Clock = std::chrono::steady_clock;

struct MockRequest {
  std::string method, path, body;
  size_t index = 0;  // the n-th request this server read
};

struct MockResponse {
  int status = 200;
  std::vector<std::string> headers;  // "Name: value"
  bool sse = true;                   // text/event-stream, written piece by piece, then closed
  struct Piece {
    double delay_s = 0;  // wait before writing it
    std::string bytes;
  };
  std::vector<Piece> pieces;  // sse: the stream; else the whole body (pieces joined)
};

struct Served {
  MockRequest request;
  Clock::time_point received;           // the request's last byte was read
  std::vector<Clock::time_point> writes;  // after each piece's write returned
};

class MockServer {
 public:
  using Script = std::function<MockResponse(const MockRequest&)>;
  explicit MockServer(Script script);
  ~MockServer();  // stops accepting, joins every thread
  MockServer(const MockServer&) = delete;
  MockServer& operator=(const MockServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Served> served() const;  // in the order the requests were read

 private:
  void accept_loop();
  void serve(int fd);
  Script script_;
  int listen_fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::vector<int> open_fds_;
  std::vector<Served> served_;
  size_t next_index_ = 0;
};

// SSE helpers: "data: <json>\n\n" and the closing "data: [DONE]\n\n".
std::string sse(const std::string& json);
std::string sse_done();

}  // namespace inferdesk::test
