#include "core/tokenizer/utf8.h"

namespace inferdesk::tok {

char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const size_t n = utf8_seq_len(b0);
  if (n == 1 || i + n > s.size()) {
    ++i;
    return b0 < 0x80 ? b0 : kReplacementChar;
  }
  char32_t cp = b0 & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

namespace {

// Allowed range of the second byte of a sequence (Unicode Table 3-7); 0 when b is no lead byte.
bool second_byte_range(unsigned char lead, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) return true;
  if (lead == 0xE0) {
    lo = 0xA0;
    return true;
  }
  if (lead >= 0xE1 && lead <= 0xEC) return true;
  if (lead == 0xED) {
    hi = 0x9F;
    return true;
  }
  if (lead >= 0xEE && lead <= 0xEF) return true;
  if (lead == 0xF0) {
    lo = 0x90;
    return true;
  }
  if (lead >= 0xF1 && lead <= 0xF3) return true;
  if (lead == 0xF4) {
    hi = 0x8F;
    return true;
  }
  return false;
}

// Length of the valid sequence at s[i], or 0 if invalid; `bad` gets the length of the maximal
// invalid subpart (>= 1) in that case. `truncated` is set when the sequence is a valid prefix cut
// by the end of s.
size_t check_seq(std::string_view s, size_t i, size_t& bad, bool& truncated) {
  truncated = false;
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  unsigned char lo, hi;
  if (!second_byte_range(b0, lo, hi)) {
    bad = 1;
    return 0;
  }
  const size_t n = utf8_seq_len(b0);
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) {
      truncated = true;
      bad = k;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      bad = k;
      return 0;
    }
  }
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view s) { return valid_utf8_prefix(s) == s.size(); }

size_t valid_utf8_prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t bad = 0;
    bool truncated = false;
    const size_t n = check_seq(s, i, bad, truncated);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t ok = valid_utf8_prefix(s.substr(i));
    out.append(s.substr(i, ok));
    i += ok;
    if (i >= s.size()) break;
    size_t bad = 1;
    bool truncated = false;
    check_seq(s, i, bad, truncated);
    append_utf8(out, kReplacementChar);
    i += bad;
  }
  return out;
}

void Utf8LossyStream::feed(std::string_view bytes, std::string& out) {
  size_t i = 0;
  while (i < bytes.size()) {
    if (pending_len_ == 0) {
      // Fast path: copy the valid, complete part directly.
      const size_t ok = valid_utf8_prefix(bytes.substr(i));
      out.append(bytes.substr(i, ok));
      i += ok;
      if (i >= bytes.size()) break;
    }
    feed_byte(static_cast<unsigned char>(bytes[i]), out);
    ++i;
  }
}

void Utf8LossyStream::feed_byte(unsigned char b, std::string& out) {
  for (;;) {
    if (pending_len_ == 0) {
      unsigned char lo, hi;
      if (b < 0x80) {
        out.push_back(static_cast<char>(b));
      } else if (!second_byte_range(b, lo, hi)) {
        append_utf8(out, kReplacementChar);
      } else {
        pending_[0] = b;
        pending_len_ = 1;
        need_ = utf8_seq_len(b);
      }
      return;
    }
    unsigned char lo = 0x80, hi = 0xBF;
    if (pending_len_ == 1) second_byte_range(pending_[0], lo, hi);
    if (b < lo || b > hi) {
      // The pending bytes are a maximal invalid subpart; b starts over.
      append_utf8(out, kReplacementChar);
      pending_len_ = 0;
      continue;
    }
    pending_[pending_len_++] = b;
    if (pending_len_ == need_) {
      out.append(reinterpret_cast<const char*>(pending_), pending_len_);
      pending_len_ = 0;
    }
    return;
  }
}

void Utf8LossyStream::finish(std::string& out) {
  if (pending_len_ > 0) append_utf8(out, kReplacementChar);
  pending_len_ = 0;
}

bool is_unicode_whitespace(char32_t c) {
  if (c >= 0x09 && c <= 0x0D) return true;
  switch (c) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace inferdesk::tok
