// Behaviour on the real vocabularies in ../shared/tokenizers: invalid UTF-8 input, bad ids,
// pathological inputs (checked for exact output; the suite's timeout bounds their run time),
// streaming detokenization and concurrent use.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "core/util/error.h"

namespace fs = std::filesystem;
using inferdesk::EncodeOptions;
using inferdesk::IncrementalDecoder;
using inferdesk::Tokenizer;

namespace {

const Tokenizer& load(const std::string& name) {
  static std::map<std::string, Tokenizer> cache;  // test-local: loaded once per process
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, Tokenizer::from_dir(fs::path(INFERDESK_SHARED_DIR) / "tokenizers" / name)).first;
  return it->second;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// (The golden suite runs the same kind of inputs on all eight vocabularies against HF's ids.)
const char* kByteLevel[] = {"GPT-2", "Qwen2.5-Instruct"};
const char* kSentencePiece[] = {"Llama-2-7b-chat-hf", "Mistral-7B-Instruct-v0.3"};

TEST(RealTokenizers, InvalidUtf8IsReplacedNotFatal) {
  const std::string bad = "ab\xFF\xFE"
                          "cd\xE2\x82 ok \xF0\x9F\x98";
  const std::string fixed = inferdesk::tok::utf8_lossy(bad);
  ASSERT_EQ(fixed, "ab\xEF\xBF\xBD\xEF\xBF\xBD"
                   "cd\xEF\xBF\xBD ok \xEF\xBF\xBD");
  for (const char* name : {"GPT-2", "Llama-2-7b-chat-hf", "Qwen2.5-Instruct"}) {
    const Tokenizer& t = load(name);
    EXPECT_EQ(t.encode(bad, true), t.encode(fixed, true)) << name;
    EXPECT_EQ(t.decode(t.encode(bad, false), false), fixed) << name;
  }
}

TEST(RealTokenizers, OutOfRangeIdsAreErrors) {
  const Tokenizer& t = load("Meta-Llama-3-8B-Instruct");
  EXPECT_EQ(t.max_token_id(), 128255);
  EXPECT_EQ(t.vocab_size(), 128256u);
  const std::vector<int32_t> ok = {128000, 9906};
  EXPECT_EQ(t.decode(ok, false), "<|begin_of_text|>Hello");
  for (int32_t bad : {128256, -1, 1 << 30}) {
    const std::vector<int32_t> ids = {9906, bad};
    EXPECT_THROW(t.decode(ids, false), inferdesk::Error) << bad;
    IncrementalDecoder d(t, false);
    EXPECT_THROW(d.push(bad), inferdesk::Error);
  }
}

TEST(RealTokenizers, LongDigitRunsSplitExactly) {
  // Llama 3 splits digits in groups of three, Qwen2 and SmolLM one by one.
  const std::string digits = repeat("1", 100000);
  const Tokenizer& llama3 = load("Meta-Llama-3-8B-Instruct");
  const auto ids = llama3.encode(digits, false);
  ASSERT_EQ(ids.size(), 33334u);
  const int32_t three = llama3.token_to_id("111").value();
  EXPECT_EQ(std::count(ids.begin(), ids.end() - 1, three), 33333);
  EXPECT_EQ(ids.back(), llama3.token_to_id("1").value());
  for (const char* name : {"Qwen2.5-Instruct", "SmolLM-135M"}) {
    const Tokenizer& t = load(name);
    const auto one = t.encode(digits, false);
    ASSERT_EQ(one.size(), 100000u) << name;
    EXPECT_EQ(std::count(one.begin(), one.end(), t.token_to_id("1").value()), 100000) << name;
  }
}

TEST(RealTokenizers, PathologicalInputsRoundTrip) {
  const std::vector<std::string> inputs = {
      repeat("a", 1000000),                                                                      // a 1 MB word
      repeat("1234567890", 10000),                                                               // 100k digits
      repeat(" ", 100000) + "x" + repeat("\t", 1000) + "\n",                                     // whitespace runs
      repeat("\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7", 5000),  // emoji ZWJ run
  };
  for (const char* name : kByteLevel) {
    const Tokenizer& t = load(name);
    for (const auto& text : inputs) {
      const auto ids = t.encode(text, false);
      EXPECT_FALSE(ids.empty());
      EXPECT_EQ(t.decode(ids, false), text) << name << ": " << text.size() << " bytes";
    }
  }
  for (const char* name : kSentencePiece) {
    const Tokenizer& t = load(name);
    for (const auto& text : inputs) {
      if (text[0] == ' ') continue;  // a leading space is dropped by the decoder by design
      EXPECT_EQ(t.decode(t.encode(text, false), false), text) << name << ": " << text.size() << " bytes";
    }
  }
}

TEST(RealTokenizers, IncrementalDecodingStreams) {
  const std::string text = "Hello world, \xF0\x9F\x98\x80 done \xE4\xBD\xA0\xE5\xA5\xBD!";
  for (const char* name :
       {"Meta-Llama-3-8B-Instruct", "Llama-2-7b-chat-hf", "Qwen2.5-Instruct", "Mistral-7B-Instruct-v0.3"}) {
    const Tokenizer& t = load(name);
    const auto ids = t.encode(text, true);
    IncrementalDecoder d(t, true);
    std::string all;
    size_t nonempty = 0;
    for (int32_t id : ids) {
      const std::string delta = d.push(id);
      EXPECT_TRUE(inferdesk::tok::is_valid_utf8(delta)) << name;
      EXPECT_EQ(delta.find("\xE2\x96\x81"), std::string::npos) << name << ": raw \xE2\x96\x81 in " << delta;
      EXPECT_EQ(delta.find("\xC4\xA0"), std::string::npos) << name << ": raw \xC4\xA0 in " << delta;
      nonempty += !delta.empty();
      all += delta;
    }
    all += d.finish();
    EXPECT_EQ(all, text) << name;
    EXPECT_EQ(all, t.decode(ids, true)) << name;
    EXPECT_GE(nonempty, 5u) << name << ": text must come out as it is decoded, not at the end";
  }
}

TEST(RealTokenizers, ByteLevelStreamHoldsPartialCharacters) {
  const Tokenizer& t = load("GPT-2");
  const auto ids = t.encode("\xF0\x9F\xA6\x99", false);  // 🦙 is several byte tokens in GPT-2
  ASSERT_GE(ids.size(), 2u);
  IncrementalDecoder d(t, false);
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_EQ(d.push(ids[i]), "") << i;
  EXPECT_EQ(d.push(ids.back()), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(d.finish(), "");
}

TEST(RealTokenizers, SpecialTokensOfTheConfig) {
  const Tokenizer& llama2 = load("Llama-2-7b-chat-hf");
  EXPECT_EQ(llama2.bos_token().value_or(""), "<s>");
  EXPECT_EQ(llama2.eos_id().value_or(-1), 2);
  const Tokenizer& qwen = load("Qwen2.5-Instruct");
  EXPECT_FALSE(qwen.bos_token().has_value());
  EXPECT_EQ(qwen.eos_token().value_or(""), "<|im_end|>");
  EXPECT_EQ(qwen.eos_id().value_or(-1), 151645);
  EXPECT_EQ(qwen.encode("<|im_start|>user", false).front(), 151644);
  EncodeOptions split;
  split.split_special_tokens = true;
  const auto plain = qwen.encode("<|im_start|>user", split);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151644), 0);
  EXPECT_EQ(qwen.decode(plain, false), "<|im_start|>user");
}

TEST(RealTokenizers, ConcurrentEncodeMatchesSequential) {
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("line " + std::to_string(i) + ": the quick brown fox " + repeat("jumps ", i % 7) +
                    "\xE4\xBD\xA0\xE5\xA5\xBD " + std::to_string(i * 7919));
  for (const char* name : {"Meta-Llama-3-8B-Instruct", "Llama-2-7b-chat-hf"}) {
    const Tokenizer t = Tokenizer::from_dir(fs::path(INFERDESK_SHARED_DIR) / "tokenizers" / name);  // cold cache
    std::vector<std::vector<int32_t>> expected;
    const Tokenizer reference = load(name);
    for (const auto& s : texts) expected.push_back(reference.encode(s, true));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k) {
      threads.emplace_back([&, k] {
        for (int rep = 0; rep < 3; ++rep)
          for (size_t i = 0; i < texts.size(); ++i) {
            const size_t j = (i * (k + 1) + rep) % texts.size();
            if (t.encode(texts[j], true) != expected[j]) ++mismatches[k];
          }
      });
    }
    for (auto& th : threads) th.join();
    for (int k = 0; k < 4; ++k) EXPECT_EQ(mismatches[k], 0) << name << " thread " << k;
  }
}

}  // namespace
