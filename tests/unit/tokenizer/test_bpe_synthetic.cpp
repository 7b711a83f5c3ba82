// BPE and pipeline semantics on a small synthetic vocabulary: merge order, byte fallback, unknown
// characters, ignore_merges, added-token rules, post-processing and decoding.
#include <gtest/gtest.h>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "tests/unit/tokenizer/synthetic.h"

using inferdesk::EncodeOptions;
using inferdesk::IncrementalDecoder;
using inferdesk::Tokenizer;
using nlohmann::json;
using tokenizer_test::synthetic_tokenizer;

namespace {

Tokenizer build(const json& j) { return Tokenizer::from_json(j.dump(), "", "", "synthetic/tokenizer.json"); }

int32_t id(const Tokenizer& t, const std::string& s) { return t.token_to_id(s).value_or(-1); }

const std::string kMark = "\xE2\x96\x81";

TEST(SyntheticBpe, MergesApplyByRankThenLeftmost) {
  const Tokenizer t = build(synthetic_tokenizer());
  // "abc" -> "▁abc": ▁ a (rank 2) loses to a b (rank 0), then ab c (rank 1): ▁ abc.
  EXPECT_EQ(t.encode("abc", false), (std::vector<int32_t>{id(t, kMark), id(t, "abc")}));
  // "aaa": the leftmost a a pair merges first.
  EXPECT_EQ(t.encode("zaaa", false), (std::vector<int32_t>{id(t, kMark), id(t, "z"), id(t, "aa"), id(t, "a")}));
  EXPECT_EQ(t.encode("hello", false), (std::vector<int32_t>{id(t, kMark), id(t, "hello")}));
  // "ab" at a word start: ▁ a b -> a b (rank 0) first, so "▁ab" is never formed.
  EXPECT_EQ(t.encode("ab", false), (std::vector<int32_t>{id(t, kMark), id(t, "ab")}));
}

TEST(SyntheticBpe, ByteFallbackForUnknownCharacters) {
  const Tokenizer t = build(synthetic_tokenizer());
  // é = C3 A9 -> <0xC3> <0xA9>
  EXPECT_EQ(t.encode("x\xC3\xA9", false), (std::vector<int32_t>{id(t, kMark), id(t, "x"), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.decode(t.encode("x\xC3\xA9y", false), false), "x\xC3\xA9y");
}

TEST(SyntheticBpe, UnknownCharactersFuseWithoutByteFallback) {
  json j = synthetic_tokenizer();
  j["model"]["byte_fallback"] = false;
  const Tokenizer fused = build(j);
  EXPECT_EQ(fused.encode("x\xC3\xA9\xC3\xA9y", false),
            (std::vector<int32_t>{id(fused, kMark), id(fused, "x"), 0, id(fused, "y")}));
  j["model"]["fuse_unk"] = false;
  const Tokenizer separate = build(j);
  EXPECT_EQ(separate.encode("x\xC3\xA9\xC3\xA9y", false),
            (std::vector<int32_t>{id(separate, kMark), id(separate, "x"), 0, 0, id(separate, "y")}));
}

TEST(SyntheticBpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  json j = synthetic_tokenizer();
  j["pre_tokenizer"] = nullptr;  // no ▁ prefix: pieces are the raw text
  const Tokenizer plain = build(j);
  EXPECT_EQ(plain.encode("xyz", false), (std::vector<int32_t>{id(plain, "x"), id(plain, "y"), id(plain, "z")}));
  j["model"]["ignore_merges"] = true;
  const Tokenizer whole = build(j);
  EXPECT_EQ(whole.encode("xyz", false), (std::vector<int32_t>{id(whole, "xyz")}));
}

TEST(SyntheticBpe, PostProcessorAddsSpecialTokens) {
  const Tokenizer t = build(synthetic_tokenizer());
  const auto plain = t.encode("abc", false);
  auto with = plain;
  with.insert(with.begin(), 1);
  with.push_back(2);
  EXPECT_EQ(t.encode("abc", true), with);
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(t.encode("", false).empty());
}

TEST(SyntheticBpe, SpecialTokensInTextAndSplitSpecialTokens) {
  const Tokenizer t = build(synthetic_tokenizer());
  const auto ids = t.encode("ab</s>ab", false);
  // Metaspace "first": only the piece at offset 0 gets ▁.
  EXPECT_EQ(ids, (std::vector<int32_t>{id(t, kMark), id(t, "ab"), 2, id(t, "ab")}));
  EncodeOptions split;
  split.split_special_tokens = true;
  const auto plain = t.encode("ab</s>ab", split);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(t.decode(plain, false), "ab</s>ab");
}

TEST(SyntheticBpe, AddedTokenStripAndSingleWordRules) {
  json j = synthetic_tokenizer();
  j["model"]["vocab"]["<tag>"] = 300;
  j["model"]["vocab"]["hey"] = 301;
  j["added_tokens"].push_back({{"id", 300},
                               {"content", "<tag>"},
                               {"special", false},
                               {"lstrip", true},
                               {"rstrip", true},
                               {"normalized", false}});
  j["added_tokens"].push_back(
      {{"id", 301}, {"content", "hey"}, {"special", false}, {"single_word", true}, {"normalized", false}});
  j["pre_tokenizer"] = nullptr;
  const Tokenizer t = build(j);
  // lstrip/rstrip swallow the spaces around <tag>.
  EXPECT_EQ(t.encode("a  <tag>  b", false), (std::vector<int32_t>{id(t, "a"), 300, id(t, "b")}));
  // single_word: only a whole word matches.
  EXPECT_EQ(t.encode("hey", false), (std::vector<int32_t>{301}));
  const auto inside = t.encode("aheyb", false);
  EXPECT_EQ(std::count(inside.begin(), inside.end(), 301), 0);
}

TEST(SyntheticBpe, DecodeSkipsSpecialTokensAndStripsLeadingSpace) {
  const Tokenizer t = build(synthetic_tokenizer());
  const auto ids = t.encode("abc hello", true);
  EXPECT_EQ(t.decode(ids, true), "abc hello");
  EXPECT_EQ(t.decode(ids, false), "<s> abc hello</s>");
  EXPECT_TRUE(t.is_special(1));
  EXPECT_FALSE(t.is_special(id(t, "abc")));
  EXPECT_EQ(t.id_to_token(id(t, "hello")).value_or(""), "hello");
  EXPECT_FALSE(t.id_to_token(100000).has_value());
}

TEST(SyntheticBpe, IncrementalDecoderHoldsByteRunsAndLeadingSpace) {
  const Tokenizer t = build(synthetic_tokenizer());
  IncrementalDecoder d(t, false);
  EXPECT_EQ(d.push(id(t, kMark + "a")), "a");  // leading space stripped at the very start
  EXPECT_EQ(d.push(3 + 0xC3), "");             // first byte of é: held
  EXPECT_EQ(d.push(3 + 0xA9), "");             // run still open: may continue
  EXPECT_EQ(d.push(id(t, "b")), "\xC3\xA9"
                                "b");
  EXPECT_EQ(d.push(id(t, kMark)), " ");
  EXPECT_EQ(d.push(3 + 0xC3), "");
  EXPECT_EQ(d.finish(), "\xEF\xBF\xBD");  // an unfinished byte run becomes U+FFFD, as in decode
  const std::vector<int32_t> all = {id(t, kMark + "a"), 3 + 0xC3, 3 + 0xA9, id(t, "b"), id(t, kMark), 3 + 0xC3};
  EXPECT_EQ(t.decode(all, false), "a\xC3\xA9"
                                  "b \xEF\xBF\xBD");
}

TEST(SyntheticBpe, IncrementalDecoderRejectsBadIdsAndContinues) {
  const Tokenizer t = build(synthetic_tokenizer());
  IncrementalDecoder d(t, false);
  EXPECT_EQ(d.push(id(t, "abc")), "abc");
  EXPECT_THROW(d.push(999999), inferdesk::Error);
  EXPECT_THROW(d.push(-3), inferdesk::Error);
  EXPECT_EQ(d.push(id(t, "hello")), "hello");
  EXPECT_EQ(d.finish(), "");
}

}  // namespace
