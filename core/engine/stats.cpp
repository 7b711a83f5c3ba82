#include "core/engine/stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace inferdesk {

namespace {
constexpr std::chrono::milliseconds kWindow{2000};
}

void StatsTracker::record(Clock::time_point t, int64_t prompt_tokens, int64_t generated_tokens) {
  window_.push_back({t, prompt_tokens, generated_tokens});
  trim(t);
}

void StatsTracker::trim(Clock::time_point now) {
  while (!window_.empty() && now - window_.front().t > kWindow) window_.pop_front();
}

double StatsTracker::rate(Clock::time_point now, bool prompt) const {
  if (window_.empty()) return 0;
  // Tokens of steps that ended inside the window, over the window's span (at least one step).
  const auto start = now - kWindow;
  int64_t tokens = 0;
  Clock::time_point first = now;
  for (const Sample& s : window_) {
    if (s.t < start) continue;
    tokens += prompt ? s.prompt : s.generated;
    if (s.t < first) first = s.t;
  }
  const double span = std::chrono::duration<double>(now - first).count();
  const double denom = std::max(span, 0.25);  // avoid spikes from a single fresh step
  return static_cast<double>(tokens) / denom;
}

int64_t process_rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : 0;
}

int64_t process_peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

}  // namespace inferdesk
