// Pre-tokenizer splitting rules (HF SplitDelimiterBehavior and friends) on small inputs; the
// "the-final--countdown" cases are the examples of the tokenizers documentation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/tokenizer/pipeline.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/synthetic.h"

using namespace inferdesk::tok;
using nlohmann::json;

namespace {

std::vector<std::string> split(const json& spec, const std::string& text, bool at_origin = true) {
  auto pre = make_pre_tokenizer(spec, "test");
  Arena arena;
  std::vector<Piece> pieces{{text, at_origin}};
  pre->apply(pieces, arena);
  std::vector<std::string> out;
  for (const auto& p : pieces) out.emplace_back(p.text);
  return out;
}

json split_spec(const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
}

using V = std::vector<std::string>;

TEST(PreTokenizers, SplitBehaviorsMatchTheDocumentedExamples) {
  const std::string s = "the-final--countdown";
  EXPECT_EQ(split(split_spec("Removed"), s), (V{"the", "final", "countdown"}));
  EXPECT_EQ(split(split_spec("Isolated"), s), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(split_spec("MergedWithPrevious"), s), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(split_spec("MergedWithNext"), s), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(split_spec("Contiguous"), s), (V{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split(split_spec("Removed", true), s), (V{"-", "-", "-"}));
}

TEST(PreTokenizers, RegexSplitAndDigits) {
  const json re = {{"type", "Split"},
                   {"pattern", {{"Regex", R"(\p{N}{1,3})"}}},
                   {"behavior", "Isolated"},
                   {"invert", false}};
  EXPECT_EQ(split(re, "ab12345c"), (V{"ab", "123", "45", "c"}));
  EXPECT_EQ(split({{"type", "Digits"}, {"individual_digits", true}}, "a12b"), (V{"a", "1", "2", "b"}));
  EXPECT_EQ(split({{"type", "Digits"}, {"individual_digits", false}}, "a12b3"), (V{"a", "12", "b", "3"}));
  EXPECT_EQ(split({{"type", "WhitespaceSplit"}}, " a  b\tc\n"), (V{"a", "b", "c"}));
  EXPECT_EQ(split({{"type", "Whitespace"}}, "Hello, world!"), (V{"Hello", ",", "world", "!"}));
}

TEST(PreTokenizers, MetaspaceSchemesAndSplit) {
  const std::string m = "\xE2\x96\x81";
  const json first = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "first"}, {"split", false}};
  EXPECT_EQ(split(first, "a b"), (V{m + "a" + m + "b"}));
  EXPECT_EQ(split(first, "a b", false), (V{"a" + m + "b"}));  // not at the start of the input
  EXPECT_EQ(split(first, " a"), (V{m + "a"}));                // already starts with a space
  const json always = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(split(always, "a b", false), (V{m + "a", m + "b"}));
  const json never = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "never"}, {"split", false}};
  EXPECT_EQ(split(never, "a"), (V{"a"}));
}

TEST(PreTokenizers, ByteLevelMapsBytesAndSplitsLikeGpt2) {
  const json bl = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  // Space -> Ġ (U+0120), newline -> Ċ (U+010A); a prefix space is added.
  EXPECT_EQ(split(bl, "Hi there\n"), (V{"\xC4\xA0Hi", "\xC4\xA0there", "\xC4\x8A"}));
  EXPECT_EQ(split(bl, "I'm 42"), (V{"\xC4\xA0I", "'m",
                                    "\xC4\xA0"
                                    "42"}));
}

TEST(PreTokenizers, MergesMayBeGivenAsPairs) {
  json j = tokenizer_test::synthetic_tokenizer();
  const auto as_strings = inferdesk::Tokenizer::from_json(j.dump(), "", "", "strings");
  json pairs = json::array();
  for (const auto& m : j["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    pairs.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  j["model"]["merges"] = pairs;
  const auto as_pairs = inferdesk::Tokenizer::from_json(j.dump(), "", "", "pairs");
  for (const char* text : {"abc hello", "zaaa", "x\xC3\xA9y ab"})
    EXPECT_EQ(as_pairs.encode(text, true), as_strings.encode(text, true)) << text;
}

}  // namespace
