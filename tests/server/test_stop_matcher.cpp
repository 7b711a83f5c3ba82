// StopMatcher: stop strings found across piece boundaries, never emitted, held text released when
// the sequence ends otherwise; checked against a brute-force reference on random texts.
#include <gtest/gtest.h>

#include <random>

#include "core/server/stop_matcher.h"

namespace inferdesk::server {
namespace {

std::string feed(StopMatcher& m, const std::vector<std::string>& pieces, std::optional<std::string>* matched) {
  std::string out;
  for (const auto& p : pieces) {
    auto r = m.push(p);
    out += r.text;
    if (r.matched) {
      *matched = r.matched;
      return out;
    }
  }
  return out + m.finish();
}

TEST(StopMatcher, WithoutStopStringsEverythingPassesAtOnce) {
  StopMatcher m;
  EXPECT_EQ(m.push("abc").text, "abc");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcher, FindsAStopStringSplitOverThreePiecesAndEmitsNothingOfIt) {
  StopMatcher m({"lo w"});
  std::string out;
  auto a = m.push("hel");
  EXPECT_EQ(a.text, "he");  // "l" may start the stop string
  out += a.text;
  auto b = m.push("lo");
  EXPECT_FALSE(b.matched);
  out += b.text;
  auto c = m.push(" world");
  ASSERT_TRUE(c.matched);
  EXPECT_EQ(*c.matched, "lo w");
  out += c.text;
  EXPECT_EQ(out, "hel");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more").text, "");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcher, HeldTextIsReleasedWhenTheSequenceEndsOtherwise) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("abcST").text, "abc");
  EXPECT_EQ(m.held_bytes(), 2u);
  EXPECT_EQ(m.push("O").text, "");
  EXPECT_EQ(m.finish(), "STO");
}

TEST(StopMatcher, IncludeStopKeepsTheStopString) {
  StopMatcher m({"\n\n"}, true);
  std::optional<std::string> matched;
  EXPECT_EQ(feed(m, {"a\n", "\nb"}, &matched), "a\n\n");
  ASSERT_TRUE(matched);
}

TEST(StopMatcher, TheFirstStopStringCompletedWinsAndOfTwoEndingTogetherTheLonger) {
  std::optional<std::string> matched;
  StopMatcher first({"abcd", "bc"});
  EXPECT_EQ(feed(first, {"xab", "cd"}, &matched), "xa");
  EXPECT_EQ(*matched, "bc");
  StopMatcher longer({"c", "abc"});
  matched.reset();
  EXPECT_EQ(feed(longer, {"zab", "c"}, &matched), "z");
  EXPECT_EQ(*matched, "abc");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher m({""});
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.push("abc").text, "abc");
}

// Reference: scan the whole text for the first end position where some stop string ends.
std::string reference(const std::string& text, const std::vector<std::string>& stops, bool include,
                      std::optional<std::string>* matched) {
  for (size_t end = 1; end <= text.size(); ++end) {
    const std::string* best = nullptr;
    for (const auto& s : stops)
      if (!s.empty() && s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0 &&
          (!best || s.size() > best->size()))
        best = &s;
    if (best) {
      *matched = *best;
      return text.substr(0, include ? end : end - best->size());
    }
  }
  return text;
}

TEST(StopMatcher, AgreesWithABruteForceReferenceOnRandomTextsAndSplits) {
  std::mt19937 rng(12345);
  auto word = [&](size_t max_len) {
    std::string s(1 + rng() % max_len, 'a');
    for (char& c : s) c = static_cast<char>('a' + rng() % 3);
    return s;
  };
  for (int iter = 0; iter < 3000; ++iter) {
    const std::string text = word(40);
    std::vector<std::string> stops;
    for (size_t k = 1 + rng() % 3; k > 0; --k) stops.push_back(word(5));
    const bool include = rng() % 2;
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min(text.size() - at, size_t{1} + rng() % 4);
      pieces.push_back(text.substr(at, n));
      at += n;
    }
    std::optional<std::string> want_match, got_match;
    const std::string want = reference(text, stops, include, &want_match);
    StopMatcher m(stops, include);
    const std::string got = feed(m, pieces, &got_match);
    ASSERT_EQ(got, want) << "text " << text << " iter " << iter;
    ASSERT_EQ(got_match, want_match) << "text " << text;
  }
}

}  // namespace
}  // namespace inferdesk::server
