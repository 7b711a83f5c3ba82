#include "core/server/server.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <future>

#include "core/server/generation_job.h"
#include "core/server/http_session.h"
#include "core/util/error.h"

namespace inferdesk::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

Server::Context::Context(ServedModel m, ServerOptions o)
    : model(std::move(m)),
      options(std::move(o)),
      admission(options.max_admitted),
      ids_(std::random_device{}()),
      acceptor(ioc),
      accept_retry(ioc) {}

void Server::Context::engine_requests_started(int64_t k) {
  std::lock_guard lock(mutex_);
  engine_requests_ += k;
}

void Server::Context::engine_requests_finished(int64_t k) {
  {
    std::lock_guard lock(mutex_);
    engine_requests_ -= k;
  }
  cv_.notify_all();
}

bool Server::Context::wait_engine_requests(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return engine_requests_ <= 0; });
}

uint64_t Server::Context::add_session(const std::shared_ptr<Session>& s) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_session_++;
  sessions_.emplace(id, s);
  return id;
}

void Server::Context::remove_session(uint64_t id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

std::vector<std::shared_ptr<Session>> Server::Context::sessions() {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Session>> out;
  for (auto& [id, w] : sessions_)
    if (auto s = w.lock()) out.push_back(std::move(s));
  return out;
}

uint64_t Server::Context::add_job(const std::shared_ptr<GenerationJob>& j) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_job_++;
  jobs_.emplace(id, j);
  return id;
}

void Server::Context::remove_job(uint64_t id) {
  std::lock_guard lock(mutex_);
  jobs_.erase(id);
}

std::vector<std::shared_ptr<GenerationJob>> Server::Context::jobs() {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<GenerationJob>> out;
  for (auto& [id, w] : jobs_)
    if (auto j = w.lock()) out.push_back(std::move(j));
  return out;
}

std::string Server::Context::new_id(const char* prefix) {
  uint64_t a, b;
  {
    std::lock_guard lock(mutex_);
    a = ids_();
    b = ids_();
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return prefix + std::string(buf);
}

namespace {

tcp::endpoint resolve(asio::io_context& ioc, const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  if (!ec) return {addr, port};
  tcp::resolver resolver(ioc);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) throw Error(ErrorCode::Io, "cannot resolve host '" + host + "': " + ec.message());
  return *results.begin();
}

void do_accept(const std::shared_ptr<Server::Context>& ctx);

// Answers a connection over the limit with a 503 and closes it.
void reject(std::shared_ptr<tcp::socket> s) {
  static const std::string kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
      "Content-Length: 104\r\n\r\n"
      "{\"error\":{\"message\":\"too many connections\",\"type\":\"ServiceUnavailableError\",\"param\":null,\"code\":503}}";
  asio::async_write(*s, asio::buffer(kBusy), [s](boost::system::error_code, size_t) {
    boost::system::error_code ec;
    s->shutdown(tcp::socket::shutdown_both, ec);
    s->close(ec);
  });
}

void on_accept(const std::shared_ptr<Server::Context>& ctx, boost::system::error_code ec, tcp::socket s) {
  if (!ctx->acceptor.is_open() || ctx->draining) return;
  if (ec) {
    // Out of descriptors and the like: try again shortly instead of spinning.
    ctx->accept_retry.expires_after(std::chrono::milliseconds(50));
    ctx->accept_retry.async_wait([ctx](boost::system::error_code e) {
      if (!e) do_accept(ctx);
    });
    return;
  }
  if (ctx->open_connections.load() >= ctx->options.max_connections)
    reject(std::make_shared<tcp::socket>(std::move(s)));
  else
    std::make_shared<Session>(std::move(s), *ctx)->start();
  do_accept(ctx);
}

void do_accept(const std::shared_ptr<Server::Context>& ctx) {
  ctx->acceptor.async_accept(asio::make_strand(ctx->ioc),
                             [ctx](boost::system::error_code ec, tcp::socket s) { on_accept(ctx, ec, std::move(s)); });
}

}  // namespace

Server::Server(ServedModel model, ServerOptions options)
    : ctx_(std::make_shared<Context>(std::move(model), std::move(options))) {
  const ServerOptions& o = ctx_->options;
  if (o.io_threads < 1 || o.io_threads > 256) throw Error(ErrorCode::InvalidArgument, "io_threads must be in [1, 256]");
  if (o.max_admitted < 1) throw Error(ErrorCode::InvalidArgument, "max_admitted must be >= 1");
  if (ctx_->model.names.empty()) throw Error(ErrorCode::InvalidArgument, "the served model has no name");
  const tcp::endpoint ep = resolve(ctx_->ioc, o.host, o.port);
  boost::system::error_code ec;
  auto& a = ctx_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw Error(ErrorCode::Io, "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + ec.message());
  ctx_->bound_port = a.local_endpoint().port();
}

Server::~Server() { shutdown(std::chrono::milliseconds(0)); }

void Server::start() {
  std::lock_guard lock(ctx_->lifecycle);
  if (ctx_->started || ctx_->stopped) return;
  ctx_->started = true;
  do_accept(ctx_);
  for (int i = 0; i < ctx_->options.io_threads; ++i) ctx_->threads.emplace_back([ctx = ctx_.get()] { ctx->ioc.run(); });
}

namespace {

// Polls `done` until it holds or `timeout` passes.
template <typename F>
bool wait_until(F done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace

void Server::shutdown(std::chrono::milliseconds grace) {
  std::lock_guard lock(ctx_->lifecycle);
  if (ctx_->stopped) return;
  ctx_->stopped = true;
  Context& c = *ctx_;
  c.draining = true;
  if (c.threads.empty()) {  // never started
    boost::system::error_code ec;
    c.acceptor.close(ec);
    return;
  }
  std::promise<void> closed;
  asio::post(c.acceptor.get_executor(), [&] {
    boost::system::error_code ec;
    c.acceptor.close(ec);
    c.accept_retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  for (auto& s : c.sessions()) s->shutdown_soon();
  // In-flight generations may finish within the grace period; then the rest are cancelled and
  // their clients told so (error event or 503), which needs the engine's final events.
  wait_until([&] { return c.admission.in_use() == 0; }, grace);
  for (auto& j : c.jobs()) j->cancel_all();
  c.wait_engine_requests(std::chrono::seconds(30));
  wait_until([&] { return c.open_connections.load() == 0; }, std::chrono::seconds(2));
  for (auto& s : c.sessions()) s->force_close();
  wait_until([&] { return c.open_connections.load() == 0; }, std::chrono::seconds(1));
  c.ioc.stop();
  for (auto& t : c.threads) t.join();
  c.threads.clear();
  // Run what is still queued (posted engine events, closing connections) so that nothing keeps
  // the context alive through a handler that will never run.
  c.ioc.restart();
  c.ioc.poll();
}

uint16_t Server::port() const { return ctx_->bound_port; }

std::string Server::url() const {
  const std::string& h = ctx_->options.host;
  const bool v6 = h.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + h + "]" : h) + ":" + std::to_string(port());
}

ServerStats Server::stats() const {
  return {ctx_->open_connections.load(), ctx_->admission.in_use(), ctx_->total_requests.load()};
}

const ServedModel& Server::model() const { return ctx_->model; }

}  // namespace inferdesk::server
