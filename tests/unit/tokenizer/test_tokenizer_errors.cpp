// Bad tokenizer files become typed inferdesk::Error values with file, field and reason — never a
// crash — and random corruption of a valid file never escapes as another exception type.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "tests/unit/tokenizer/synthetic.h"

using inferdesk::Error;
using inferdesk::ErrorCode;
using inferdesk::Tokenizer;
using nlohmann::json;
using tokenizer_test::synthetic_tokenizer;

namespace fs = std::filesystem;

namespace {

// Runs `f`, expects an inferdesk::Error with `code` whose message contains `needle`.
template <typename F>
void expect_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error thrown (expected one mentioning \"" << needle << "\")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_bad_json(const json& j, ErrorCode code, const std::string& needle) {
  expect_error([&] { Tokenizer::from_json(j.dump(), "", "", "bad/tokenizer.json"); }, code, needle);
}

TEST(TokenizerErrors, TruncatedJsonNamesTheFile) {
  const std::string text = synthetic_tokenizer().dump();
  expect_error([&] { Tokenizer::from_json(text.substr(0, text.size() / 2), "", "", "m/tokenizer.json"); },
               ErrorCode::Tokenizer, "m/tokenizer.json");
}

TEST(TokenizerErrors, UnsupportedModelType) {
  json j = synthetic_tokenizer();
  j["model"]["type"] = "Unigram";
  expect_bad_json(j, ErrorCode::Unsupported, "Unigram");
}

TEST(TokenizerErrors, MergeReferringToUnknownToken) {
  json j = synthetic_tokenizer();
  j["model"]["merges"].push_back("a q");
  expect_bad_json(j, ErrorCode::Tokenizer, "\"q\" that is not in the vocabulary");
}

TEST(TokenizerErrors, MergeWhoseResultIsNotInTheVocabulary) {
  json j = synthetic_tokenizer();
  j["model"]["merges"].push_back("c a");
  expect_bad_json(j, ErrorCode::Tokenizer, "produces \"ca\"");
}

TEST(TokenizerErrors, MalformedMergeAndVocabEntries) {
  json j = synthetic_tokenizer();
  j["model"]["merges"].push_back("a b c");
  expect_bad_json(j, ErrorCode::Tokenizer, "merges[");
  j = synthetic_tokenizer();
  j["model"]["vocab"]["neg"] = -5;
  expect_bad_json(j, ErrorCode::Tokenizer, "out of range");
  j = synthetic_tokenizer();
  j["model"]["vocab"] = json::array();
  expect_bad_json(j, ErrorCode::Tokenizer, "model.vocab");
  j = synthetic_tokenizer();
  j["model"].erase("merges");
  expect_bad_json(j, ErrorCode::Tokenizer, "missing field \"merges\"");
}

TEST(TokenizerErrors, UnsupportedOrMalformedStages) {
  json j = synthetic_tokenizer();
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  expect_bad_json(j, ErrorCode::Unsupported, "BertPreTokenizer");
  j = synthetic_tokenizer();
  j["normalizer"] = {{"type", "Precompiled"}};
  expect_bad_json(j, ErrorCode::Unsupported, "Precompiled");
  j = synthetic_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_bad_json(j, ErrorCode::Tokenizer, "regex does not compile");
  j = synthetic_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}};
  expect_bad_json(j, ErrorCode::Tokenizer, "Sideways");
  j = synthetic_tokenizer();
  j["decoder"] = {{"type", "Strip"}, {"content", "ab"}, {"start", 1}};
  expect_bad_json(j, ErrorCode::Tokenizer, "single character");
  j = synthetic_tokenizer();
  j["post_processor"]["single"][0]["SpecialToken"]["id"] = "<missing>";
  expect_bad_json(j, ErrorCode::Tokenizer, "<missing>");
  j = synthetic_tokenizer();
  j["added_tokens"] = "nope";
  expect_bad_json(j, ErrorCode::Tokenizer, "added_tokens");
  j = synthetic_tokenizer();
  j["model"]["dropout"] = 0.1;
  expect_bad_json(j, ErrorCode::Unsupported, "dropout");
}

TEST(TokenizerErrors, BadTokenizerConfig) {
  const std::string tok = synthetic_tokenizer().dump();
  expect_error([&] { Tokenizer::from_json(tok, "{\"bos_token\": ", "", "m"); }, ErrorCode::Tokenizer, "invalid JSON");
  expect_error([&] { Tokenizer::from_json(tok, R"({"bos_token": 5})", "", "m"); }, ErrorCode::Tokenizer, "bos_token");
  expect_error([&] { Tokenizer::from_json(tok, R"({"added_tokens_decoder": {"x": {"content": "a"}}})", "", "m"); },
               ErrorCode::Tokenizer, "not a token id");
}

TEST(TokenizerErrors, DecodeOfUnknownIdIsAnError) {
  const Tokenizer t = Tokenizer::from_json(synthetic_tokenizer().dump(), "", "", "m");
  const std::vector<int32_t> bad = {1, 5000};
  expect_error([&] { t.decode(bad, false); }, ErrorCode::Tokenizer, "token id 5000");
  const std::vector<int32_t> negative = {-1};
  expect_error([&] { t.decode(negative, true); }, ErrorCode::Tokenizer, "token id -1");
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("inferdesk_tok_" + std::to_string(std::random_device{}()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ / name) << text; }

 private:
  fs::path path_;
};

TEST(TokenizerErrors, FolderProblems) {
  expect_error([] { Tokenizer::from_dir("/nonexistent/model/folder"); }, ErrorCode::NotFound,
               "/nonexistent/model/folder");
  TempDir dir;
  expect_error([&] { Tokenizer::from_dir(dir.path()); }, ErrorCode::NotFound, "no tokenizer.json");
  dir.write("vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  dir.write("merges.txt", "#version: 0.2\na b\nthis line is bad\n");
  dir.write("tokenizer_config.json", R"({"tokenizer_class": "Qwen2Tokenizer"})");
  expect_error([&] { Tokenizer::from_dir(dir.path()); }, ErrorCode::Tokenizer, "merges.txt:3");
  dir.write("merges.txt", "#version: 0.2\na b\n");
  dir.write("tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer"})");
  expect_error([&] { Tokenizer::from_dir(dir.path()); }, ErrorCode::Unsupported, "BertTokenizer");
  dir.write("tokenizer_config.json", R"({"tokenizer_class": "Qwen2Tokenizer"})");
  const Tokenizer t = Tokenizer::from_dir(dir.path());
  EXPECT_EQ(t.hf_class(), "Qwen2Tokenizer");
  EXPECT_EQ(t.encode("ab", false), (std::vector<int32_t>{2}));
}

// A key twice in the vocabulary or the config: which id or value the author meant is unknown.
TEST(TokenizerErrors, DuplicateKeysAreRefused) {
  std::string tok = synthetic_tokenizer().dump();
  const size_t vocab = tok.find("\"vocab\":{");
  ASSERT_NE(vocab, std::string::npos);
  tok.insert(vocab + 9, "\"ab\":3,");  // "ab" is in the vocabulary already, with another id
  expect_error([&] { Tokenizer::from_json(tok, "", "", "m/tokenizer.json"); }, ErrorCode::Tokenizer,
               "m/tokenizer.json: duplicate key \"ab\"");
  const std::string good = synthetic_tokenizer().dump();
  expect_error([&] { Tokenizer::from_json(good, R"({"bos_token": "<s>", "bos_token": "</s>"})", "", "m"); },
               ErrorCode::Tokenizer, "duplicate key \"bos_token\"");
}

// A FIFO where tokenizer.json should be: refused at once (opening it for reading would block).
TEST(TokenizerErrors, FifoTokenizerJsonIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir.path() / "tokenizer.json").c_str(), 0600), 0);
  auto done = std::async(std::launch::async, [&] {
    expect_error([&] { Tokenizer::from_dir(dir.path()); }, ErrorCode::Tokenizer, "not a regular file (a FIFO)");
  });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "Tokenizer::from_dir blocked on a FIFO tokenizer.json";
    const int fd = ::open((dir.path() / "tokenizer.json").c_str(), O_WRONLY | O_NONBLOCK);  // wake the reader
    done.wait();
    if (fd >= 0) ::close(fd);
  }
}

// Random byte corruption of a valid file: loading either succeeds or throws inferdesk::Error.
TEST(TokenizerErrors, CorruptedFilesNeverEscapeAsOtherExceptions) {
  const std::string good = synthetic_tokenizer().dump();
  std::mt19937 rng(1234);
  int errors = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string bad = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % bad.size();
      switch (rng() % 3) {
        case 0: bad[pos] = static_cast<char>(rng() % 256); break;
        case 1: bad.erase(pos, 1 + rng() % 8); break;
        default: {
          static constexpr char kChars[] = "{}[]\",:0a-";
          bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(pos), kChars[rng() % (sizeof kChars - 1)]);
          break;
        }
      }
      if (bad.empty()) bad.assign(1, '{');
    }
    try {
      const Tokenizer t = Tokenizer::from_json(bad, "", "", "fuzz");
      const auto ids = t.encode("abc hello \xC3\xA9 </s>", true);
      (void)t.decode(ids, false);
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": escaped as " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(errors, 100);  // most corruptions are detected
}

}  // namespace

// A pre-tokenizer regex that backtracks catastrophically fails with the file, the pattern and what
// to do, not PCRE2's bare "match limit exceeded".
TEST(TokenizerErrors, CatastrophicRegexNamesTheFileAndPattern) {
  json j = synthetic_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a+)+$"}}}, {"behavior", "Isolated"}};
  const Tokenizer tok = Tokenizer::from_json(j.dump(), "", "", "bad/tokenizer.json");
  const std::string text = std::string(40, 'a') + "b";
  expect_error([&] { tok.encode(text, false); }, ErrorCode::Tokenizer, "bad/tokenizer.json");
  expect_error([&] { tok.encode(text, false); }, ErrorCode::Tokenizer, "(a+)+$");
  expect_error([&] { tok.encode(text, false); }, ErrorCode::Tokenizer, "match limit");
  expect_error([&] { tok.encode(text, false); }, ErrorCode::Tokenizer, "replace the pattern");
  // A long pattern is shortened in the message.
  j["pre_tokenizer"]["pattern"]["Regex"] = "(a+)+$|" + std::string(1000, 'x');
  const Tokenizer long_tok = Tokenizer::from_json(j.dump(), "", "", "bad/tokenizer.json");
  try {
    long_tok.encode(text, false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 600u) << e.what();
    EXPECT_NE(std::string(e.what()).find("(a+)+$|xxx"), std::string::npos) << e.what();
  }
}
