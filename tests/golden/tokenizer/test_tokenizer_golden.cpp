// Golden tests: our tokenizer against Hugging Face transformers 5.x outputs recorded on the GPU
// machine (tests/golden/tokenizer/ref/*.jsonl) for every tokenizer folder of ../shared/tokenizers
// with a tokenizer.json or vocab.json, and against llama.cpp's vocab-test .inp/.out pairs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace fs = std::filesystem;
using inferdesk::IncrementalDecoder;
using inferdesk::Tokenizer;
using nlohmann::json;

namespace {

const fs::path kShared = fs::path(INFERDESK_SHARED_DIR) / "tokenizers";
const fs::path kGolden = fs::path(INFERDESK_SOURCE_DIR) / "tests/golden/tokenizer";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<json> read_jsonl(const fs::path& p) {
  std::vector<json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Same inputs as PATHO in tools/tokenizer/make_reference.py.
std::map<std::string, std::string> pathological_inputs() {
  return {{"digits_100k", repeat("1", 100000)},
          {"digits_mixed_100k", repeat("1234567890", 10000)},
          {"spaces_100k_x", repeat(" ", 100000) + "x"},
          {"newlines_50k", repeat("\n", 50000)},
          {"emoji_20k", repeat("\xF0\x9F\x98\x80", 20000)},
          {"zwj_family_5k", repeat("\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7", 5000)},
          {"word_1m", repeat("a", 1000000)},
          {"word_mixed_200k", repeat("ab", 100000)}};
}

std::string fnv1a64(const std::vector<int32_t>& ids) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t id : ids) {
    const auto v = static_cast<uint32_t>(id);
    for (int k = 0; k < 4; ++k) {
      h ^= (v >> (8 * k)) & 0xFF;
      h *= 0x100000001b3ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// Streams ids through IncrementalDecoder; checks every delta is valid UTF-8.
std::string stream_decode(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip, std::string* problem) {
  IncrementalDecoder dec(tok, skip);
  std::string all;
  for (int32_t id : ids) {
    const std::string d = dec.push(id);
    if (!inferdesk::tok::is_valid_utf8(d) && problem)
      *problem = "delta with broken UTF-8 after id " + std::to_string(id);
    all += d;
  }
  const std::string rest = dec.finish();
  if (!inferdesk::tok::is_valid_utf8(rest) && problem) *problem = "finish() returned broken UTF-8";
  return all + rest;
}

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

class HfReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const fs::path ref = kGolden / "ref" / (GetParam() + ".jsonl");
    ASSERT_TRUE(fs::exists(ref)) << ref;
    records_ = read_jsonl(ref);
    ASSERT_FALSE(records_.empty());
    ASSERT_TRUE(records_[0].contains("meta"));
    for (const auto& line : read_jsonl(kGolden / "corpus.jsonl")) corpus_.push_back(line.get<std::string>());
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_dir(kShared / GetParam()));
  }
  std::vector<json> records_;
  std::vector<std::string> corpus_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(HfReference, MetadataMatches) {
  const json& meta = records_[0]["meta"];
  const json& attrs = meta["attrs"];
  EXPECT_EQ(tok_->hf_class(), meta["class"].get<std::string>());
  EXPECT_EQ(tok_->vocab_size(), attrs["len"].get<size_t>());
  auto check = [&](const char* key, const std::optional<std::string>& ours) {
    if (attrs[key].is_null())
      EXPECT_FALSE(ours.has_value()) << key;
    else
      EXPECT_EQ(ours.value_or("<none>"), attrs[key].get<std::string>()) << key;
  };
  check("bos_token", tok_->bos_token());
  check("eos_token", tok_->eos_token());
  check("pad_token", tok_->pad_token());
  auto check_id = [&](const char* key, const std::optional<int32_t>& ours) {
    if (attrs[key].is_null())
      EXPECT_FALSE(ours.has_value()) << key;
    else
      EXPECT_EQ(ours.value_or(-1), attrs[key].get<int32_t>()) << key;
  };
  check_id("bos_token_id", tok_->bos_id());
  check_id("eos_token_id", tok_->eos_id());
  check_id("pad_token_id", tok_->pad_id());
}

TEST_P(HfReference, CorpusEncodesAndDecodesExactly) {
  size_t n = 0;
  for (const auto& r : records_) {
    if (!r.contains("corpus")) continue;
    const size_t i = r["corpus"].get<size_t>();
    ASSERT_LT(i, corpus_.size());
    const std::string& text = corpus_[i];
    EXPECT_EQ(tok_->encode(text, false), ids_of(r["ids"])) << "line " << i << ": " << text;
    const auto ids_sp = ids_of(r["ids_special"]);
    EXPECT_EQ(tok_->encode(text, true), ids_sp) << "line " << i << ": " << text;
    EXPECT_EQ(tok_->decode(ids_sp, false), r["decode"].get<std::string>()) << "line " << i;
    EXPECT_EQ(tok_->decode(ids_sp, true), r["decode_skip"].get<std::string>()) << "line " << i;
    ++n;
  }
  EXPECT_EQ(n, corpus_.size());
}

TEST_P(HfReference, RandomIdSequencesDecodeExactly) {
  size_t n = 0;
  for (const auto& r : records_) {
    if (!r.contains("random")) continue;
    const auto ids = ids_of(r["ids"]);
    EXPECT_EQ(tok_->decode(ids, false), r["decode"].get<std::string>()) << r.dump();
    EXPECT_EQ(tok_->decode(ids, true), r["decode_skip"].get<std::string>()) << r.dump();
    ++n;
  }
  EXPECT_GE(n, 50u);
}

TEST_P(HfReference, IncrementalDecodeEqualsHfDecode) {
  for (const auto& r : records_) {
    const bool corpus = r.contains("corpus");
    if (!corpus && !r.contains("random")) continue;
    const auto ids = ids_of(corpus ? r["ids_special"] : r["ids"]);
    for (bool skip : {false, true}) {
      std::string problem;
      const std::string streamed = stream_decode(*tok_, ids, skip, &problem);
      EXPECT_EQ(streamed, r[skip ? "decode_skip" : "decode"].get<std::string>()) << r.dump();
      EXPECT_EQ(problem, "") << r.dump();
    }
  }
}

TEST_P(HfReference, PathologicalInputsMatch) {
  const auto inputs = pathological_inputs();
  size_t n = 0;
  for (const auto& r : records_) {
    if (!r.contains("patho")) continue;
    const std::string name = r["patho"].get<std::string>();
    ASSERT_TRUE(inputs.count(name)) << name;
    const auto ids = tok_->encode(inputs.at(name), false);
    EXPECT_EQ(ids.size(), r["count"].get<size_t>()) << name;
    EXPECT_EQ(fnv1a64(ids), r["fnv1a64"].get<std::string>()) << name;
    const auto head = ids_of(r["head"]);
    EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + std::min(ids.size(), head.size())), head) << name;
    ++n;
  }
  EXPECT_EQ(n, inputs.size());
}

TEST_P(HfReference, LlamaCppInputsMatchHf) {
  for (const auto& r : records_) {
    if (!r.contains("llamacpp")) continue;
    const std::string inp = read_file(kShared / "llama.cpp-vocab-tests" / (r["llamacpp"].get<std::string>() + ".inp"));
    std::vector<std::string> texts;
    const std::string sep = "\n__ggml_vocab_test__\n";
    size_t pos = 0;
    for (size_t next; (next = inp.find(sep, pos)) != std::string::npos; pos = next + sep.size())
      texts.push_back(inp.substr(pos, next - pos));
    texts.push_back(inp.substr(pos));
    ASSERT_EQ(texts.size(), r["texts"].get<size_t>());
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(tok_->encode(texts[i], false), ids_of(r["ids"][i])) << "text " << i << ": " << texts[i];
  }
}

INSTANTIATE_TEST_SUITE_P(SharedTokenizers, HfReference,
                         ::testing::Values("GPT-2", "Llama-2-7b-chat-hf", "Meta-Llama-3-8B-Instruct",
                                           "Mistral-7B-Instruct-v0.3", "Mixtral-8x7B-v0.1", "Phi-3-mini-4k-instruct",
                                           "SmolLM-135M", "Qwen2.5-Instruct"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

// llama.cpp's expected ids (.out) for the vocabularies we have as tokenizer.json or vocab.json.
// Its llama-spm / phi-3 ids come from the tokenizer.json pipeline as written (legacy Prepend
// normalizer): that is what transformers uses when config.json names the model type (llama, phi3),
// which we reproduce here by giving a config.json.
struct LlamaCppCase {
  const char* file;
  const char* folder;
  const char* model_config;
};

class LlamaCppVocab : public ::testing::TestWithParam<LlamaCppCase> {};

TEST_P(LlamaCppVocab, OutFileMatches) {
  const auto& c = GetParam();
  const fs::path dir = kShared / c.folder;
  const fs::path vt = kShared / "llama.cpp-vocab-tests";
  Tokenizer tok = fs::exists(dir / "tokenizer.json")
                      ? Tokenizer::from_json(read_file(dir / "tokenizer.json"),
                                             read_file(dir / "tokenizer_config.json"), c.model_config, c.folder)
                      : Tokenizer::from_dir(dir);
  const std::string inp = read_file(vt / (std::string(c.file) + ".inp"));
  const std::string out = read_file(vt / (std::string(c.file) + ".out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  for (size_t next; (next = inp.find(sep, pos)) != std::string::npos; pos = next + sep.size())
    texts.push_back(inp.substr(pos, next - pos));
  texts.push_back(inp.substr(pos));
  std::vector<std::vector<int32_t>> expected;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> v;
    for (int32_t id; ids >> id;) v.push_back(id);
    expected.push_back(v);
  }
  ASSERT_GE(texts.size(), 40u);
  ASSERT_GE(expected.size() + 1, texts.size());
  for (size_t i = 0; i < texts.size() && i < expected.size(); ++i)
    EXPECT_EQ(tok.encode(texts[i], false), expected[i]) << c.file << " text " << i << ": " << texts[i];
}

INSTANTIATE_TEST_SUITE_P(
    Vocabs, LlamaCppVocab,
    ::testing::Values(LlamaCppCase{"ggml-vocab-llama-spm.gguf", "Llama-2-7b-chat-hf", R"({"model_type": "llama"})"},
                      LlamaCppCase{"ggml-vocab-phi-3.gguf", "Phi-3-mini-4k-instruct", R"({"model_type": "phi3"})"},
                      LlamaCppCase{"ggml-vocab-llama-bpe.gguf", "Meta-Llama-3-8B-Instruct", ""},
                      LlamaCppCase{"ggml-vocab-gpt-2.gguf", "GPT-2", R"({"model_type": "gpt2"})"},
                      LlamaCppCase{"ggml-vocab-qwen2.gguf", "Qwen2.5-Instruct", ""}),
    [](const auto& info) {
      std::string s = info.param.file;
      for (char& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

}  // namespace
