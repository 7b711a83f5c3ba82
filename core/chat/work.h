// The work budget of one render (internal): every evaluated node, macro call and loop iteration costs
// a step, and so does every kBytesPerStep bytes or item of data a step copies, builds or compares, so
// the budget bounds the render's time (and what it can allocate) whatever the template does.
//
// The meter of the render running on this thread is reached through a thread_local pointer, so value
// helpers without an Interp (==, iterate, json dumps) can charge it; no meter: nothing is counted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/chat/value.h"

namespace inferdesk::chat {

class WorkMeter {
 public:
  static constexpr size_t kBytesPerStep = 64;  // more than a node costs in memcpy or compare time
  static constexpr uint64_t kCallSteps = 8;    // a macro call also builds a scope and binds arguments

  // Installs this meter for the current thread until it is destroyed. A list may hold up to
  // max_list_bytes of Values (the output bound: a Value is tens of bytes, so items count by size).
  WorkMeter(uint64_t limit, size_t max_list_bytes)
      : limit_(limit), max_list_bytes_(max_list_bytes), previous_(current_) {
    current_ = this;
  }
  ~WorkMeter() { current_ = previous_; }
  WorkMeter(const WorkMeter&) = delete;
  WorkMeter& operator=(const WorkMeter&) = delete;

  uint64_t used() const { return used_; }

  // Sticky: once over the limit every later charge throws again, so a caught error cannot let the
  // render go on.
  static void charge(uint64_t steps) {
    WorkMeter* m = current_;
    if (m && (m->used_ += steps) > m->limit_) m->exceeded();
  }
  static void charge_bytes(size_t bytes) { charge(bytes / kBytesPerStep); }
  // Copying a list copies its items and, by value, the strings among them.
  static void charge_items(const Value::List& items);
  // Throws a Limit error when a list of n items would exceed the size bound (before building it).
  static void check_list_size(uint64_t n);

 private:
  [[noreturn]] void exceeded() const;

  uint64_t used_ = 0;
  uint64_t limit_;
  size_t max_list_bytes_;
  WorkMeter* previous_;
  static inline thread_local WorkMeter* current_ = nullptr;
};

}  // namespace inferdesk::chat
