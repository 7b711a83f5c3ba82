#include "tests/bench/support/mock_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace inferdesk::test {

std::string sse(const std::string& json) { return "data: " + json + "\n\n"; }
std::string sse_done() { return "data: [DONE]\n\n"; }

MockServer::MockServer(Script script) : script_(std::move(script)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket failed");
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 1024) != 0)
    throw std::runtime_error("bind/listen failed");
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

MockServer::~MockServer() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  {
    std::lock_guard lock(mutex_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes workers blocked in recv
  }
  for (auto& t : workers_) t.join();
  for (int fd : open_fds_) ::close(fd);  // closed only now: no worker's fd number is reused under it
}

std::vector<Served> MockServer::served() const {
  std::lock_guard lock(mutex_);
  std::vector<Served> out = served_;
  std::sort(out.begin(), out.end(), [](const Served& a, const Served& b) { return a.request.index < b.request.index; });
  return out;
}

void MockServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    open_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

namespace {

bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    default: return "Status";
  }
}

// Reads one request (headers + Content-Length body) from buf/fd; false when the peer closed.
bool read_request(int fd, std::string& buf, MockRequest& out) {
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    char tmp[65536];
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  const std::string head = buf.substr(0, end);
  size_t length = 0;
  for (size_t at = 0; at < head.size();) {
    const size_t nl = std::min(head.find("\r\n", at), head.size());
    std::string line = head.substr(at, nl - at);
    for (auto& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (line.rfind("content-length:", 0) == 0) length = std::stoul(line.substr(15));
    at = nl + 2;
  }
  const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
  out.method = head.substr(0, sp1);
  out.path = head.substr(sp1 + 1, sp2 - sp1 - 1);
  while (buf.size() < end + 4 + length) {
    char tmp[65536];
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  out.body = buf.substr(end + 4, length);
  buf.erase(0, end + 4 + length);
  return true;
}

}  // namespace

void MockServer::serve(int fd) {
  std::string buf;
  for (;;) {
    MockRequest req;
    if (!read_request(fd, buf, req)) break;
    Served rec;
    rec.received = Clock::now();
    {
      std::lock_guard lock(mutex_);
      req.index = next_index_++;
    }
    rec.request = req;
    const MockResponse resp = script_(req);
    std::string head = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason(resp.status) + "\r\n";
    for (const auto& h : resp.headers) head += h + "\r\n";
    bool open = true;
    if (resp.sse) {
      head += "Content-Type: text/event-stream\r\nConnection: close\r\n\r\n";
      open = send_all(fd, head);
      for (const auto& p : resp.pieces) {
        if (!open) break;
        if (p.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(p.delay_s));
        open = send_all(fd, p.bytes);
        rec.writes.push_back(Clock::now());
      }
    } else {
      std::string body;
      for (const auto& p : resp.pieces) body += p.bytes;
      head += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
      open = send_all(fd, head + body);
      rec.writes.push_back(Clock::now());
    }
    {
      std::lock_guard lock(mutex_);
      served_.push_back(std::move(rec));
    }
    if (resp.sse || !open) break;  // a stream ends with the connection
  }
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace inferdesk::test
