#include "apps/cli/reply_summary.h"

#include <algorithm>

#include "apps/cli/units.h"

namespace inferdesk::cli {

namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

std::string stop_reason_words(const ReplyFacts& f, const SamplingParams& p, const std::vector<int32_t>& eos) {
  switch (f.reason) {
    case FinishReason::Length:
      // The engine also ends a request whose context is full before max_tokens.
      return f.tokens < p.max_tokens ? "context length reached" : "max tokens reached";
    case FinishReason::Stop:
      // The engine checks end-of-sequence tokens first, as here.
      if (!p.ignore_eos && contains(eos, f.last_token)) return "end of turn";
      if (contains(p.stop_token_ids, f.last_token)) return "stop token " + std::to_string(f.last_token);
      return "end of turn";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error: " + f.error;
    case FinishReason::None: break;
  }
  return "not finished";
}

std::string reply_stats_line(const ReplyFacts& f, const SamplingParams& p, const std::vector<int32_t>& eos) {
  std::string line = "\u2014 " + std::to_string(f.tokens) + (f.tokens == 1 ? " token" : " tokens") + " in " +
                     format_duration(f.elapsed_s);
  // Decode rate over the tokens after the first, whose time is the prompt's (as bench reports it).
  const double decode_s = f.elapsed_s - f.time_to_first_token_s;
  if (f.tokens > 1 && decode_s > 0) line += ", " + format_rate(static_cast<double>(f.tokens - 1) / decode_s) + " tok/s";
  if (f.tokens > 0) line += ", first token " + format_duration(f.time_to_first_token_s);
  return line + ", stopped: " + stop_reason_words(f, p, eos);
}

}  // namespace inferdesk::cli
