// Progress of one bench run on stderr: "timed run 2/3: 96/256 tokens", rewritten twice a second
// from the engine's token counter while the run goes, then that line's final text once it ends.
// A bench on a CPU can take minutes per run; this tells a person it is still working.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "core/engine/engine.h"

namespace inferdesk::cli {

class RunProgress {
 public:
  // `expected_tokens`: what the run will generate (requests x output length). Prints nothing
  // when `enabled` is false.
  RunProgress(const Engine& engine, std::string label, int64_t expected_tokens, bool enabled);
  ~RunProgress();  // stops the ticker and ends the line
  RunProgress(const RunProgress&) = delete;
  RunProgress& operator=(const RunProgress&) = delete;

  // Replaces the counter with `summary` ("label: summary") as the line's final text.
  void done(const std::string& summary);

 private:
  void tick_until_stopped();
  void stop();
  const Engine& engine_;
  const std::string label_;
  const int64_t expected_;
  const int64_t base_;  // the engine's generated-token count when the run started
  const bool enabled_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool finished_ = false;  // done() wrote the line's end
  std::thread ticker_;
};

}  // namespace inferdesk::cli
