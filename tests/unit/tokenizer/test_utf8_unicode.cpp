// UTF-8 repair (Rust from_utf8_lossy rules), its streaming form, NFC/NFD and the regex rewrite.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/tokenizer/regex.h"
#include "core/tokenizer/unicode_norm.h"
#include "core/tokenizer/utf8.h"

using namespace inferdesk::tok;

namespace {
const std::string R = "\xEF\xBF\xBD";  // U+FFFD

TEST(Utf8, LossyReplacesEachMaximalInvalidSubpart) {
  // Expected values are Python's bytes.decode("utf-8", "replace"), which follows the same rule.
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), R);
  EXPECT_EQ(utf8_lossy("\xE2\x82\x41"), R + "A");
  EXPECT_EQ(utf8_lossy("\xC0\x80"), R + R);
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), R + R + R);
  EXPECT_EQ(utf8_lossy("a\xFF"
                       "b"),
            "a" + R + "b");
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), R + R + R + R);
  EXPECT_EQ(utf8_lossy("\xE0\x80\x80"), R + R + R);
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80\x80"), "\xF0\x9F\x98\x80" + R);
  EXPECT_EQ(utf8_lossy("plain \xC3\xA9"), "plain \xC3\xA9");
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xF0\x9F\x98"));
}

TEST(Utf8, StreamingEqualsBatchForRandomChunks) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {"a",    "\xC3\xA9", "\xE4\xBD\xA0", "\xF0\x9F\x98\x80", "\xFF",
                                             "\x80", "\xE2\x82", "\xF0\x9F",     "\xED\xA0\x80",     "\xC0"};
  for (int iter = 0; iter < 500; ++iter) {
    std::string bytes;
    const int n = static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) bytes += alphabet[rng() % alphabet.size()];
    Utf8LossyStream s;
    std::string out;
    size_t pos = 0;
    while (pos < bytes.size()) {
      const size_t len = 1 + rng() % 4;
      std::string chunk_out;
      s.feed(std::string_view(bytes).substr(pos, len), chunk_out);
      EXPECT_TRUE(is_valid_utf8(chunk_out));
      out += chunk_out;
      pos += len;
    }
    s.finish(out);
    EXPECT_EQ(out, utf8_lossy(bytes)) << "case " << iter;
  }
}

TEST(Unicode, NfcAndNfdMatchPython) {
  EXPECT_EQ(to_nfc("e\xCC\x81"), "\xC3\xA9");                                 // e + acute
  EXPECT_EQ(to_nfc("A\xCC\x8A\xCC\xA3"), "\xE1\xBA\xA0\xCC\x8A");             // reordered, composed
  EXPECT_EQ(to_nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // Hangul L V T
  EXPECT_EQ(to_nfc("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");                // canonical order
  EXPECT_EQ(to_nfc("\xE2\x84\xAB"), "\xC3\x85");                              // Angstrom sign
  EXPECT_EQ(to_nfc("a\xCC\x88\xCC\x81"), "\xC3\xA4\xCC\x81");
  EXPECT_EQ(to_nfc("\xCD\x84"), "\xCC\x88\xCC\x81");  // excluded from composition
  EXPECT_EQ(to_nfd("\xE2\x84\xAB"), "A\xCC\x8A");
  EXPECT_EQ(to_nfc("\xEF\xBD\x86ull"), "\xEF\xBD\x86ull");  // compatibility chars stay
  EXPECT_FALSE(may_need_normalization("plain ASCII and \xE4\xBD\xA0\xE5\xA5\xBD"));
  EXPECT_TRUE(may_need_normalization("e\xCC\x81"));
}

TEST(Regex, WhitespaceClassFollowsOniguruma) {
  // \s must match Unicode White_Space (NEL, NBSP, U+3000) but not U+180E, as Oniguruma does.
  Regex re(R"(\s+)", "test");
  std::vector<std::pair<size_t, size_t>> m;
  const std::string text = "a\xC2\x85"
                           "b\xC2\xA0"
                           "c\xE3\x80\x80"
                           "d\xE1\xA0\x8E"
                           "e";
  re.find_all(text, m);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(text.substr(m[0].first, m[0].second - m[0].first), "\xC2\x85");
  EXPECT_EQ(text.substr(m[2].first, m[2].second - m[2].first), "\xE3\x80\x80");
  Regex neg(R"([^\s\p{L}]+)", "test");
  m.clear();
  neg.find_all("x\xE1\xA0\x8E y", m);  // U+180E is not \s: it is matched by [^\s\p{L}]
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], (std::pair<size_t, size_t>{1, 4}));
}

TEST(Regex, EmptyMatchesAdvance) {
  Regex re("x*", "test");
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all("axxb", m);
  std::vector<std::pair<size_t, size_t>> nonempty;
  for (auto& r : m)
    if (r.second > r.first) nonempty.push_back(r);
  ASSERT_EQ(nonempty.size(), 1u);
  EXPECT_EQ(nonempty[0], (std::pair<size_t, size_t>{1, 3}));
}

}  // namespace
