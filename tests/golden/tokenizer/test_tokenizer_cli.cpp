// `inferdesk-cli tokenize` / `detokenize` produce exactly Hugging Face's ids and text, in the
// output format other tools parse ({"ids":[...]} per input line; decoded text with nothing added).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kShared = fs::path(INFERDESK_SHARED_DIR) / "tokenizers";
const fs::path kGolden = fs::path(INFERDESK_SOURCE_DIR) / "tests/golden/tokenizer";

struct Result {
  int status;
  std::string out;
};

Result run(const std::string& args) {
  const std::string cmd = std::string("\"") + INFERDESK_CLI + "\" " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return {pclose(p), out};
}

std::vector<json> read_jsonl(const fs::path& p) {
  std::vector<json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string join_ids(const json& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + std::to_string(id.get<int>());
  return s;
}

class Cli : public ::testing::TestWithParam<std::string> {};

TEST_P(Cli, TokenizeJsonlMatchesHf) {
  std::vector<json> corpus_refs;
  for (const auto& r : read_jsonl(kGolden / "ref" / (GetParam() + ".jsonl")))
    if (r.contains("corpus")) corpus_refs.push_back(r);
  const std::string base = "tokenize --tokenizer \"" + (kShared / GetParam()).string() + "\" --input \"" +
                           (kGolden / "corpus.jsonl").string() + "\"";
  for (bool special : {false, true}) {
    const Result r = run(base + (special ? " --add-special-tokens" : ""));
    ASSERT_EQ(r.status, 0);
    std::istringstream lines(r.out);
    size_t i = 0;
    for (std::string line; std::getline(lines, line); ++i) {
      ASSERT_LT(i, corpus_refs.size());
      EXPECT_EQ(line, "{\"ids\":" + corpus_refs[i][special ? "ids_special" : "ids"].dump() + "}") << "line " << i;
    }
    EXPECT_EQ(i, corpus_refs.size());
  }
}

TEST_P(Cli, DetokenizePrintsExactlyTheDecodedText) {
  int checked = 0;
  for (const auto& r : read_jsonl(kGolden / "ref" / (GetParam() + ".jsonl"))) {
    if (!r.contains("corpus") || r["ids_special"].empty() || r["corpus"].get<int>() % 15 != 0) continue;
    const std::string base = "detokenize --tokenizer \"" + (kShared / GetParam()).string() + "\" --ids " +
                             join_ids(r["ids_special"]);
    const Result plain = run(base);
    EXPECT_EQ(plain.status, 0);
    EXPECT_EQ(plain.out, r["decode"].get<std::string>());
    const Result skip = run(base + " --skip-special-tokens");
    EXPECT_EQ(skip.out, r["decode_skip"].get<std::string>());
    const Result stream = run(base + " --stream");
    EXPECT_EQ(stream.out, r["decode"].get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

TEST_P(Cli, BadInputFailsWithStatus) {
  const std::string dir = "\"" + (kShared / GetParam()).string() + "\"";
  EXPECT_NE(run("detokenize --tokenizer " + dir + " --ids 1,99999999").status, 0);
  EXPECT_NE(run("detokenize --tokenizer " + dir + " --ids 1,x").status, 0);
  EXPECT_NE(run("tokenize --tokenizer /nonexistent --input /dev/null").status, 0);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Cli, ::testing::Values("Qwen2.5-Instruct", "Llama-2-7b-chat-hf"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
