// A scripted HTTP/1.1 server on 127.0.0.1 for core/remote's tests (and the dashboard's GUI tests):
// each path answers a fixed status, headers and body, or a list of SSE chunks sent one by one
// with a pause between them. One thread, one connection at a time, "Connection: close".
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace inferdesk::test {

struct MockRoute {
  int status = 200;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  std::vector<std::string> sse;      // when set: streamed as "data: <chunk>\n\n" each
  int chunk_pause_ms = 0;
};

class MockHttpServer {
 public:
  MockHttpServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("mock server: cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~MockHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  void route(const std::string& path, MockRoute r) {
    std::lock_guard lock(mu_);
    routes_[path] = std::move(r);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Bodies of the requests received, by path (the last one).
  std::string last_body(const std::string& path) {
    std::lock_guard lock(mu_);
    return bodies_[path];
  }
  std::string last_authorization() {
    std::lock_guard lock(mu_);
    return authorization_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c >= 0) {
        handle(c);
        ::close(c);
      }
    }
  }
  static bool send_all(int c, const std::string& s) {
    return ::send(c, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  void handle(int c) {
    std::string req;
    char buf[4096];
    size_t header_end = std::string::npos;
    size_t need = 0;
    while (true) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) return;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      req.append(buf, static_cast<size_t>(n));
      if (header_end == std::string::npos && (header_end = req.find("\r\n\r\n")) != std::string::npos) {
        const auto cl = req.find("Content-Length: ");
        need = header_end + 4 + (cl != std::string::npos && cl < header_end ? std::stoul(req.substr(cl + 16)) : 0);
      }
      if (header_end != std::string::npos && req.size() >= need) break;
    }
    const auto sp1 = req.find(' '), sp2 = req.find(' ', sp1 + 1);
    const std::string path = req.substr(sp1 + 1, sp2 - sp1 - 1);
    MockRoute r;
    {
      std::lock_guard lock(mu_);
      bodies_[path] = req.substr(header_end + 4);
      const auto auth = req.find("Authorization: ");
      authorization_ = auth == std::string::npos ? "" : req.substr(auth + 15, req.find("\r\n", auth) - auth - 15);
      const auto it = routes_.find(path);
      if (it == routes_.end()) r = MockRoute{404, {}, R"({"detail":"Not Found"})"};
      else r = it->second;
    }
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " X\r\nConnection: close\r\n";
    for (const auto& h : r.headers) head += h + "\r\n";
    if (r.sse.empty()) {
      send_all(c, head + "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n" + r.body);
      return;
    }
    if (!send_all(c, head + "Content-Type: text/event-stream\r\n\r\n")) return;
    for (const auto& chunk : r.sse) {
      if (stop_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(r.chunk_pause_ms));
      if (!send_all(c, "data: " + chunk + "\n\n")) return;  // the client hung up
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, MockRoute> routes_;
  std::map<std::string, std::string> bodies_;
  std::string authorization_;
  std::thread thread_;
};

}  // namespace inferdesk::test
