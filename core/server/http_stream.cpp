// Session's generation side: the SSE stream, the JSON reply of a finished generation, and the
// watch that notices a client leaving while its generation runs.
#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/write.hpp>

#include "core/server/http_session.h"

namespace inferdesk::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t kMaxPipelinedBytes = 64 << 10;  // read ahead while a generation runs

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace

void Session::open_stream() {
  status_ = 200;
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;
  header_out_ = std::string(version_ >= 11 ? "HTTP/1.1" : "HTTP/1.0") +
                " 200 OK\r\nServer: inferdesk\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                "Cache-Control: no-cache\r\n" +
                (chunked_ ? "Transfer-Encoding: chunked\r\n" : "") +
                (keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n") + "\r\n";
  if (job_->request().endpoint == Endpoint::Chat)
    for (int32_t i = 0; i < job_->num_choices(); ++i) out_ += sse_event(chat_role_chunk(job_->meta(), i));
  write_stream();
}

void Session::on_job_progress() {
  if (!job_ || closed_ || stream_ended_ || (!streaming_ && res_)) return;
  const Tokenizer* tok = ctx_.model.tokenizer ? &*ctx_.model.tokenizer : nullptr;
  const GenerationRequest& req = job_->request();
  std::vector<ChoiceDelta> deltas = job_->take_outbox();
  if (!streaming_) {
    if (job_->failure_status()) return reply(error_response(ApiError(job_->failure_status(), job_->failure_message())));
    if (!job_->done()) return;
    log_.prompt_tokens = job_->usage().prompt_tokens;
    log_.completion_tokens = job_->usage().completion_tokens;
    log_.finish_reason = job_->generation().output(0).finish_reason;
    return reply(json_response(200, full_response(job_->meta(), req, job_->generation(), tok)));
  }
  for (const ChoiceDelta& d : deltas) {
    std::optional<Usage> usage;
    if (req.continuous_usage) usage = job_->usage();
    out_ += "data: ";
    out_ += stream_chunk_text(job_->meta(), req, d, tok, usage, job_->first_chunk_of(d.index));
    out_ += "\n\n";
  }
  if (job_->failure_status()) {
    // Never a stream that just stops: the client gets the error as an event, then [DONE].
    out_ += sse_event(error_object(job_->failure_status(), job_->failure_message()));
    out_ += sse_done();
    stream_ended_ = true;
  } else if (job_->done()) {
    if (req.include_usage) out_ += sse_event(usage_chunk(job_->meta(), req, job_->usage()));
    out_ += sse_done();
    stream_ended_ = true;
    log_.prompt_tokens = job_->usage().prompt_tokens;
    log_.completion_tokens = job_->usage().completion_tokens;
    log_.finish_reason = job_->generation().output(0).finish_reason;
  }
  if (out_.size() > ctx_.options.max_pending_stream_bytes) return client_gone();  // not reading
  write_stream();
}

void Session::write_stream() {
  if (writing_ || closed_) return;
  writing_buf_.clear();
  writing_buf_.swap(header_out_);
  if (!out_.empty()) writing_buf_ += chunked_ ? chunk(out_) : out_;
  out_.clear();
  if (stream_ended_ && !terminal_sent_) {
    if (chunked_) writing_buf_ += "0\r\n\r\n";
    terminal_sent_ = true;
  }
  if (writing_buf_.empty()) return;
  writing_ = true;
  stream_.expires_after(ctx_.options.write_timeout);
  asio::async_write(stream_, asio::buffer(writing_buf_),
                    [self = shared_from_this()](beast::error_code ec, size_t) { self->on_stream_written(ec); });
}

void Session::on_stream_written(beast::error_code ec) {
  writing_ = false;
  if (closed_) return;
  if (ec) return client_gone();
  if (!out_.empty() || !header_out_.empty() || (stream_ended_ && !terminal_sent_)) return write_stream();
  if (!terminal_sent_) return;
  // The whole stream is out.
  stop_watch();
  log_request();
  if (!keep_alive_ || shutting_down_) return close();
  next_request();
}

void Session::watch_client() {
  stream_.expires_never();  // a generation may run long; each write sets its own deadline
  watching_ = true;
  ++watch_;
  arm_watch();
}

void Session::arm_watch() {
  stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), w = watch_](beast::error_code ec) {
    self->on_client_readable(ec, w);
  });
}

void Session::on_client_readable(beast::error_code ec, uint64_t watch) {
  if (watch != watch_ || !watching_ || closed_ || ec == asio::error::operation_aborted) return;
  if (ec) return client_gone();
  // The reactor may report readiness that is gone again (edge-triggered epoll): peek without
  // blocking to tell data, end of stream and nothing apart.
  char peek[1];
  const ssize_t n = ::recv(stream_.socket().native_handle(), peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return client_gone();  // orderly close by the peer
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return arm_watch();
    return client_gone();  // reset or another error
  }
  // Bytes of a pipelined next request: keep them for the parser, up to a bound.
  beast::error_code e;
  const size_t avail = stream_.socket().available(e);
  if (e || buffer_.size() + avail > kMaxPipelinedBytes) {
    watching_ = false;
    return;
  }
  const size_t got = stream_.socket().read_some(buffer_.prepare(avail), e);
  buffer_.commit(got);
  if (e) return client_gone();
  arm_watch();
}

void Session::stop_watch() {
  if (!watching_) return;
  watching_ = false;
  ++watch_;
  beast::error_code ec;
  stream_.socket().cancel(ec);  // only the watch is pending here
}

void Session::client_gone() {
  if (closed_) return;
  if (job_) job_->abandon();  // cancels its engine requests now
  job_.reset();
  if (status_ == 0) status_ = 499;  // nginx's "client closed request"
  log_.finish_reason = "abort";
  log_request();
  close();
}

void Session::log_request() {
  ctx_.metrics.count_http(status_);
  ++ctx_.total_requests;
  if (!ctx_.options.on_request || method_.empty()) return;
  log_.method = method_;
  log_.path = path_;
  log_.remote = remote_;
  log_.status = status_;
  log_.duration_s = std::chrono::duration<double>(Clock::now() - received_).count();
  try {
    ctx_.options.on_request(log_);
  } catch (...) {
    // A logger that throws loses its line, not the connection.
  }
}

void Session::close() {
  if (closed_) return;
  closed_ = true;
  watching_ = false;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace inferdesk::server
