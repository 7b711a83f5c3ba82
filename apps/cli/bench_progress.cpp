#include "apps/cli/bench_progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace inferdesk::cli {

RunProgress::RunProgress(const Engine& engine, std::string label, int64_t expected_tokens, bool enabled)
    : engine_(engine),
      label_(std::move(label)),
      expected_(expected_tokens),
      base_(engine.stats().total_generated_tokens),
      enabled_(enabled) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r%s: 0/%lld tokens", label_.c_str(), static_cast<long long>(expected_));
  ticker_ = std::thread([this] { tick_until_stopped(); });
}

void RunProgress::tick_until_stopped() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping_; })) {
    const int64_t out = engine_.stats().total_generated_tokens - base_;
    std::fprintf(stderr, "\r%s: %lld/%lld tokens", label_.c_str(),
                 static_cast<long long>(std::clamp<int64_t>(out, 0, expected_)), static_cast<long long>(expected_));
  }
}

void RunProgress::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void RunProgress::done(const std::string& summary) {
  if (!enabled_) return;
  stop();
  // Padding overwrites what is left of a longer counter line.
  std::fprintf(stderr, "\r%s: %-24s\n", label_.c_str(), summary.c_str());
  finished_ = true;
}

RunProgress::~RunProgress() {
  stop();
  if (enabled_ && !finished_) std::fprintf(stderr, "\n");
}

}  // namespace inferdesk::cli
