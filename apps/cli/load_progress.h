// Weight-loading progress on stderr: "loading weights:  42.0%", rewritten in place at most twice a
// second. The figure never passes 100% (a loader may count bytes its total does not, e.g. a tensor
// read twice) and reads 100% once loading has succeeded (a folder may hold tensors no layer uses).
#pragma once

#include <chrono>

#include "core/model/weights.h"

namespace inferdesk::cli {

class LoadProgressPrinter {
 public:
  explicit LoadProgressPrinter(bool enabled, const char* label = "loading weights")
      : enabled_(enabled), label_(label) {}
  // Ends a started line when loading failed, so the error message starts on a line of its own.
  ~LoadProgressPrinter();
  LoadProgressPrinter(const LoadProgressPrinter&) = delete;
  LoadProgressPrinter& operator=(const LoadProgressPrinter&) = delete;
  // The callback to hand to the loader; it never cancels the load.
  LoadProgress callback();
  // Prints the final 100% and ends the line; call after a successful load.
  void finish();

 private:
  void print(double percent);
  bool enabled_;
  const char* label_;
  bool printed_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace inferdesk::cli
