// Internal to core/server: the state every connection of one Server shares. Not installed API.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/server/metrics.h"
#include "core/server/server.h"

namespace inferdesk::server {

class Session;
class GenerationJob;

// Bounded admission of engine requests: try_acquire(k) takes k slots or none.
class Admission {
 public:
  explicit Admission(int64_t limit) : limit_(limit) {}
  bool try_acquire(int64_t k) {
    int64_t cur = used_.load();
    do {
      if (cur + k > limit_) return false;
    } while (!used_.compare_exchange_weak(cur, cur + k));
    return true;
  }
  void release(int64_t k) { used_.fetch_sub(k); }
  int64_t in_use() const { return used_.load(); }
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
};

struct Server::Context : std::enable_shared_from_this<Server::Context> {
  Context(ServedModel m, ServerOptions o);

  ServedModel model;
  ServerOptions options;
  ServerMetrics metrics;
  Admission admission;
  std::atomic<int64_t> open_connections{0};
  std::atomic<int64_t> total_requests{0};
  std::atomic<bool> draining{false};
  uint16_t bound_port = 0;

  // Engine requests whose final event has not arrived: the io_context must outlive them.
  void engine_requests_started(int64_t k);
  void engine_requests_finished(int64_t k);
  bool wait_engine_requests(std::chrono::milliseconds timeout);

  // Live connections and generations, so that shutdown can reach them.
  uint64_t add_session(const std::shared_ptr<Session>& s);
  void remove_session(uint64_t id);
  std::vector<std::shared_ptr<Session>> sessions();
  uint64_t add_job(const std::shared_ptr<GenerationJob>& j);
  void remove_job(uint64_t id);
  std::vector<std::shared_ptr<GenerationJob>> jobs();

  std::string new_id(const char* prefix);  // "chatcmpl-<32 hex>"

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t engine_requests_ = 0;
  uint64_t next_session_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions_;
  uint64_t next_job_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<GenerationJob>> jobs_;
  std::mt19937_64 ids_;

 public:
  // Declared last, so destroyed first: handlers still queued in the io_context (connections)
  // may use everything above while they are destroyed.
  std::mutex lifecycle;  // start / shutdown
  bool started = false, stopped = false;
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer accept_retry;  // after a failed accept (e.g. out of file descriptors)
  std::vector<std::thread> threads;
};

}  // namespace inferdesk::server
