// PCRE2 (UTF + UCP, JIT-compiled) wrapper for the Split / ByteLevel pre-tokenizer patterns of
// Hugging Face tokenizer files. HF compiles those patterns with Oniguruma; translate_pattern()
// rewrites the one construct whose meaning differs (\s, which PCRE2 also matches on U+180E) so
// that the compiled pattern behaves like Oniguruma's.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/error.h"

namespace inferdesk::tok {

class Regex {
 public:
  // Throws inferdesk::Error(Tokenizer) naming `where` when the pattern does not compile.
  Regex(std::string_view pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [start, end) byte ranges of all non-overlapping matches in `text` (valid UTF-8),
  // left to right; an empty match advances by one character. Thread-safe. A match that fails (PCRE2's
  // match limit on a catastrophic pattern) throws Error(Tokenizer) naming `where` and the pattern.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  Error match_error(int rc, const std::string& pcre_message) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Oniguruma-compatible rewrite of a pattern for PCRE2 (exposed for tests).
std::string translate_pattern(std::string_view pattern);

// Quotes a literal string for use inside a pattern.
std::string quote_literal(std::string_view literal);

}  // namespace inferdesk::tok
