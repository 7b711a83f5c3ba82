// Live rates for the performance page, computed on the GUI side from the engine's cumulative
// counters (EngineStats::total_generated_tokens, total_prompt_tokens) and a Clock, so a rate falls
// to zero once nothing runs: the engine publishes its own figures only after a step, and an idle
// engine would otherwise keep showing the last busy value. The clock is an interface so tests
// can move time by hand.
#pragma once

#include <cstdint>
#include <deque>

#include <QElapsedTimer>

namespace inferdesk::gui {

// Seconds since some fixed start; monotonic.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;
};

// The real clock (QElapsedTimer: monotonic).
class SteadyClock : public Clock {
 public:
  SteadyClock() { timer_.start(); }
  double now() const override { return static_cast<double>(timer_.nsecsElapsed()) / 1e9; }

 private:
  QElapsedTimer timer_;
};

// Tokens per second over the last `window` seconds of a cumulative counter.
class RateMeter {
 public:
  explicit RateMeter(const Clock& clock, double windowSeconds = 2.0) : clock_(clock), window_(windowSeconds) {}

  // The counter's value now. A value below the previous one (a new model) starts over.
  void update(std::int64_t total);
  // What the counter grew by in the window, per second of the window that has passed; 0 when it
  // did not grow in the window (or nothing was recorded yet).
  double rate() const;
  void reset() { samples_.clear(); }

 private:
  struct Sample {
    double t;
    std::int64_t total;
  };
  const Clock& clock_;
  double window_;
  std::deque<Sample> samples_;
};

// Decode rate of one reply from its own timestamps: the tokens after the first over the time from
// the first token to the last (0 when fewer than two tokens or no time passed).
double replyDecodeRate(int tokens, double ttftSeconds, double elapsedSeconds);

}  // namespace inferdesk::gui
