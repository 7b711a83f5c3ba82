// StopMatcher: OpenAI `stop` strings matched on detokenized text as it streams in. Text that may
// still turn into a stop string (a suffix that is a prefix of one) is held back until the next
// piece settles it, so a stop string split across tokens is found and never reaches the client.
// Matching is on the bytes of UTF-8 text, one KMP automaton per stop string, so each byte costs
// O(number of stop strings) whatever their length. The first stop string to be completed wins
// (as when text arrives token by token); of two completed by the same byte, the longer one.
// Not thread-safe: one instance per generated sequence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferdesk::server {

class StopMatcher {
 public:
  // Empty strings are ignored. include_stop: the matched stop string is part of the output (vLLM's
  // include_stop_str_in_output), otherwise the output ends right before it.
  explicit StopMatcher(std::vector<std::string> stops = {}, bool include_stop = false);

  struct Piece {
    std::string text;                    // safe to emit now
    std::optional<std::string> matched;  // set once a stop string was found: the sequence ends
  };
  // Adds newly decoded text. After a match, further calls return nothing.
  Piece push(std::string_view text);
  // The sequence ended for another reason: the held-back text is output after all.
  std::string finish();

  bool stopped() const { return stopped_; }
  bool empty() const { return stops_.empty(); }
  size_t held_bytes() const { return held_.size(); }

 private:
  struct Automaton {
    std::string pattern;
    std::vector<uint32_t> failure;  // KMP: longest proper border of pattern[0..i]
    uint32_t state = 0;             // bytes of pattern matched by the text's current suffix
  };
  std::vector<Automaton> stops_;
  bool include_stop_ = false;
  bool stopped_ = false;
  std::string held_;  // text not emitted yet (a possible start of a stop string)
};

}  // namespace inferdesk::server
