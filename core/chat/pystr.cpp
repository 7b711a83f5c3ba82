#include "core/chat/pystr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/chat/work.h"

namespace inferdesk::chat::py {

namespace {
// Per-code-point work (decoding, case mapping) costs about four times a memcpy of the same bytes.
constexpr size_t kPerCodePointBytes = WorkMeter::kBytesPerStep / 4;
}  // namespace

// ---------------------------------------------------------------- UTF-8

char32_t next_cp(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  int extra = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    extra = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    extra = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    extra = 3;
    cp = b0 & 0x07;
  } else {
    ++pos;
    return 0xFFFD;
  }
  if (pos + extra >= s.size()) {
    ++pos;
    return 0xFFFD;
  }
  for (int i = 1; i <= extra; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++pos;
    return 0xFFFD;
  }
  pos += extra + 1;
  return cp;
}

std::u32string decode(std::string_view s) {
  WorkMeter::charge(s.size() / kPerCodePointBytes);
  std::u32string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) out.push_back(next_cp(s, pos));
  return out;
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t cp_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t before = pos;
    const char32_t c = next_cp(s, pos);
    if (c == 0xFFFD && !(pos - before == 3 && s.substr(before, 3) == "\xEF\xBF\xBD")) return false;
  }
  return true;
}

// ---------------------------------------------------------------- character classes

bool is_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_linebreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

bool is_printable(char32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c < 0x7F) return true;
  if (c <= 0xA0 || c == 0xAD) return false;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x2064) || (c >= 0x2066 && c <= 0x206F) || c == 0x3000) return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return false;
  if (c == 0xFFFE || c == 0xFFFF || c == 0x110BD || (c >= 0x1D173 && c <= 0x1D17A)) return false;
  if ((c >= 0xE0000 && c <= 0xE0FFF) || c >= 0xF0000) return false;
  return true;
}

bool is_digit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  if (c == 0xB2 || c == 0xB3 || c == 0xB9) return true;
  static constexpr char32_t kZeros[] = {0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6,  0xB66, 0xBE6,
                                        0xC66, 0xCE6, 0xD66, 0xE50, 0xED0, 0xF20, 0x1040, 0xFF10};
  for (char32_t z : kZeros) {
    if (c >= z && c <= z + 9) return true;
  }
  return (c >= 0x2080 && c <= 0x2089) || (c >= 0x2074 && c <= 0x2079) || c == 0x2070;
}

namespace {

// Code points >= 0x80 that are not letters, digits or numbers (approximation of Python's \w).
bool non_word_above_ascii(char32_t c) {
  if (c < 0xC0) {
    return !(c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA || (c >= 0xBC && c <= 0xBE));
  }
  if (c == 0xD7 || c == 0xF7) return true;
  if (c >= 0x2C2 && c <= 0x2C5) return true;
  if (c >= 0x2D2 && c <= 0x2DF) return true;
  if (c >= 0x2E5 && c <= 0x2EB) return true;
  if ((c >= 0x300 && c <= 0x36F) || (c >= 0x483 && c <= 0x489)) return true;
  if ((c >= 0x591 && c <= 0x5C7) || c == 0x5BE || c == 0x5F3 || c == 0x5F4) return true;
  if ((c >= 0x600 && c <= 0x61F) || (c >= 0x64B && c <= 0x65F) || (c >= 0x66A && c <= 0x66D)) return true;
  if (c == 0x670 || c == 0x6D4 || (c >= 0x6D6 && c <= 0x6ED && c != 0x6E5 && c != 0x6E6)) return true;
  if ((c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF)) return true;
  if (c >= 0x2000 && c <= 0x206F) return true;
  if (c >= 0x20A0 && c <= 0x214F) {
    // letterlike symbols that are letters
    return !(c == 0x2102 || c == 0x2107 || (c >= 0x210A && c <= 0x2113) || c == 0x2115 ||
             (c >= 0x2119 && c <= 0x211D) || c == 0x2124 || c == 0x2126 || c == 0x2128 ||
             (c >= 0x212A && c <= 0x212D) || (c >= 0x212F && c <= 0x2139) || (c >= 0x213C && c <= 0x213F) ||
             (c >= 0x2145 && c <= 0x2149) || c == 0x214E);
  }
  if ((c >= 0x2190 && c <= 0x245F) || (c >= 0x2500 && c <= 0x2BFF) || (c >= 0x2E00 && c <= 0x2E7F)) return true;
  if (c >= 0x3000 && c <= 0x303F) {
    return !((c >= 0x3005 && c <= 0x3007) || (c >= 0x3021 && c <= 0x3029) || (c >= 0x3031 && c <= 0x3035) ||
             (c >= 0x3038 && c <= 0x303C));
  }
  if ((c >= 0x3099 && c <= 0x309C) || c == 0x30A0 || c == 0x30FB) return true;
  if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFE00 && c <= 0xFE6F)) return true;
  if ((c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40)) return true;
  if ((c >= 0xFF5B && c <= 0xFF65) || (c >= 0xFFE0 && c <= 0xFFFF)) return true;
  if ((c >= 0x1F000 && c <= 0x1FAFF) || (c >= 0xE0000 && c <= 0xE0FFF) || c >= 0xF0000) return true;
  return is_space(c);
}

bool in_pairs(char32_t c, char32_t first, char32_t last) { return c >= first && c <= last; }

}  // namespace

bool is_word(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return !non_word_above_ascii(c);
}

char32_t to_upper_simple(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c < 0x100) {
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c == 0xB5) return 0x39C;
    return c;
  }
  if (c < 0x180) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((in_pairs(c, 0x100, 0x137) || in_pairs(c, 0x14A, 0x177)) && (c & 1)) return c - 1;
    if ((in_pairs(c, 0x139, 0x148) || in_pairs(c, 0x179, 0x17E)) && !(c & 1)) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((in_pairs(c, 0x460, 0x481) || in_pairs(c, 0x48A, 0x4BF) || in_pairs(c, 0x4D0, 0x52F)) && (c & 1)) return c - 1;
  if (in_pairs(c, 0x4C1, 0x4CE) && !(c & 1)) return c - 1;
  if (c == 0x4CF) return 0x4C0;
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if ((in_pairs(c, 0x1E00, 0x1E95) || in_pairs(c, 0x1EA0, 0x1EFF)) && (c & 1)) return c - 1;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

char32_t to_lower_simple(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c < 0x100) return (c >= 0xC0 && c <= 0xDE && c != 0xD7) ? c + 32 : c;
  if (c < 0x180) {
    if (c == 0x130) return 'i';
    if (c == 0x178) return 0xFF;
    if ((in_pairs(c, 0x100, 0x137) || in_pairs(c, 0x14A, 0x177)) && !(c & 1)) return c + 1;
    if ((in_pairs(c, 0x139, 0x148) || in_pairs(c, 0x179, 0x17E)) && (c & 1)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if ((in_pairs(c, 0x460, 0x481) || in_pairs(c, 0x48A, 0x4BF) || in_pairs(c, 0x4D0, 0x52F)) && !(c & 1)) return c + 1;
  if (in_pairs(c, 0x4C1, 0x4CE) && (c & 1)) return c + 1;
  if (c == 0x4C0) return 0x4CF;
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if ((in_pairs(c, 0x1E00, 0x1E95) || in_pairs(c, 0x1EA0, 0x1EFF)) && !(c & 1)) return c + 1;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

namespace {

// Full upper-case mappings that expand to several characters.
const char* upper_special(char32_t c) {
  switch (c) {
    case 0xDF: return "SS";
    case 0x149: return "\xCA\xBCN";
    case 0xFB00: return "FF";
    case 0xFB01: return "FI";
    case 0xFB02: return "FL";
    case 0xFB03: return "FFI";
    case 0xFB04: return "FFL";
    case 0xFB05: return "ST";
    case 0xFB06: return "ST";
    default: return nullptr;
  }
}

bool is_upper_cp(char32_t c) { return to_lower_simple(c) != c; }
bool is_lower_cp(char32_t c) { return to_upper_simple(c) != c || upper_special(c) != nullptr; }

void append_upper(std::string& out, char32_t c) {
  if (const char* s = upper_special(c)) {
    out += s;
  } else {
    append_utf8(out, to_upper_simple(c));
  }
}

// Title case (str.title / str.capitalize): like upper case except for the expanding characters.
void append_title(std::string& out, char32_t c) {
  switch (c) {
    case 0xDF: out += "Ss"; return;
    case 0xFB00: out += "Ff"; return;
    case 0xFB01: out += "Fi"; return;
    case 0xFB02: out += "Fl"; return;
    case 0xFB03: out += "Ffi"; return;
    case 0xFB04: out += "Ffl"; return;
    case 0xFB05:
    case 0xFB06: out += "St"; return;
    default: append_upper(out, c);
  }
}

void append_lower(std::string& out, const std::u32string& cps, size_t i) {
  const char32_t c = cps[i];
  if (c == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  if (c == 0x3A3) {  // Greek final sigma: after a cased letter and not before one
    bool before = false;
    for (size_t j = i; j-- > 0;) {
      if (is_cased(cps[j])) {
        before = true;
        break;
      }
      if (cps[j] != 0x2019 && cps[j] != '\'' && cps[j] != 0xAD) break;
    }
    bool after = false;
    for (size_t j = i + 1; j < cps.size(); ++j) {
      if (is_cased(cps[j])) {
        after = true;
        break;
      }
      if (cps[j] != 0x2019 && cps[j] != '\'' && cps[j] != 0xAD) break;
    }
    append_utf8(out, before && !after ? 0x3C2 : 0x3C3);
    return;
  }
  append_utf8(out, to_lower_simple(c));
}

}  // namespace

bool is_cased(char32_t c) { return is_upper_cp(c) || is_lower_cp(c); }

std::string upper(std::string_view s) {
  WorkMeter::charge(s.size() / kPerCodePointBytes);
  std::string out;
  out.reserve(s.size());
  if (is_ascii(s)) {
    for (char c : s) out.push_back((c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c);
    return out;
  }
  for (size_t pos = 0; pos < s.size();) append_upper(out, next_cp(s, pos));
  return out;
}

std::string lower(std::string_view s) {
  WorkMeter::charge(s.size() / kPerCodePointBytes);
  std::string out;
  out.reserve(s.size());
  if (is_ascii(s)) {
    for (char c : s) out.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
    return out;
  }
  const std::u32string cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) append_lower(out, cps, i);
  return out;
}

std::string capitalize(std::string_view s) {
  const std::u32string cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0) {
      append_title(out, cps[0]);
    } else {
      append_lower(out, cps, i);
    }
  }
  return out;
}

std::string title(std::string_view s) {
  const std::u32string cps = decode(s);
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    if (is_cased(c)) {
      if (prev_cased) {
        append_lower(out, cps, i);
      } else {
        append_title(out, c);
      }
      prev_cased = true;
    } else {
      append_utf8(out, c);
      prev_cased = false;
    }
  }
  return out;
}

std::string swapcase(std::string_view s) {
  const std::u32string cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (is_upper_cp(cps[i])) {
      append_lower(out, cps, i);
    } else if (is_lower_cp(cps[i])) {
      append_upper(out, cps[i]);
    } else {
      append_utf8(out, cps[i]);
    }
  }
  return out;
}

// ---------------------------------------------------------------- str methods

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  // Works on the UTF-8 bytes directly: only the code points at the two ends are decoded.
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e) {
      size_t next = b;
      if (!strippable(next_cp(s, next))) break;
      b = next;
    }
  }
  if (right) {
    while (e > b) {
      size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      size_t next = start;
      const char32_t c = next_cp(s, next);
      if (next != e || !strippable(c)) break;
      e = start;
    }
  }
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw std::invalid_argument("empty separator");
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = find_sub(s, *sep, start);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  const std::u32string cps = decode(s);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && is_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t e = cps.size();
      while (e > i && is_space(cps[e - 1])) --e;
      out.push_back(encode(std::u32string_view(cps).substr(i, e - i)));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !is_space(cps[j])) ++j;
    out.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw std::invalid_argument("empty separator");
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t hit = rfind_sub(s, *sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  const std::u32string cps = decode(s);
  size_t e = cps.size();
  while (true) {
    while (e > 0 && is_space(cps[e - 1])) --e;
    if (e == 0) break;
    if (static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t b = 0;
      while (b < e && is_space(cps[b])) ++b;
      out.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
      break;
    }
    size_t b = e;
    while (b > 0 && !is_space(cps[b - 1])) --b;
    out.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
    e = b;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends, size_t max_lines) {
  const std::u32string cps = decode(s);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!is_linebreak(cps[i])) continue;
    size_t end = i + 1;
    if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') end = i + 2;
    out.push_back(encode(std::u32string_view(cps).substr(start, (keepends ? end : i) - start)));
    if (out.size() > max_lines) return out;
    start = end;
    i = end - 1;
  }
  if (start < cps.size()) out.push_back(encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {  // inserts repl before every code point and at the end
    int64_t done = 0;
    size_t pos = 0;
    while (pos <= s.size()) {
      if (count >= 0 && done >= count) {
        out.append(s.substr(pos));
        break;
      }
      out.append(repl);
      ++done;
      if (pos == s.size()) break;
      const size_t before = pos;
      next_cp(s, pos);
      out.append(s.substr(before, pos - before));
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = find_sub(s, old, start);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(start, hit - start));
    out.append(repl);
    start = hit + old.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

namespace {

// Knuth-Morris-Pratt over characters read through hay(i) and sub(i) (forward or reversed): O(n + m).
template <typename Hay, typename Sub>
size_t kmp_search(size_t n, Hay hay, size_t m, Sub sub) {
  std::vector<size_t> fail(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && sub(i) != sub(k)) k = fail[k - 1];
    if (sub(i) == sub(k)) ++k;
    fail[i] = k;
  }
  for (size_t i = 0, k = 0; i < n; ++i) {
    while (k > 0 && hay(i) != sub(k)) k = fail[k - 1];
    if (hay(i) == sub(k)) ++k;
    if (k == m) return i + 1 - m;
  }
  return std::string_view::npos;
}

// Needles up to this long use std::string_view's search: at most this many compares per position.
constexpr size_t kShortNeedle = 32;

}  // namespace

size_t find_sub(std::string_view s, std::string_view sub, size_t from) {
  if (sub.size() <= kShortNeedle || from > s.size()) return s.find(sub, from);
  const std::string_view hay = s.substr(from);
  const size_t hit = kmp_search(
      hay.size(), [&](size_t i) { return hay[i]; }, sub.size(), [&](size_t i) { return sub[i]; });
  return hit == std::string_view::npos ? hit : hit + from;
}

size_t rfind_sub(std::string_view s, std::string_view sub, size_t from) {
  if (sub.size() <= kShortNeedle) return s.rfind(sub, from);
  if (sub.size() > s.size()) return std::string_view::npos;
  const std::string_view hay = s.substr(0, std::min(from, s.size() - sub.size()) + sub.size());
  const size_t n = hay.size(), m = sub.size();
  const size_t hit = kmp_search(
      n, [&](size_t i) { return hay[n - 1 - i]; }, m, [&](size_t i) { return sub[m - 1 - i]; });
  return hit == std::string_view::npos ? hit : n - hit - m;
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(cp_length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = find_sub(s, sub); pos != std::string_view::npos; pos = find_sub(s, sub, pos + sub.size())) ++n;
  return n;
}

int64_t find(std::string_view s, std::string_view sub) {
  const size_t hit = find_sub(s, sub);
  return hit == std::string_view::npos ? -1 : static_cast<int64_t>(cp_length(s.substr(0, hit)));
}

int64_t rfind(std::string_view s, std::string_view sub) {
  const size_t hit = rfind_sub(s, sub);
  return hit == std::string_view::npos ? -1 : static_cast<int64_t>(cp_length(s.substr(0, hit)));
}

namespace {
template <typename Pred>
bool all_cps(std::string_view s, Pred pred) {
  if (s.empty()) return false;
  for (size_t pos = 0; pos < s.size();) {
    if (!pred(next_cp(s, pos))) return false;
  }
  return true;
}

// Python's isupper()/islower(): at least one cased character and none of the other case.
bool case_test(std::string_view s, bool want_upper) {
  bool any = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = next_cp(s, pos);
    if (is_upper_cp(c)) {
      if (!want_upper) return false;
      any = true;
    } else if (is_lower_cp(c)) {
      if (want_upper) return false;
      any = true;
    }
  }
  return any;
}
}  // namespace

bool is_alpha_str(std::string_view s) {
  return all_cps(s, [](char32_t c) { return is_word(c) && !is_digit(c) && c != '_' && !(c >= 0xB2 && c <= 0xBE); });
}
bool is_digit_str(std::string_view s) { return all_cps(s, is_digit); }
bool is_alnum_str(std::string_view s) {
  return all_cps(s, [](char32_t c) { return is_word(c) && c != '_'; });
}
bool is_space_str(std::string_view s) { return all_cps(s, is_space); }
bool is_upper_str(std::string_view s) { return case_test(s, true); }
bool is_lower_str(std::string_view s) { return case_test(s, false); }

std::string pad(std::string_view s, int64_t width, char32_t fill, char align) {
  const auto len = static_cast<int64_t>(cp_length(s));
  if (width <= len) return std::string(s);
  const int64_t total = width - len;
  int64_t left = 0;
  if (align == '>') {
    left = total;
  } else if (align == '^') {
    left = total / 2;
  } else if (align == 'c') {  // str.center() rounds the other way for odd widths
    left = total / 2 + (total & width & 1);
  }
  std::string out;
  for (int64_t i = 0; i < left; ++i) append_utf8(out, fill);
  out.append(s);
  for (int64_t i = 0; i < total - left; ++i) append_utf8(out, fill);
  return out;
}

// ---------------------------------------------------------------- indexing

std::optional<size_t> norm_index(int64_t index, size_t length) {
  const auto n = static_cast<int64_t>(length);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<size_t>(index);
}

std::vector<size_t> slice_indices(size_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step) {
  const auto n = static_cast<int64_t>(length);
  const int64_t lower = step > 0 ? 0 : -1;
  const int64_t upper = step > 0 ? n : n - 1;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t b = clamp(start, step > 0 ? lower : upper);
  const int64_t e = clamp(stop, step > 0 ? upper : lower);
  std::vector<size_t> out;
  if (step > 0) {
    for (int64_t i = b; i < e; i += step) out.push_back(static_cast<size_t>(i));
  } else {
    for (int64_t i = b; i > e; i += step) out.push_back(static_cast<size_t>(i));
  }
  return out;
}

// ---------------------------------------------------------------- repr

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  const int exp10 = std::stoi(sci.substr(epos + 1));
  std::string sign;
  if (mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  const int decpt = exp10 + 1;  // value = 0.digits * 10^decpt
  std::string out = sign;
  if (decpt <= -4 || decpt > 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += ebuf;
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits + std::string(decpt - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

std::string str_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = next_cp(s, pos);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (!is_printable(c)) {
      char buf[16];
      if (c < 0x100) {
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      } else if (c < 0x10000) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      append_utf8(out, c);
    }
  }
  out.push_back(quote);
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace inferdesk::chat::py
