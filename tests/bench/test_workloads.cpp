// Workloads: the same seed gives the same bytes; text prompts have exactly the lengths asked for
// under real tokenizers (read from ../shared/tokenizers); vLLM's range-ratio bounds; ShareGPT's
// filtering and typed errors; the shared-prefix structure.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/bench/workload_prefix.h"
#include "core/bench/workload_random.h"
#include "core/bench/workload_sharegpt.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

Tokenizer shared_tokenizer(const std::string& name) {
  return Tokenizer::from_dir(std::string(INFERDESK_SHARED_DIR) + "/tokenizers/" + name);
}

std::vector<std::string> bodies(const std::vector<bench::BenchRequest>& r) {
  std::vector<std::string> out;
  for (const auto& x : r) out.push_back(x.body);
  return out;
}

TEST(RandomWorkload, TheSameSeedGivesByteIdenticalRequestsAndAnotherSeedOthers) {
  bench::RandomDataset d;
  d.num_requests = 20;
  d.input_len = 32;
  d.range_ratio = 0.5;
  const auto a = bodies(bench::make_requests(bench::sample_random(d, nullptr), {}));
  const auto b = bodies(bench::make_requests(bench::sample_random(d, nullptr), {}));
  d.seed = 1;
  const auto c = bodies(bench::make_requests(bench::sample_random(d, nullptr), {}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(RandomWorkload, LengthsStayWithinVllmsRangeRatioBounds) {
  EXPECT_EQ(bench::length_range(100, 0.25, 1), (std::pair<int64_t, int64_t>{75, 125}));
  EXPECT_EQ(bench::length_range(3, 0.5, 1), (std::pair<int64_t, int64_t>{1, 5}));  // floor 1.5, ceil 4.5
  EXPECT_EQ(bench::length_range(1, 0.9, 1), (std::pair<int64_t, int64_t>{1, 2}));  // at least 1
  bench::RandomDataset d;
  d.num_requests = 400;
  d.input_len = 40;
  d.output_len = 10;
  d.range_ratio = 0.5;
  std::set<int64_t> ins, outs;
  for (const auto& s : bench::sample_random(d, nullptr)) {
    ins.insert(s.prompt_len);
    outs.insert(s.output_len);
  }
  EXPECT_EQ(*ins.begin(), 20);
  EXPECT_EQ(*ins.rbegin(), 60);
  EXPECT_EQ(*outs.begin(), 5);
  EXPECT_EQ(*outs.rbegin(), 15);
  d.range_ratio = 0;
  for (const auto& s : bench::sample_random(d, nullptr)) ASSERT_EQ(s.prompt_len, 40);
  d.range_ratio = 1.0;
  EXPECT_THROW(bench::sample_random(d, nullptr), Error);
}

class ExactLengths : public ::testing::TestWithParam<const char*> {};

TEST_P(ExactLengths, TextPromptsReEncodeToExactlyTheLengthAskedFor) {
  const Tokenizer tok = shared_tokenizer(GetParam());
  bench::RandomDataset d;
  d.num_requests = 12;
  d.input_len = 64;
  d.range_ratio = 0.5;
  d.prefix_len = 16;
  const int64_t added = static_cast<int64_t>(tok.encode("", true).size());
  std::string first_prefix;
  for (const auto& s : bench::sample_random(d, &tok)) {
    ASSERT_FALSE(s.text.empty());
    EXPECT_EQ(static_cast<int64_t>(tok.encode(s.text, false).size()), s.prompt_len);
    EXPECT_GE(s.prompt_len, 16 + (64 - added) / 2);
    EXPECT_LE(s.prompt_len, 16 + (64 - added) * 3 / 2 + 1);
    const std::string prefix = tok.decode(std::vector<int32_t>(s.ids.begin(), s.ids.begin() + 16), false);
    if (first_prefix.empty()) first_prefix = prefix;
    EXPECT_EQ(prefix, first_prefix);  // the same prefix in every prompt
    for (int32_t id : s.ids) ASSERT_FALSE(tok.is_special(id));
  }
}

INSTANTIATE_TEST_SUITE_P(SharedTokenizers, ExactLengths, ::testing::Values("GPT-2", "Meta-Llama-3-8B-Instruct", "Mistral-7B-Instruct-v0.3"));

TEST(RandomWorkload, ChatAndCompletionBodiesCarryTheSameFields) {
  const Tokenizer tok = shared_tokenizer("GPT-2");
  bench::RandomDataset d;
  d.input_len = 10;
  d.output_len = 7;
  const auto samples = bench::sample_random(d, &tok);
  bench::BodyOptions o;
  o.model = "m";
  o.api = bench::Api::Chat;
  const auto chat = nlohmann::json::parse(bench::make_requests(samples, o)[0].body);
  EXPECT_EQ(chat["messages"][0]["content"], samples[0].text);
  EXPECT_EQ(chat["max_tokens"], 7);
  EXPECT_EQ(chat["ignore_eos"], true);
  o.api = bench::Api::Completions;
  o.ignore_eos = false;
  o.prefer_ids = true;
  const auto comp = nlohmann::json::parse(bench::make_requests(samples, o)[0].body);
  EXPECT_EQ(comp["prompt"].get<std::vector<int32_t>>(), samples[0].ids);
  EXPECT_FALSE(comp.contains("ignore_eos"));
  EXPECT_EQ(bench::make_requests(samples, o)[0].endpoint, "/v1/completions");
  bench::Sample ids_only;
  ids_only.ids = {1, 2};
  o.api = bench::Api::Chat;
  EXPECT_THROW(bench::make_requests({ids_only}, o), Error);
}

// Turns: the first is the prompt, the second gives the output length.
std::string conversation(const std::string& a, const std::string& b) {
  return nlohmann::json{{"conversations", {{{"from", "human"}, {"value", a}}, {{"from", "gpt"}, {"value", b}}}}}.dump();
}

TEST(ShareGpt, FiltersAsVllmAndTakesOutputLengthsFromTheReply) {
  const Tokenizer tok = shared_tokenizer("GPT-2");
  std::string many_words;
  for (int i = 0; i < 1100; ++i) many_words += " word";
  const std::string json = "[" + conversation("one two three four five", "six seven eight nine ten eleven") + "," +
                           R"({"conversations":[{"from":"human","value":"a single turn only"}]})" + "," +
                           conversation("hi", "a reply long enough to keep") + "," +  // prompt < 4 tokens
                           conversation(many_words, "and a reply of some words") + "," +  // prompt > 1024
                           R"({"id":"no conversations"})" + "," +
                           conversation("the quick brown fox jumps", "ok") + "]";  // reply < 4
  bench::ShareGptOptions o;
  o.num_requests = 10;
  auto s = bench::parse_sharegpt(json, tok, o);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].text, "one two three four five");
  EXPECT_EQ(s[0].prompt_len, 5);
  EXPECT_EQ(s[0].output_len, 6);
  o.output_len = 50;  // a fixed length skips the reply's minimum
  s = bench::parse_sharegpt(json, tok, o);
  ASSERT_EQ(s.size(), 2u);
  for (const auto& x : s) EXPECT_EQ(x.output_len, 50);
}

TEST(ShareGpt, MalformedFilesAreFormatErrorsNamingTheEntry) {
  const Tokenizer tok = shared_tokenizer("GPT-2");
  auto code_of = [&](const std::string& json) {
    try {
      bench::parse_sharegpt(json, tok, {});
    } catch (const Error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(ErrorCode::Internal, std::string("no error"));
  };
  EXPECT_EQ(code_of("[{").first, ErrorCode::Format);
  EXPECT_EQ(code_of(R"({"conversations":[]})").first, ErrorCode::Format);
  const auto [c1, m1] = code_of(R"([{"conversations":"text"}])");
  EXPECT_EQ(c1, ErrorCode::Format);
  EXPECT_NE(m1.find("entry 0"), std::string::npos) << m1;
  const auto [c2, m2] = code_of(R"([1, {"conversations":[{"value":"a b c d e"},{"value":7}]}])");
  EXPECT_EQ(c2, ErrorCode::Format);
  EXPECT_NE(m2.find("entry 0"), std::string::npos) << m2;  // an entry that is not an object
  const auto [c3, m3] = code_of(R"([{"conversations":[{"value":"a b c d e"},{"value":7}]}])");
  EXPECT_EQ(c3, ErrorCode::Format);
  EXPECT_NE(m3.find("turn 1"), std::string::npos) << m3;
  try {
    bench::load_sharegpt("/nonexistent/sharegpt.json", tok, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
  }
}

TEST(SharedPrefix, GroupsShareTheirPrefixTokensAndSuffixesAreUnique) {
  const Tokenizer tok = shared_tokenizer("Meta-Llama-3-8B-Instruct");
  bench::PrefixDataset d;
  d.num_requests = 14;  // 3 prefixes x 4 (14 / 3 rounds down, as vLLM)
  d.num_prefixes = 3;
  d.prefix_len = 24;
  d.suffix_len = 8;
  const auto samples = bench::sample_prefix(d, &tok);
  ASSERT_EQ(samples.size(), 12u);
  std::map<int32_t, std::vector<int32_t>> prefixes;
  std::set<std::vector<int32_t>> suffixes;
  std::vector<int32_t> order;
  for (const auto& s : samples) {
    ASSERT_EQ(s.prompt_len, 32);
    ASSERT_EQ(tok.encode(s.text, false), s.ids);  // what the server tokenizes is what we counted
    const std::vector<int32_t> p(s.ids.begin(), s.ids.begin() + 24);
    auto [it, fresh] = prefixes.emplace(s.group, p);
    EXPECT_EQ(it->second, p) << s.group;
    suffixes.insert(std::vector<int32_t>(s.ids.begin() + 24, s.ids.end()));
    order.push_back(s.group);
  }
  EXPECT_EQ(prefixes.size(), 3u);
  EXPECT_NE(prefixes[0], prefixes[1]);
  EXPECT_EQ(suffixes.size(), 12u);
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));  // shuffled
  d.num_requests = 2;
  EXPECT_THROW(bench::sample_prefix(d, &tok), Error);
}

}  // namespace
}  // namespace inferdesk
