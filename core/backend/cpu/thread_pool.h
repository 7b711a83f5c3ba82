// A small fork-join thread pool for the CPU backend's ops.
//
// run(fn) calls fn(thread_index, num_threads) once on every thread of the pool (the calling thread
// is index 0) and returns when all calls have finished. Workers spin briefly after a job and then
// sleep on a futex (std::atomic::wait), so a decode step's many small ops do not pay a wake-up each
// while an idle engine does not burn a core. Not reentrant: fn must not call run() again.
// An exception thrown by fn on any thread is rethrown by run() (the first one wins).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace inferdesk::cpu {

class ThreadPool {
 public:
  // The most threads a pool takes: above any machine's hardware threads today, low enough that a
  // typo (--threads 100000) is refused before thousands of 8 MiB stacks are mapped.
  static constexpr int kMaxThreads = 1024;

  // num_threads <= 0: one per hardware thread. Error(InvalidArgument) above kMaxThreads;
  // Error(OutOfMemory) when the system cannot start one of them (those started are joined first).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  void run(const std::function<void(int thread, int num_threads)>& fn);

  // Calls fn(i) for every i in [0, n), handing out indices dynamically (load balancing).
  void parallel_for(int64_t n, const std::function<void(int64_t i, int thread)>& fn);

  // Splits [0, n) into size() contiguous ranges whose bounds are multiples of `align` (except n).
  static void split(int64_t n, int64_t align, int thread, int num_threads, int64_t* begin, int64_t* end);

 private:
  void stop_and_join();
  void worker_loop(int index);
  void run_job(int index);

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace inferdesk::cpu
