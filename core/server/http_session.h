// Internal to core/server: one HTTP/1.1 connection, served on its own strand. It reads one
// request at a time under the size limits and the request timeout, answers simple endpoints at
// once, and for generations drives a GenerationJob: a JSON response when it is done, or an SSE
// stream written as chunks while it runs. While a generation runs it watches the socket, so a
// client that goes away has its engine requests cancelled at once, not at the next write.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/server/generation_job.h"
#include "core/server/routes.h"
#include "core/server/server_context.h"

namespace inferdesk::server {

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `ctx` outlives every session (sessions live inside its io_context).
  Session(boost::asio::ip::tcp::socket socket, Server::Context& ctx);
  ~Session();
  void start();
  // Thread-safe (posted to the strand): close now when between requests, else after the
  // current response.
  void shutdown_soon();
  void force_close();  // thread-safe: close now

 private:
  using Clock = std::chrono::steady_clock;
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  enum class Phase { Reading, Answering };

  void read_request();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void on_read_error(boost::beast::error_code ec);
  void dispatch(const Request& req);
  void handle_generation(Endpoint endpoint, const Json& body);
  void reply(SimpleResponse r);
  void on_reply_written(boost::beast::error_code ec);
  void next_request();

  void on_job_progress();
  void open_stream();
  void write_stream();
  void on_stream_written(boost::beast::error_code ec);

  void watch_client();
  void arm_watch();
  void on_client_readable(boost::beast::error_code ec, uint64_t watch);
  void stop_watch();
  void client_gone();

  void log_request();
  void close();

  Server::Context& ctx_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  uint64_t id_ = 0;
  std::string remote_;
  Phase phase_ = Phase::Reading;
  bool closed_ = false;
  bool shutting_down_ = false;

  // The request being answered.
  Clock::time_point received_;
  std::string method_, path_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool head_ = false;
  int status_ = 0;
  std::shared_ptr<boost::beast::http::response<boost::beast::http::string_body>> res_;

  // A generation in progress.
  std::shared_ptr<GenerationJob> job_;
  bool streaming_ = false;
  bool chunked_ = true;        // HTTP/1.1: chunked SSE; HTTP/1.0: raw, then close
  bool stream_ended_ = false;  // [DONE] (or the error event) is queued
  bool terminal_sent_ = false;
  bool writing_ = false;
  std::string header_out_, out_, writing_buf_;
  uint64_t watch_ = 0;
  bool watching_ = false;
  RequestLogEntry log_;
};

}  // namespace inferdesk::server
