// UTF-8 helpers shared by the tokenizer stages: decoding one code point, appending one, lossy
// conversion (Rust's String::from_utf8_lossy rules, which Hugging Face tokenizers use), an
// incremental lossy decoder for streaming, and the character classes HF's added-token rules use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/utf8.h"

namespace inferdesk::tok {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);

// Number of bytes of the UTF-8 sequence starting with lead byte b (1 for invalid leads).
inline size_t utf8_seq_len(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xF0) return 4;
  if (b >= 0xE0) return 3;
  if (b >= 0xC0) return 2;
  return 1;
}

using inferdesk::append_utf8;

// True when s is valid UTF-8.
bool is_valid_utf8(std::string_view s);

// Length of the longest prefix of s that is valid UTF-8.
size_t valid_utf8_prefix(std::string_view s);

// Rust String::from_utf8_lossy: every maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// Streaming form of utf8_lossy: feed bytes in any chunks; complete characters (and U+FFFD for
// invalid bytes, decided as soon as they are known to be invalid) are appended to `out`; an
// incomplete sequence at the end is held until more bytes arrive or finish() is called.
// Feeding all bytes then finish() gives exactly utf8_lossy(all bytes).
class Utf8LossyStream {
 public:
  void feed(std::string_view bytes, std::string& out);
  void finish(std::string& out);
  bool empty() const { return pending_len_ == 0; }

 private:
  void feed_byte(unsigned char b, std::string& out);
  unsigned char pending_[4] = {0, 0, 0, 0};
  size_t pending_len_ = 0;
  size_t need_ = 0;  // total length of the sequence being collected
};

// Unicode White_Space (Rust char::is_whitespace), used by added-token lstrip/rstrip.
bool is_unicode_whitespace(char32_t c);

// (is_alnum_char in unicode_norm.h approximates Rust char::is_alphanumeric.)

}  // namespace inferdesk::tok
