// Hostile command lines and input files (issue 31's review): each ends in exit status 1 and a
// message on stderr naming the flag, field or file, never a crash, a silent default or exit 0 with
// no output. Runs the real binary on tiny-chat and on broken copies of it (hostile_folder.h).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "tests/support/hostile_folder.h"
#include "tests/unit/cli/cli_run.h"

namespace inferdesk {
namespace {

using test::CliRun;
using test::HostileFolder;
using test::run_cli;

std::string tiny_chat() { return (test::golden_models_dir() / "tiny-chat").string(); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Exit 1 with `needle` in the message on stderr.
void expect_refused(const std::string& args, const std::string& needle) {
  const CliRun r = run_cli(args);
  EXPECT_EQ(r.status, 1) << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_TRUE(has(r.err, needle)) << args << "\nstderr: " << r.err;
}

std::string generate_ids(const std::string& extra) {
  return "generate --model " + tiny_chat() + " --prompt-ids 1,2,3 --max-tokens 2 --temperature 0 --json " + extra;
}

std::string write_temp(const std::string& stem, const std::string& text) {
  const std::string path = test::cli_temp_path(stem);
  std::ofstream(path) << text;
  return path;
}

TEST(CliHostile, HugeThreadCountIsAClearErrorNotAnAbort) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(generate_ids("--threads 100000"), "1024");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  expect_refused(generate_ids("--threads -3"), "--threads");
}

// A FIFO given as `info --dummy`'s shape file is refused at once, not waited on for a writer.
TEST(CliHostile, FifoShapeFileIsRefusedWithoutBlocking) {
  const std::string fifo = test::cli_temp_path("shape-fifo.json");
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused("info --dummy " + fifo, "FIFO");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  std::filesystem::remove(fifo);
}

TEST(CliHostile, NegativeSeedIsRefused) { expect_refused(generate_ids("--seed -1"), "--seed"); }

TEST(CliHostile, MalformedIdListsAreRefused) {
  for (const char* ids : {"''", "'1,,2'", "' 1 , 2 '", "'1,2,'", "'+1'"}) {
    SCOPED_TRACE(ids);
    expect_refused("detokenize --tokenizer " + tiny_chat() + " --ids " + std::string(ids), "--ids");
  }
  expect_refused("generate --model " + tiny_chat() + " --prompt-ids '1,,2' --json", "--prompt-ids");
  expect_refused(generate_ids("--stop-ids '7,'"), "--stop-ids");
}

TEST(CliHostile, DirectoryAsAnInputFileIsRefused) {
  expect_refused("tokenize --tokenizer " + tiny_chat() + " --input " + tiny_chat(), "directory");
  expect_refused("generate --model " + tiny_chat() + " --requests " + tiny_chat(), "directory");
}

TEST(CliHostile, ContextOutOfRangeIsRefused) {
  expect_refused("info --model " + tiny_chat() + " --context 1099511627776", "--context");
  expect_refused("info --model " + tiny_chat() + " --context -5", "--context");
}

TEST(CliHostile, RequestsLinesWithUnknownFieldsOrFloatIdsAreRefused) {
  const std::string unknown = write_temp("req_unknown", R"({"prompt_ids":[1,2],"temprature":0})"
                                                        "\n");
  expect_refused("generate --model " + tiny_chat() + " --requests " + unknown + " --json", "temprature");
  const std::string floats = write_temp("req_float", R"({"prompt_ids":[1.5,2]})"
                                                     "\n");
  expect_refused("generate --model " + tiny_chat() + " --requests " + floats + " --json", "prompt_ids");
  const std::string huge = write_temp("req_huge", R"({"prompt_ids":[1],"max_tokens":1099511627776})"
                                                  "\n");
  expect_refused("generate --model " + tiny_chat() + " --requests " + huge + " --json", "max_tokens");
  for (const std::string& p : {unknown, floats, huge}) std::remove(p.c_str());
}

TEST(CliHostile, ChatTemplateKwargsAreCheckedWithoutChat) {
  expect_refused(generate_ids("--chat-template-kwargs '{bad'"), "--chat-template-kwargs");
  expect_refused("generate --model " + tiny_chat() + " --prompt hi --chat-template-kwargs '[1]' --json",
                 "--chat-template-kwargs");
}

TEST(CliHostile, InfoReportsAChatTemplateThatCannotBeUsed) {
  HostileFolder broken("tiny-chat");
  broken.edit_json("tokenizer_config.json", [](nlohmann::json& j) { j["chat_template"] = "{% for m in messages %}"; });
  CliRun r = run_cli("info --model " + broken.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "chat template: unusable")) << r.out;
  HostileFolder number("tiny-chat");
  number.edit_json("tokenizer_config.json", [](nlohmann::json& j) { j["chat_template"] = 5; });
  r = run_cli("info --model " + number.path() + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["has_chat_template"].get<bool>());
  EXPECT_TRUE(j["chat_template_error"].is_string()) << r.out;
}

TEST(CliHostile, AFailedRequestSaysWhyOnStderr) {
  const CliRun r = run_cli("generate --model " + tiny_chat() + " --prompt-ids 1,99999 --max-tokens 2 --json");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "\"error\"")) << r.out;
  EXPECT_TRUE(has(r.err, "99999")) << "stderr: " << r.err;
}

TEST(CliHostile, EmptyVocabularySaysSo) {
  HostileFolder h("tiny-chat");
  h.edit_json("tokenizer.json", [](nlohmann::json& j) {
    j["model"]["vocab"] = nlohmann::json::object();
    j["model"]["merges"] = nlohmann::json::array();
    j["added_tokens"] = nlohmann::json::array();
  });
  const std::string input = write_temp("tok_in", "\"hi\"\n");
  expect_refused("tokenize --tokenizer " + h.path() + " --input " + input, "vocab is empty");
  std::remove(input.c_str());
}

TEST(CliHostile, InfoRefusesAFolderGenerateRefuses) {
  HostileFolder h("tiny-chat");
  h.edit_tensor("lm_head.weight", [](HostileFolder::Tensor&) { return false; });
  expect_refused("info --model " + h.path(), "lm_head.weight");
  expect_refused("generate --model " + h.path() + " --prompt-ids 1 --json", "lm_head.weight");
}

}  // namespace
}  // namespace inferdesk
