#include "gui/perf/rate_meter.h"

namespace inferdesk::gui {

void RateMeter::update(std::int64_t total) {
  const double t = clock_.now();
  if (!samples_.empty() && total < samples_.back().total) samples_.clear();
  samples_.push_back({t, total});
  // Keep one sample at or before the window's start: the baseline the growth is measured from.
  while (samples_.size() > 1 && samples_[1].t <= t - window_) samples_.pop_front();
}

double RateMeter::rate() const {
  if (samples_.size() < 2) return 0.0;
  const double now = clock_.now();
  const Sample& first = samples_.front();
  const Sample& last = samples_.back();
  const std::int64_t grown = last.total - first.total;
  // No growth in the window, or no news for a whole window: nothing runs.
  if (grown <= 0 || now - last.t >= window_) return 0.0;
  const double span = now - first.t;
  return span > 0 ? static_cast<double>(grown) / span : 0.0;
}

double replyDecodeRate(int tokens, double ttftSeconds, double elapsedSeconds) {
  const double decode = elapsedSeconds - ttftSeconds;
  return tokens > 1 && ttftSeconds >= 0 && decode > 0 ? (tokens - 1) / decode : 0.0;
}

}  // namespace inferdesk::gui
