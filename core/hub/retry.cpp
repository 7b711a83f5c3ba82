#include "core/hub/retry.h"

#include <algorithm>
#include <cmath>

namespace inferdesk::hub {

std::chrono::milliseconds retry_delay(const RetryPolicy& p, int failures, std::optional<double> retry_after_s) {
  using std::chrono::milliseconds;
  if (retry_after_s) {
    const double ms = std::min(*retry_after_s * 1000.0, static_cast<double>(p.max_retry_after.count()));
    return milliseconds(static_cast<int64_t>(std::max(0.0, ms)));
  }
  const double ms = static_cast<double>(p.initial_delay.count()) * std::pow(p.multiplier, std::max(0, failures - 1));
  return milliseconds(static_cast<int64_t>(std::min(ms, static_cast<double>(p.max_delay.count()))));
}

}  // namespace inferdesk::hub
