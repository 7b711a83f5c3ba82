#include "core/tokenizer/unicode_norm.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/tokenizer/utf8.h"

namespace inferdesk::tok {
namespace {

struct CccEntry {
  char32_t cp;
  uint8_t ccc;
};
struct DecompEntry {
  char32_t cp;
  uint16_t offset;
  uint8_t len;
};
struct ComposeEntry {
  char32_t first, second, composite;
};
struct RangeEntry {
  char32_t lo, hi;
};

#include "core/tokenizer/unicode_tables.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

template <size_t N>
bool in_ranges(const RangeEntry (&table)[N], char32_t c) {
  const auto* end = table + N;
  const auto* it = std::upper_bound(table, end, c, [](char32_t v, const RangeEntry& r) { return v < r.lo; });
  return it != table && c <= (it - 1)->hi;
}

uint8_t ccc_of(char32_t c) {
  if (c < 0x300) return 0;
  const auto* end = kCcc + std::size(kCcc);
  const auto* it = std::lower_bound(kCcc, end, c, [](const CccEntry& e, char32_t v) { return e.cp < v; });
  return (it != end && it->cp == c) ? it->ccc : 0;
}

void decompose_into(char32_t c, std::vector<char32_t>& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = kDecomp + std::size(kDecomp);
  const auto* it = std::lower_bound(kDecomp, end, c, [](const DecompEntry& e, char32_t v) { return e.cp < v; });
  if (it != end && it->cp == c) {
    out.insert(out.end(), kDecompData + it->offset, kDecompData + it->offset + it->len);
  } else {
    out.push_back(c);
  }
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = kCompose + std::size(kCompose);
  const auto* it = std::lower_bound(kCompose, end, std::pair{a, b},
                                    [](const ComposeEntry& e, std::pair<char32_t, char32_t> v) {
                                      return e.first < v.first || (e.first == v.first && e.second < v.second);
                                    });
  return (it != end && it->first == a && it->second == b) ? it->composite : 0;
}

// Canonical decomposition followed by the canonical ordering of combining marks.
std::vector<char32_t> decompose(std::string_view s) {
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) decompose_into(next_code_point(s, i), cps);
  // Stable sort of each run of non-starters by combining class (runs are short: insertion sort).
  for (size_t k = 1; k < cps.size(); ++k) {
    const uint8_t c = ccc_of(cps[k]);
    if (c == 0) continue;
    size_t j = k;
    while (j > 0) {
      const uint8_t p = ccc_of(cps[j - 1]);
      if (p == 0 || p <= c) break;
      std::swap(cps[j - 1], cps[j]);
      --j;
    }
  }
  return cps;
}

void compose(std::vector<char32_t>& cps) {
  if (cps.empty()) return;
  size_t starter = 0;
  bool have_starter = ccc_of(cps[0]) == 0;
  size_t out = 1;
  int last_ccc = have_starter ? 0 : 256;
  for (size_t k = 1; k < cps.size(); ++k) {
    const char32_t c = cps[k];
    const int cc = ccc_of(c);
    if (have_starter && (last_ccc < cc || (last_ccc == 0 && out == starter + 1))) {
      if (const char32_t comp = compose_pair(cps[starter], c)) {
        cps[starter] = comp;
        continue;
      }
    }
    if (cc == 0) {
      starter = out;
      have_starter = true;
    }
    last_ccc = cc;
    cps[out++] = c;
  }
  cps.resize(out);
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size() * 2);
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

}  // namespace

bool may_need_normalization(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0xCC) {  // every code point below U+0300
      ++i;
      continue;
    }
    if (in_ranges(kNfcCheck, next_code_point(s, i))) return true;
  }
  return false;
}

std::string to_nfd(std::string_view s) {
  if (!may_need_normalization(s)) return std::string(s);
  return encode(decompose(s));
}

std::string to_nfc(std::string_view s) {
  if (!may_need_normalization(s)) return std::string(s);
  auto cps = decompose(s);
  compose(cps);
  return encode(cps);
}

bool is_alnum_char(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
  return in_ranges(kAlnum, c);
}

}  // namespace inferdesk::tok
