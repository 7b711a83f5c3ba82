#include "core/backend/cpu/thread_pool.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INFERDESK_CPU_RELAX() _mm_pause()
#else
#define INFERDESK_CPU_RELAX() ((void)0)
#endif

namespace inferdesk::cpu {

namespace {
// Iterations of busy-waiting before a thread sleeps: longer than the gap between two ops of a
// forward pass, short enough not to hog a shared core when idle.
constexpr int kSpinIterations = 4000;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads > kMaxThreads)
    throw Error(ErrorCode::InvalidArgument, "CPU threads: " + std::to_string(num_threads) + " is more than " +
                                                std::to_string(kMaxThreads) + " (this machine has " +
                                                std::to_string(std::thread::hardware_concurrency()) +
                                                " hardware threads; 0 uses them all)");
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  num_threads_ = std::min(kMaxThreads, std::max(1, num_threads));
  try {
    workers_.reserve(num_threads_ - 1);
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  } catch (const std::exception& e) {
    // A destructor does not run for a constructor that throws: the threads already started must
    // be stopped and joined here, or their std::thread destructors call std::terminate.
    const size_t started = workers_.size() + 1;
    stop_and_join();
    throw Error(ErrorCode::OutOfMemory, "cannot start CPU thread " + std::to_string(started) + " of " +
                                            std::to_string(num_threads_) + " (" + e.what() + "); use fewer threads");
  }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run_job(int index) {
  try {
    (*job_)(index, num_threads_);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      INFERDESK_CPU_RELAX();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    run_job(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (num_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  error_ = nullptr;
  pending_.store(num_threads_ - 1, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  run_job(0);
  int left = pending_.load(std::memory_order_acquire);
  for (int spin = 0; left != 0 && spin < kSpinIterations; ++spin) {
    INFERDESK_CPU_RELAX();
    left = pending_.load(std::memory_order_acquire);
  }
  while (left != 0) {
    pending_.wait(left, std::memory_order_acquire);
    left = pending_.load(std::memory_order_acquire);
  }
  job_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (n <= 0) return;
  std::atomic<int64_t> next{0};
  run([&](int thread, int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(i, thread);
    }
  });
}

void ThreadPool::split(int64_t n, int64_t align, int thread, int num_threads, int64_t* begin, int64_t* end) {
  if (align < 1) align = 1;
  int64_t units = (n + align - 1) / align;
  int64_t per = units / num_threads;
  int64_t extra = units % num_threads;
  int64_t u0 = thread * per + std::min<int64_t>(thread, extra);
  int64_t u1 = u0 + per + (thread < extra ? 1 : 0);
  *begin = std::min(n, u0 * align);
  *end = std::min(n, u1 * align);
}

}  // namespace inferdesk::cpu
