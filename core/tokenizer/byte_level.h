// GPT-2's reversible byte <-> printable-character mapping used by ByteLevel pre-tokenizers and
// decoders: bytes that are printable Latin-1 map to themselves, the others to U+0100 + n.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace inferdesk::tok {

struct ByteLevelTable {
  std::array<char32_t, 256> byte_to_char{};
  // UTF-8 encoding of byte_to_char[b] (1 or 2 bytes), for fast string building.
  std::array<std::array<char, 2>, 256> utf8{};
  std::array<uint8_t, 256> utf8_len{};
  std::array<int16_t, 256 + 68> rev{};  // mapped character -> byte, -1 when unmapped

  constexpr ByteLevelTable() {
    for (auto& r : rev) r = -1;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      byte_to_char[b] = c;
      rev[c] = static_cast<int16_t>(b);
      if (c < 0x80) {
        utf8[b] = {static_cast<char>(c), 0};
        utf8_len[b] = 1;
      } else {
        utf8[b] = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
        utf8_len[b] = 2;
      }
    }
  }

  // Reverse lookup: the byte a mapped character stands for, or -1.
  constexpr int char_to_byte(char32_t c) const { return c < rev.size() ? rev[c] : -1; }
};

inline constexpr ByteLevelTable kByteLevel{};

// Maps raw bytes to their ByteLevel characters (UTF-8).
inline void byte_level_encode(std::string_view raw, std::string& out) {
  out.reserve(out.size() + raw.size() * 2);
  for (unsigned char b : raw) out.append(kByteLevel.utf8[b].data(), kByteLevel.utf8_len[b]);
}

}  // namespace inferdesk::tok
