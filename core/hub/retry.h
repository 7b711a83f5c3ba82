// When to try a failed request again: exponential backoff for dropped connections, 5xx and 429,
// with the server's Retry-After honoured (capped, so a hostile server cannot park us for days).
#pragma once

#include <chrono>
#include <optional>

namespace inferdesk::hub {

struct RetryPolicy {
  int max_attempts = 8;  // failed attempts in a row without progress before the file fails
  std::chrono::milliseconds initial_delay{1000};
  double multiplier = 2.0;
  std::chrono::milliseconds max_delay{60000};
  std::chrono::milliseconds max_retry_after{300000};
};

// The wait after the `failures`-th failure in a row (1-based): Retry-After when the server sent one
// (at most max_retry_after), else initial_delay * multiplier^(failures-1), at most max_delay.
std::chrono::milliseconds retry_delay(const RetryPolicy& policy, int failures, std::optional<double> retry_after_s);

}  // namespace inferdesk::hub
