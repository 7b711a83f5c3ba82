#include "core/server/http_session.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>

#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr char kServerName[] = "inferdesk";

Json parse_body(const std::string& body) {
  try {
    return parse_untrusted_ordered_json(body, "request body", 64);
  } catch (const Error& e) {
    bad_request(e.what());
  }
}

}  // namespace

Session::Session(tcp::socket socket, Server::Context& ctx) : ctx_(ctx), stream_(std::move(socket)) {
  ++ctx_.open_connections;
  beast::error_code ec;
  const auto ep = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  stream_.socket().set_option(tcp::no_delay(true), ec);  // SSE chunks go out as they are made
}

Session::~Session() {
  if (job_) job_->abandon();
  if (id_) ctx_.remove_session(id_);
  --ctx_.open_connections;
}

void Session::start() {
  id_ = ctx_.add_session(shared_from_this());
  asio::post(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void Session::shutdown_soon() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    self->shutting_down_ = true;
    self->keep_alive_ = false;
    if (self->phase_ == Phase::Reading) self->close();
  });
}

void Session::force_close() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->job_) self->job_->abandon();
    self->close();
  });
}

void Session::read_request() {
  if (closed_) return;
  phase_ = Phase::Reading;
  if (shutting_down_ || ctx_.draining) return close();
  parser_.emplace();
  parser_->header_limit(ctx_.options.max_header_bytes);
  parser_->body_limit(ctx_.options.max_body_bytes);
  // One deadline for the whole request: a client that trickles its headers (slowloris) or
  // idles on a keep-alive connection is closed when it passes.
  stream_.expires_after(ctx_.options.request_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void Session::on_header(beast::error_code ec) {
  if (ec) return on_read_error(ec);
  phase_ = Phase::Answering;
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue") && !parser_->is_done()) {
    // Clients such as curl wait for this before sending a larger body.
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(stream_, asio::buffer(kContinue), [self = shared_from_this()](beast::error_code e, size_t) {
      if (e) return self->close();
      self->read_body();
    });
    return;
  }
  read_body();
}

void Session::read_body() {
  if (parser_->is_done()) return on_body({});
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
}

void Session::on_body(beast::error_code ec) {
  if (ec) return on_read_error(ec);
  received_ = Clock::now();
  Request req = parser_->release();
  method_ = std::string(req.method_string());
  path_ = std::string(req.target().substr(0, req.target().find('?')));
  version_ = req.version();
  keep_alive_ = req.keep_alive() && !shutting_down_;
  log_ = RequestLogEntry{};
  try {
    dispatch(req);
  } catch (const ApiError& e) {
    reply(error_response(e));
  } catch (const std::exception& e) {
    reply(error_response(ApiError(500, std::string("internal error: ") + e.what())));
  }
}

void Session::on_read_error(beast::error_code ec) {
  // The peer left, went quiet past the deadline, or the server closed it: nothing to answer.
  if (closed_ || ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == asio::error::operation_aborted || ec == asio::error::connection_reset || ec == asio::error::eof ||
      ec == http::error::partial_message)
    return close();
  keep_alive_ = false;
  received_ = Clock::now();
  method_ = parser_ && parser_->is_header_done() ? std::string(parser_->get().method_string()) : "";
  path_.clear();
  phase_ = Phase::Answering;
  if (ec == http::error::body_limit)
    return reply(error_response(
        ApiError(413, "the request body is larger than " + std::to_string(ctx_.options.max_body_bytes) + " bytes")));
  if (ec == http::error::header_limit)
    return reply(error_response(ApiError(431, "the request headers are larger than " +
                                                  std::to_string(ctx_.options.max_header_bytes) + " bytes")));
  reply(error_response(ApiError(400, "malformed HTTP request: " + ec.message())));
}

void Session::dispatch(const Request& req) {
  if (ctx_.draining) throw ApiError(503, "the server is shutting down");
  // HEAD is GET without the body (health probes use it).
  head_ = req.method() == http::verb::head;
  const bool get = req.method() == http::verb::get || head_, post = req.method() == http::verb::post;
  const std::string& p = path_;
  const auto auth = req[http::field::authorization];
  if (p.rfind("/v1/", 0) == 0 && !authorized(ctx_, std::string_view(auth.data(), auth.size())))
    throw ApiError(401, "Unauthorized: give the server's API key as 'Authorization: Bearer <key>'");
  if (p == "/health" && get) return reply(health_response(ctx_));
  if (p == "/metrics" && get) return reply(metrics_response(ctx_));
  if (p == "/v1/models" && get) return reply(models_response(ctx_));
  if (p == "/v1/chat/completions" && post) return handle_generation(Endpoint::Chat, parse_body(req.body()));
  if (p == "/v1/completions" && post) return handle_generation(Endpoint::Completion, parse_body(req.body()));
  if (p == "/tokenize" && post) return reply(tokenize_response(ctx_, parse_body(req.body())));
  if (p == "/detokenize" && post) return reply(detokenize_response(ctx_, parse_body(req.body())));
  for (const char* known :
       {"/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"})
    if (p == known) throw ApiError(405, "method " + method_ + " is not allowed on " + p);
  throw ApiError(404, "Not Found: " + p);
}

void Session::handle_generation(Endpoint endpoint, const Json& body) {
  const ServedModel& m = ctx_.model;
  GenerationRequest r = endpoint == Endpoint::Chat ? parse_chat_request(body, m, ctx_.options.limits)
                                                   : parse_completion_request(body, m, ctx_.options.limits);
  log_.stream = r.stream;
  const int64_t k = r.num_choices();
  if (!ctx_.admission.try_acquire(k)) {
    SimpleResponse busy = error_response(ApiError(429, "the server is at capacity (" +
                                                           std::to_string(ctx_.admission.limit()) +
                                                           " requests admitted): retry later"));
    busy.headers.push_back({"Retry-After", std::to_string(ctx_.options.retry_after_s)});
    return reply(std::move(busy));
  }
  ResponseMeta meta{
      ctx_.new_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-"),
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
      m.name()};
  auto job = std::make_shared<GenerationJob>(ctx_.shared_from_this(), std::move(r), std::move(meta), received_);
  std::weak_ptr<Session> weak = weak_from_this();
  job->submit(stream_.get_executor(), [weak] {
    if (auto s = weak.lock()) s->on_job_progress();
  });  // throws ApiError (and gives the slots back) when refused
  job_ = std::move(job);
  streaming_ = job_->request().stream;
  if (streaming_) open_stream();
  watch_client();
}

void Session::reply(SimpleResponse r) {
  if (closed_) return;
  stop_watch();
  phase_ = Phase::Answering;
  status_ = r.status;
  res_ = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status),
                                                             version_ ? version_ : 11);
  res_->set(http::field::server, kServerName);
  res_->set(http::field::content_type, r.content_type);
  for (auto& [k, v] : r.headers) res_->set(k, v);
  res_->body() = std::move(r.body);
  res_->keep_alive(keep_alive_ && !shutting_down_);
  res_->prepare_payload();
  if (head_) res_->body().clear();  // Content-Length still says what a GET would get
  stream_.expires_after(ctx_.options.write_timeout);
  http::async_write(stream_, *res_, [self = shared_from_this(), res = res_](beast::error_code ec, size_t) {
    self->on_reply_written(ec);
  });
}

void Session::on_reply_written(beast::error_code ec) {
  const bool keep = !ec && res_ && res_->keep_alive();
  res_.reset();
  log_request();
  if (!keep) return close();
  next_request();
}

void Session::next_request() {
  job_.reset();
  streaming_ = stream_ended_ = terminal_sent_ = writing_ = false;
  header_out_.clear();
  out_.clear();
  status_ = 0;
  head_ = false;
  read_request();
}

}  // namespace inferdesk::server
