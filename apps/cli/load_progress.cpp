#include "apps/cli/load_progress.h"

#include <algorithm>
#include <cstdio>

namespace inferdesk::cli {

LoadProgress LoadProgressPrinter::callback() {
  return [this](int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (enabled_ && total > 0 && (!printed_ || now - last_ >= std::chrono::milliseconds(500))) {
      print(std::clamp(100.0 * static_cast<double>(done) / static_cast<double>(total), 0.0, 100.0));
      last_ = now;
    }
    return true;
  };
}

void LoadProgressPrinter::print(double percent) {
  std::fprintf(stderr, "\r%s: %5.1f%%", label_, percent);
  printed_ = true;
}

void LoadProgressPrinter::finish() {
  if (!enabled_ || finished_) return;
  print(100.0);
  std::fprintf(stderr, "\n");
  finished_ = true;
}

LoadProgressPrinter::~LoadProgressPrinter() {
  if (printed_ && !finished_) std::fprintf(stderr, "\n");
}

}  // namespace inferdesk::cli
