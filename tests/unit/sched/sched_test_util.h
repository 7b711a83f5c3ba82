// Helpers of the scheduler tests: a fake model's tokens, row views, error codes.
#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/util/error.h"

namespace inferdesk::schedtest {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<TokenId>;
using SeqIds = std::vector<SeqId>;

inline Tokens iota_tokens(int n, TokenId first) {
  Tokens t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Token the fake model samples: depends on the sequence and position only.
inline TokenId fake_token(SeqId id, int32_t pos) { return static_cast<TokenId>(1000 + id * 100 + pos); }

// Runs the step: one sampled token per sampling row.
inline std::vector<FinishedSeq> run_step(Scheduler& s, const SchedulerOutput& out) {
  Tokens sampled;
  for (const ScheduledSeq& r : out.rows) {
    if (r.sample) sampled.push_back(fake_token(r.id, r.start + r.count));
  }
  return s.update(out, sampled);
}

struct RowView {
  SeqId id;
  int32_t start, count;
  bool sample;
  bool operator==(const RowView&) const = default;
};

inline std::vector<RowView> rows(const SchedulerOutput& out) {
  std::vector<RowView> v;
  for (const ScheduledSeq& r : out.rows) v.push_back({r.id, r.start, r.count, r.sample});
  return v;
}

inline void PrintTo(const RowView& r, std::ostream* os) {
  *os << "{id " << r.id << " start " << r.start << " count " << r.count << (r.sample ? " sample}" : "}");
}

inline Tokens output_of(const Sequence* s) { return Tokens(s->output().begin(), s->output().end()); }

// The code of the Error that f() throws (its message into *what), or nullopt if it throws none.
template <typename F>
std::optional<ErrorCode> error_code(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (what != nullptr) *what = e.what();
    return e.code();
  }
  return std::nullopt;
}

}  // namespace inferdesk::schedtest
