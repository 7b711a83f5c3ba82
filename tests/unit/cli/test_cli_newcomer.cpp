// What a person meets on the command line (issue 23, "The CLI a newcomer meets"): --version, the
// message for a missing command, bench's table and progress, host vs device memory, info's units
// and context warning, generate's stats line and --requests text, early validation, and
// tokenize's message for a file that is not JSON lines. Runs the real binary on tiny-chat (CPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/golden.h"
#include "tests/unit/cli/cli_run.h"

namespace inferdesk {
namespace {

using test::cli_temp_path;
using test::CliRun;
using test::run_cli;

std::string tiny_chat() { return (test::golden_models_dir() / "tiny-chat").string(); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string write_file(const std::string& stem, const std::string& content) {
  const std::string path = cli_temp_path(stem);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// ---- --version and a missing command ------------------------------------------------------------

TEST(CliVersion, PrintsTheVersionTheCommitAndTheBackends) {
  const CliRun r = run_cli("--version");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind(std::string("inferdesk-cli ") + INFERDESK_VERSION, 0), 0u) << lines[0];
  EXPECT_TRUE(has(lines[1], "backends: cpu (")) << lines[1];
  // The CUDA module's state on this machine: a GPU it runs on, or why not.
  EXPECT_EQ(lines[2].rfind("cuda: ", 0), 0u) << lines[2];
  if (!has(lines[2], "module ")) {
    EXPECT_TRUE(has(lines[2], "cuda: not available: ")) << lines[2];
  }
}

TEST(CliUsage, AMissingOrUnknownCommandListsTheCommandsAndNamesTheDesktopApp) {
  for (const std::string args : {"", "--data-dir /tmp/x", "chat"}) {
    const CliRun r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(r.out.empty()) << args;
    for (const char* command : {"generate", "bench", "info", "tokenize", "detokenize", "render-template"})
      EXPECT_TRUE(has(r.err, std::string("\n  ") + command + " ")) << args << ": " << r.err;
    EXPECT_TRUE(has(r.err, "desktop app is 'inferdesk'")) << r.err;
    EXPECT_FALSE(has(r.err, "A subcommand is required")) << r.err;
  }
  EXPECT_TRUE(has(run_cli("--data-dir /tmp/x").err, "no command given (got '--data-dir /tmp/x')"));
  EXPECT_TRUE(has(run_cli("chat").err, "unknown command 'chat'"));
  // A known command's own mistakes are still CLI11's (here: its required --model).
  const CliRun inner = run_cli("generate --prompt-ids 1");
  EXPECT_NE(inner.status, 0);
  EXPECT_TRUE(has(inner.err, "--model is required")) << inner.err;
}

// ---- bench ---------------------------------------------------------------------------------------

const std::string kSmallBench = " --backend cpu --batch 2 --input-len 8 --output-len 4";

TEST(CliBench, TextModeIsAnAlignedTableWithUnits) {
  const CliRun r = run_cli("bench --model " + tiny_chat() + kSmallBench + " --repeat 1");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_NE(r.out[0], '{') << "the default is a table, not JSON";
  const auto lines = lines_of(r.out);
  std::vector<std::string> labels;
  size_t value_column = std::string::npos;
  for (const auto& line : lines) {
    // "label  value": the value starts at the same column on every line.
    const size_t gap = line.find("  ");
    ASSERT_NE(gap, std::string::npos) << line;
    const size_t value = line.find_first_not_of(' ', gap);
    if (value_column == std::string::npos) value_column = value;
    EXPECT_EQ(value, value_column) << line;
    labels.push_back(line.substr(0, gap));
  }
  for (const char* label :
       {"model", "backend", "workload", "prefill", "decode", "time to first token", "host memory", "KV cache"})
    EXPECT_NE(std::find(labels.begin(), labels.end(), label), labels.end()) << label;
  // No device on the CPU, so no device-memory row.
  EXPECT_EQ(std::find(labels.begin(), labels.end(), "device memory"), labels.end());
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nprefill +[0-9,.]+ tok/s\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\ndecode +[0-9,.]+ tok/s\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(time to first token +[0-9.]+ (µs|ms|s) mean)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(host memory +[0-9.]+ [kMG]B resident)"))) << r.out;
  EXPECT_TRUE(has(r.out, "0.42 M parameters, 0.84 MB of weights")) << r.out;
  EXPECT_TRUE(has(r.out, "online, batch 2: 8 prompt + 4 output tokens each")) << r.out;
}

TEST(CliBench, ShowsProgressDuringTheWarmUpAndEachTimedRun) {
  const CliRun r = run_cli("bench --model " + tiny_chat() + kSmallBench + " --repeat 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "warm-up: ")) << r.err;
  EXPECT_TRUE(has(r.err, "timed run 1/2: 0/8 tokens")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(timed run 1/2: [0-9.]+ (µs|ms|s), decode)"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(timed run 2/2: [0-9.]+ (µs|ms|s), decode)"))) << r.err;
  EXPECT_FALSE(has(run_cli("bench --model " + tiny_chat() + kSmallBench + " --repeat 1 --json").err, "timed run"))
      << "--json runs stay quiet on stderr";
}

// The llama fixture's shape has tied embeddings: loading it as dummy weights once created a
// separate lm_head, so the loaded bytes passed the total and the progress read up to ~120%.
TEST(CliBench, LoadProgressNeverPassesOneHundredPercent) {
  const auto shape = test::golden_models_dir() / "llama" / "config.json";
  const CliRun r = run_cli("bench --dummy " + shape.string() +
                           " --backend cpu --batch 1 --input-len 4 --output-len 2 --repeat 1");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::regex figure(R"(loading weights: +([0-9.]+)%)");
  std::vector<double> seen;
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), figure), end; it != end; ++it)
    seen.push_back(std::stod((*it)[1].str()));
  ASSERT_FALSE(seen.empty()) << r.err;
  for (double p : seen) EXPECT_LE(p, 100.0) << r.err;
  EXPECT_EQ(seen.back(), 100.0);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end())) << r.err;
}

TEST(CliBench, CpuRunsReportHostMemoryAndNoDeviceMemory) {
  const CliRun r = run_cli("bench --model " + tiny_chat() + kSmallBench + " --repeat 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // Everything the JSON had before is still there (tools/ and docs/PERF.md read these keys).
  for (const char* k : {"model",
                        "backend",
                        "threads",
                        "mode",
                        "num_requests",
                        "batch",
                        "input_len",
                        "output_len",
                        "repeat",
                        "weight_bytes",
                        "prefill_tokens_per_s",
                        "decode_tokens_per_s",
                        "output_tokens_per_s",
                        "time_to_first_token_s",
                        "ttft_median_s",
                        "ttft_p99_s",
                        "tpot_mean_s",
                        "tpot_median_s",
                        "tpot_p99_s",
                        "wall_s",
                        "peak_rss_bytes",
                        "device_memory_used_bytes",
                        "kv_cache_bytes",
                        "kv_block_size",
                        "overlap_steps",
                        "steps",
                        "overlapped_steps"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["device_memory_used_bytes"].get<int64_t>(), 0);
  EXPECT_FALSE(j.contains("device_memory_total_bytes"));
  const int64_t host = j["host_memory_used_bytes"].get<int64_t>();
  EXPECT_GT(host, 0);
  EXPECT_LE(host, j["peak_rss_bytes"].get<int64_t>());
  // Resident memory of a 0.8 MB model: far below the 2 GiB KV cache the CPU reserves (lazily).
  EXPECT_LT(host, j["kv_cache_bytes"].get<int64_t>() / 4);
}

// ---- info ----------------------------------------------------------------------------------------

TEST(CliInfo, PrintsSizesWithUnitsThatFit) {
  const CliRun r = run_cli("info --model " + tiny_chat());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "tiny-chat: qwen2 (Qwen2ForCausalLM), BF16 weights, 0.42 M parameters")) << r.out;
  EXPECT_TRUE(has(r.out, "on disk 0.86 MB in 1 shard;")) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(CPU [0-9.]+ MB \(KV cache [0-9.]+ MB\))"))) << r.out;
  EXPECT_FALSE(has(r.out, "0.00")) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliInfo, WarnsWhenTheContextExceedsTheModels) {
  const CliRun over = run_cli("info --model " + tiny_chat() + " --context 100000");
  ASSERT_EQ(over.status, 0) << over.err;
  EXPECT_TRUE(has(over.err, "warning: --context 100000 exceeds the model's context length (4096")) << over.err;
  const CliRun json = run_cli("info --model " + tiny_chat() + " --context 100000 --json");
  ASSERT_EQ(json.status, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out)["warnings"].size(), 1u);
  const CliRun within = run_cli("info --model " + tiny_chat() + " --context 4096 --json");
  ASSERT_EQ(within.status, 0);
  EXPECT_TRUE(within.err.empty()) << within.err;
  EXPECT_TRUE(nlohmann::json::parse(within.out)["warnings"].empty());
}

// ---- generate ------------------------------------------------------------------------------------

const std::string kGreedy = " --prompt 'hello there' --temperature 0 --backend cpu";

std::vector<int32_t> greedy_tokens(const std::string& model_dir, int max_tokens) {
  const CliRun r = run_cli("generate --model " + model_dir + kGreedy + " --ignore-eos --json" + " --max-tokens " +
                           std::to_string(max_tokens));
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out)["tokens"].get<std::vector<int32_t>>();
}

TEST(CliGenerate, TextReplyEndsWithANewlineAndAStatsLineOnStderr) {
  const CliRun r = run_cli("generate --model " + tiny_chat() + kGreedy + " --ignore-eos --max-tokens 5");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_FALSE(has(r.out, "stopped")) << "stdout is the reply only";
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\u2014 5 tokens in [0-9.]+ (µs|ms|s), [0-9,.]+ tok/s, first token "
                                                  "[0-9.]+ (µs|ms|s), stopped: max tokens reached\n")))
      << r.err;
}

TEST(CliGenerate, StatsLineSaysWhyItStopped) {
  const std::vector<int32_t> tokens = greedy_tokens(tiny_chat(), 3);
  ASSERT_EQ(tokens.size(), 3u);
  ASSERT_NE(tokens[0], tokens[1]);
  // The model's end-of-sequence token: a copy of tiny-chat whose generation_config.json makes the
  // first greedy token the EOS.
  const std::filesystem::path copy = cli_temp_path("cli_eos_model");
  std::filesystem::create_directories(copy);
  for (const auto& e : std::filesystem::directory_iterator(tiny_chat()))
    std::filesystem::copy_file(e.path(), copy / e.path().filename());
  std::ofstream(copy / "generation_config.json") << nlohmann::json({{"eos_token_id", {tokens[0]}}}).dump();
  const CliRun eos = run_cli("generate --model " + copy.string() + kGreedy + " --max-tokens 5");
  ASSERT_EQ(eos.status, 0) << eos.err;
  EXPECT_TRUE(has(eos.err, "\u2014 1 token in ")) << eos.err;
  EXPECT_TRUE(has(eos.err, "stopped: end of turn\n")) << eos.err;
  std::filesystem::remove_all(copy);
  // One of --stop-ids.
  const CliRun stop = run_cli("generate --model " + tiny_chat() + kGreedy + " --max-tokens 5 --stop-ids " +
                              std::to_string(tokens[1]));
  ASSERT_EQ(stop.status, 0) << stop.err;
  EXPECT_TRUE(has(stop.err, "\u2014 2 tokens in ")) << stop.err;
  EXPECT_TRUE(has(stop.err, "stopped: stop token " + std::to_string(tokens[1]) + "\n")) << stop.err;
}

TEST(CliGenerate, SamplingFlagsAreCheckedBeforeTheModelLoads) {
  const CliRun r = run_cli("generate --model /nonexistent/model --prompt-ids 1,2 --top-p 1.5");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "top_p must be in (0, 1], got 1.5")) << r.err;
  EXPECT_FALSE(has(r.err, "nonexistent")) << r.err;
  const CliRun temp = run_cli("generate --model /nonexistent/model --prompt-ids 1 --temperature -1");
  EXPECT_TRUE(has(temp.err, "temperature")) << temp.err;
  EXPECT_FALSE(has(temp.err, "nonexistent")) << temp.err;
  // A --requests line's own fields too.
  const std::string file = write_file("cli_bad_top_p.jsonl", "{\"prompt_ids\": [1], \"top_p\": 3}\n");
  const CliRun line = run_cli("generate --model /nonexistent/model --requests " + file);
  EXPECT_TRUE(has(line.err, "requests line 1: top_p must be in (0, 1], got 3")) << line.err;
  EXPECT_FALSE(has(line.err, "nonexistent")) << line.err;
}

TEST(CliGenerate, RequestsTakePromptTextAndChatMessagesAsWellAsIds) {
  const std::string file = write_file(
      "cli_text_requests.jsonl",
      "{\"prompt\": \"hello there\", \"max_tokens\": 6, \"temperature\": 0}\n"
      "\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hello there\"}], \"max_tokens\": 6, "
      "\"temperature\": 0}\n"
      "{\"prompt_ids\": [5, 6, 7], \"max_tokens\": 6, \"temperature\": 0}\n");
  const CliRun r = run_cli("generate --model " + tiny_chat() + " --requests " + file + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  const auto text = nlohmann::json::parse(lines[0]);
  const auto chat = nlohmann::json::parse(lines[1]);
  const auto ids = nlohmann::json::parse(lines[2]);
  // The same prompts as --prompt and --prompt --chat give the same greedy tokens.
  const std::string base = "generate --model " + tiny_chat() + " --prompt 'hello there'" +
                           " --max-tokens 6 --temperature 0 --json";
  const auto plain_ref = nlohmann::json::parse(run_cli(base).out);
  const auto chat_ref = nlohmann::json::parse(run_cli(base + " --chat").out);
  EXPECT_EQ(text["prompt_ids"], plain_ref["prompt_ids"]);
  EXPECT_EQ(text["tokens"], plain_ref["tokens"]);
  EXPECT_EQ(text["text"], plain_ref["text"]);
  EXPECT_EQ(chat["prompt_ids"], chat_ref["prompt_ids"]);
  EXPECT_EQ(chat["tokens"], chat_ref["tokens"]);
  EXPECT_NE(text["prompt_ids"], chat["prompt_ids"]);
  EXPECT_EQ(ids["tokens"].size(), 6u);
  EXPECT_FALSE(ids.contains("text"));
}

TEST(CliGenerate, ARequestsLineWithNoPromptOrSeveralIsAnErrorNamingTheLine) {
  const std::string none = write_file("cli_no_prompt.jsonl", "{\"prompt_ids\": [1, 2], \"max_tokens\": 2}\n"
                                                             "{\"max_tokens\": 2}\n");
  const CliRun r = run_cli("generate --model " + tiny_chat() + " --requests " + none);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "requests line 2: give exactly one of \"prompt\" (text), \"messages\" "
                         "(chat) or \"prompt_ids\" (token ids); this line has none of them"))
      << r.err;
  const std::string two = write_file("cli_two_prompts.jsonl", "{\"prompt\": \"hi\", \"prompt_ids\": [1, 2]}\n");
  const CliRun both = run_cli("generate --model " + tiny_chat() + " --requests " + two);
  EXPECT_EQ(both.status, 1);
  EXPECT_TRUE(has(both.err, "requests line 1: ")) << both.err;
  EXPECT_TRUE(has(both.err, "this line has \"prompt\" and \"prompt_ids\"")) << both.err;
  const std::string bad_messages = write_file("cli_bad_messages.jsonl", "{\"messages\": [{\"content\": \"hi\"}]}\n");
  const CliRun roles = run_cli("generate --model " + tiny_chat() + " --requests " + bad_messages);
  EXPECT_TRUE(has(roles.err, "requests line 1: message 1 needs a \"role\"")) << roles.err;
}

// ---- tokenize ------------------------------------------------------------------------------------

TEST(CliTokenize, AFileThatIsNotJsonLinesIsExplainedInWords) {
  const std::string plain = write_file("cli_plain.txt", "Hello world\n");
  const CliRun r = run_cli("tokenize --tokenizer " + tiny_chat() + " --input " + plain);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, plain + ":1: this line is not JSON.")) << r.err;
  EXPECT_TRUE(has(r.err, "one JSON string per line such as \"Hello world\"")) << r.err;
  EXPECT_FALSE(has(r.err, "parse_error")) << r.err;
  const std::string object = write_file("cli_object.jsonl", "\"fine\"\n{\"text\": \"hi\"}\n");
  const CliRun o = run_cli("tokenize --tokenizer " + tiny_chat() + " --input " + object);
  EXPECT_EQ(o.status, 1);
  EXPECT_TRUE(has(o.err, object + ":2: this line is JSON but not a string (it is object)")) << o.err;
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

// tiny-chat-padded: vocab_size 512 over a 480-id tokenizer. Text prompts load the tokenizer, so
// the ids it cannot decode are never sampled; raw ids (no tokenizer) show the fixture does reach
// them at this temperature and seed.
TEST(CliGenerate, TextPromptsNeverSampleIdsTheTokenizerCannotDecode) {
  const std::string model = (test::golden_models_dir() / "tiny-chat-padded").string();
  const std::string sampling = " --max-tokens 64 --temperature 2 --seed 7 --ignore-eos --json";
  auto max_id = [](const std::string& out) {
    int64_t m = -1;
    for (const auto& line : lines_of(out)) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line);
      for (const auto& t : j.at("tokens")) m = std::max<int64_t>(m, t.get<int64_t>());
    }
    return m;
  };
  const CliRun text = run_cli("generate --model " + model + " --prompt hello" + sampling);
  ASSERT_EQ(text.status, 0) << text.err;
  const int64_t text_max = max_id(text.out);
  EXPECT_GE(text_max, 0) << text.out;
  EXPECT_LT(text_max, 480) << text.out;
  const CliRun ids = run_cli("generate --model " + model + " --prompt-ids 1,2,3" + sampling);
  ASSERT_EQ(ids.status, 0) << ids.err;
  EXPECT_GE(max_id(ids.out), 480) << "the control run never reached a padded id: " << ids.out;
}

// --cuda-option is checked before anything loads (or CUDA is even looked for), and --help lists
// every option with its default.
TEST(CliCudaOptions, BadOptionsFailFirstAndHelpListsThem) {
  const auto bad = run_cli("bench --dummy llama-3.2-1b --backend cuda --cuda-option no_such=1");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("unknown key 'no_such'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("decode_waves"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("CUDA is not available"), std::string::npos) << bad.err;
  const auto range = run_cli("bench --dummy llama-3.2-1b --backend cuda --cuda-option decode_waves=0");
  EXPECT_NE(range.err.find("1..64"), std::string::npos) << range.err;
  const auto cpu = run_cli("bench --dummy llama-3.2-1b --backend cpu --cuda-option decode_waves=2");
  EXPECT_EQ(cpu.status, 1);
  EXPECT_NE(cpu.err.find("needs --backend cuda"), std::string::npos) << cpu.err;
  const auto help = run_cli("bench --help");
  EXPECT_NE(help.out.find("--cuda-option"), std::string::npos);
  EXPECT_NE(help.out.find("wide_min_rows=33"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace inferdesk
