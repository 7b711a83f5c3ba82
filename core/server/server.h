// Server: the OpenAI-compatible HTTP server over one Engine (Boost.Beast/Asio, no Qt, no CUDA).
// Endpoints with vLLM's shapes: POST /v1/chat/completions, /v1/completions (streaming as SSE),
// GET /v1/models, /health, /metrics (Prometheus, vLLM's names), POST /tokenize, /detokenize.
// Limits: body and header sizes (413 / 431), the time to receive a request (slow clients are
// closed), a bounded admission of engine requests (429 with Retry-After beyond it), an API key
// for /v1/* (401). A client that disconnects has its engine requests cancelled at once.
//
//   Server server(make_served_model(engine, dir, {}), options);   // binds (port 0: any)
//   server.start();                                               // io threads
//   ...
//   server.shutdown(std::chrono::seconds(5));  // stop accepting, finish or cancel, close
//
// Threads: `io_threads` threads run Asio; each connection is served on its own strand. Engine
// callbacks only post to those strands (core/engine/CONTRACT.md). All public methods are
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/server/generation_request.h"
#include "core/server/served_model.h"

namespace inferdesk::server {

// One answered HTTP request, for logs (the CLI's --log-requests, the desktop app's request log).
struct RequestLogEntry {
  std::string method, path, remote;
  int status = 0;
  bool stream = false;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string finish_reason;  // generation requests: of the first choice
  double duration_s = 0;
};
// Called on a server thread after each request; must be quick and thread-safe.
using RequestLogger = std::function<void(const RequestLogEntry&)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port; port() tells which
  std::string api_key;   // non-empty: /v1/* needs "Authorization: Bearer <key>"
  int io_threads = 2;
  size_t max_body_bytes = size_t{8} << 20;
  uint32_t max_header_bytes = 16 << 10;
  // To receive one whole request, headers and body (also how long an idle keep-alive
  // connection stays open).
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};     // one write to a client
  size_t max_pending_stream_bytes = size_t{8} << 20;  // a client that reads slower is dropped
  int max_connections = 4096;
  // Engine requests (choices) admitted at once, running and waiting; beyond it 429.
  int64_t max_admitted = 1280;
  int retry_after_s = 1;
  RequestLimits limits;
  RequestLogger on_request;
};

struct ServerStats {
  int64_t open_connections = 0;
  int64_t admitted = 0;        // engine requests in flight
  int64_t total_requests = 0;  // HTTP requests answered
};

class Server {
 public:
  // Binds and listens. Throws Error(Io) naming host:port when that fails, InvalidArgument for
  // bad options.
  Server(ServedModel model, ServerOptions options);
  ~Server();  // shutdown(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();  // starts the io threads (once)
  // Stops accepting, lets in-flight requests finish for up to `grace`, then cancels the rest
  // (their clients get an error event or a 503), closes every connection and joins the threads.
  // Returns once everything is closed. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

  uint16_t port() const;
  std::string url() const;  // http://host:port
  ServerStats stats() const;
  const ServedModel& model() const;

  struct Context;  // shared by the connections (server_context.h)

 private:
  std::shared_ptr<Context> ctx_;  // shared with engine callbacks, which may outlive the server
};

}  // namespace inferdesk::server
