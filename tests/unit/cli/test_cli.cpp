// The CLI's stable interface: generate (--prompt-ids, --requests), bench, and error exits.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/golden.h"
#include "tests/unit/cli/cli_run.h"

namespace inferdesk {
namespace {

using test::CliRun;
using test::run_cli;

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

TEST(CliGenerate, PromptIdsJsonMatchesGoldenAndHasTheDocumentedShape) {
  const auto g = test::read_golden("qwen3");
  const auto& c = g.cases[2];
  const CliRun r = run_cli("generate --model " + g.dir.string() + " --prompt-ids " + join(c.prompt_ids) +
                           " --max-tokens 16 --temperature 0 --logprobs 5" + " --backend cpu --json --ignore-eos");
  ASSERT_EQ(r.status, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), c.tokens);
  ASSERT_EQ(j["logprobs"].size(), 16u);
  for (size_t i = 0; i < 16; ++i) {
    ASSERT_EQ(j["logprobs"][i].size(), 5u);
    EXPECT_EQ(j["logprobs"][i][0]["id"].get<int32_t>(), c.top5[i][0].first);
    EXPECT_NEAR(j["logprobs"][i][0]["logprob"].get<double>(), c.top5[i][0].second, 1e-3);
    EXPECT_GE(j["logprobs"][i][0]["logprob"].get<double>(), j["logprobs"][i][4]["logprob"].get<double>());
  }
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_TRUE(j["timing"].contains("time_to_first_token_s"));
}

// --block-size changes the KV cache's paging, not the result: the golden tokens with blocks of
// 8 and 64 tokens (a prompt shorter than one block, then several blocks); other sizes are refused.
TEST(CliGenerate, BlockSizeKeepsTheGoldenTokens) {
  const auto g = test::read_golden("qwen3");
  const auto& c = g.cases[2];
  const std::string base = "generate --model " + g.dir.string() + " --prompt-ids " + join(c.prompt_ids) +
                           " --max-tokens 16 --temperature 0 --backend cpu --json --ignore-eos";
  for (int bs : {8, 64}) {
    const CliRun r = run_cli(base + " --block-size " + std::to_string(bs));
    ASSERT_EQ(r.status, 0) << bs;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].get<std::vector<int32_t>>(), c.tokens) << bs;
  }
  EXPECT_NE(run_cli(base + " --block-size 12").status, 0);
  EXPECT_NE(run_cli(base + " --block-size 0").status, 0);
}

TEST(CliGenerate, RequestsFilePrintsOneLinePerRequestInOrder) {
  const auto g = test::read_golden("mixtral");
  const std::string path = std::string(INFERDESK_BINARY_DIR) + "/cli_requests.jsonl";
  {
    std::ofstream f(path);
    for (int i : {3, 0, 1})
      f << nlohmann::json({{"prompt_ids", g.cases[static_cast<size_t>(i)].prompt_ids},
                           {"max_tokens", 16},
                           {"temperature", 0},
                           {"ignore_eos", true}})
               .dump()
        << "\n";
    f << R"({"prompt_ids":[5,6,7],"max_tokens":4,"temperature":0.8,"seed":42,"ignore_eos":true})"
      << "\n";
  }
  const CliRun r = run_cli("generate --model " + g.dir.string() + " --requests " + path + " --json");
  ASSERT_EQ(r.status, 0);
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]["tokens"].get<std::vector<int32_t>>(), g.cases[3].tokens);
  EXPECT_EQ(out[1]["tokens"].get<std::vector<int32_t>>(), g.cases[0].tokens);
  EXPECT_EQ(out[2]["tokens"].get<std::vector<int32_t>>(), g.cases[1].tokens);
  EXPECT_EQ(out[3]["tokens"].size(), 4u);
  // Same seed, same tokens.
  const CliRun again = run_cli("generate --model " + g.dir.string() + " --requests " + path + " --json");
  std::istringstream lines2(again.out);
  std::string last;
  for (std::string line; std::getline(lines2, line);) last = line;
  EXPECT_EQ(nlohmann::json::parse(last)["tokens"], out[3]["tokens"]);
}

TEST(CliGenerate, BadInputExitsNonZero) {
  const auto dir = test::golden_models_dir() / "llama";
  EXPECT_NE(run_cli("generate --model /nonexistent --prompt-ids 1,2 --json").status, 0);
  EXPECT_NE(run_cli("generate --model " + dir.string() + " --prompt-ids 1,x --json").status, 0);
  EXPECT_NE(run_cli("generate --model " + dir.string() + " --prompt-ids 1,2 --temperature -1").status, 0);
  EXPECT_NE(run_cli("generate --model " + dir.string() + " --prompt-ids 1,99999").status, 0);
}

TEST(CliBench, ReportsTheDocumentedFigures) {
  const auto dir = test::golden_models_dir() / "qwen2_moe";
  const CliRun r = run_cli("bench --model " + dir.string() +
                           " --backend cpu --batch 2 --input-len 8 --output-len 4 --repeat 1 --json");
  ASSERT_EQ(r.status, 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s", "time_to_first_token_s", "peak_rss_bytes",
                        "output_tokens_per_s", "tpot_median_s"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["kv_block_size"].get<int>(), 16);
  EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(j["prefill_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 0);
  // qwen2_moe: 8 experts, top 2, layer 1 dense (mlp_only_layers); a decode step of 2 tokens
  // touches between 2 and 4 experts per MoE layer.
  ASSERT_TRUE(j.contains("moe_routing"));
  const auto& m = j["moe_routing"];
  EXPECT_EQ(m["experts"].get<int64_t>(), 8);
  EXPECT_EQ(m["top_k"].get<int64_t>(), 2);
  EXPECT_EQ(m["moe_layers"].get<int64_t>(), 2);
  EXPECT_EQ(m["step_tokens"].get<int64_t>(), 2);
  const double d = m["expected_distinct_experts_per_step"].get<double>();
  EXPECT_GE(d, 2.0);
  EXPECT_LE(d, 4.0);
  EXPECT_GE(m["max_expert_load_over_mean"].get<double>(), 1.0);
}

TEST(CliBench, DenseModelsReportNoRouting) {
  const auto dir = test::golden_models_dir() / "llama";
  const CliRun r = run_cli("bench --model " + dir.string() +
                           " --backend cpu --batch 1 --input-len 4 --output-len 2 --repeat 1 --json");
  ASSERT_EQ(r.status, 0);
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("moe_routing"));
}

// --overlap-steps (the default) and --no-overlap-steps are accepted everywhere; the CPU backend
// cannot chain steps, so the report says the steps were not overlapped either way.
TEST(CliBench, OverlapStepsIsReportedAsEffective) {
  const auto dir = test::golden_models_dir() / "llama";
  const std::string base = "bench --model " + dir.string() +
                           " --backend cpu --batch 1 --input-len 4 --output-len 2 --repeat 1 --json";
  const CliRun with = run_cli(base + " --overlap-steps");
  ASSERT_EQ(with.status, 0);
  EXPECT_FALSE(nlohmann::json::parse(with.out)["overlap_steps"].get<bool>());
  const CliRun without = run_cli(base + " --no-overlap-steps");
  ASSERT_EQ(without.status, 0);
  EXPECT_FALSE(nlohmann::json::parse(without.out)["overlap_steps"].get<bool>());
  EXPECT_EQ(nlohmann::json::parse(without.out)["overlapped_steps"].get<int>(), 0);
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

TEST(CliGenerate, ChatPromptIsTheTemplateOutputTokenized) {
  const auto dir = test::golden_models_dir() / "tiny-chat";
  const std::string input = std::string(INFERDESK_BINARY_DIR) + "/cli_chat_input.jsonl";
  {
    std::ofstream f(input);
    f << nlohmann::json("<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n").dump() << "\n";
  }
  const CliRun ids = run_cli("tokenize --tokenizer " + dir.string() + " --input " + input);
  ASSERT_EQ(ids.status, 0);
  const auto prompt_ids = nlohmann::json::parse(ids.out)["ids"].get<std::vector<int32_t>>();
  ASSERT_GT(prompt_ids.size(), 5u);

  const CliRun chat = run_cli("generate --model " + dir.string() +
                              " --prompt 'Hello there' --chat --max-tokens 8 --temperature 0 --json");
  ASSERT_EQ(chat.status, 0);
  const auto j = nlohmann::json::parse(chat.out);
  EXPECT_EQ(j["prompt_tokens"].get<size_t>(), prompt_ids.size());
  EXPECT_TRUE(j.contains("text"));

  const CliRun raw = run_cli("generate --model " + dir.string() + " --prompt-ids " + join(prompt_ids) +
                             " --max-tokens 8 --temperature 0 --json");
  ASSERT_EQ(raw.status, 0);
  EXPECT_EQ(nlohmann::json::parse(raw.out)["tokens"], j["tokens"]);
}

TEST(CliGenerate, TextPromptWithoutTokenizerIsAClearError) {
  const auto dir = test::golden_models_dir() / "qwen2";  // no tokenizer files
  EXPECT_NE(run_cli("generate --model " + dir.string() + " --prompt hi --json").status, 0);
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

TEST(CliInfo, DescribesAFolderAndEstimatesMemory) {
  const auto dir = test::golden_models_dir() / "tiny-chat";
  const CliRun r = run_cli("info --model " + dir.string() + " --context 1000 --json");
  ASSERT_EQ(r.status, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model_type"], "qwen2");
  EXPECT_EQ(j["dtype"], "BF16");
  EXPECT_TRUE(j["has_tokenizer"].get<bool>());
  EXPECT_TRUE(j["has_chat_template"].get<bool>());
  EXPECT_EQ(j["parameters"], j["active_parameters"]);
  // 2 layers x 2 KV heads x 32 dims x (K and V) x 4 bytes, 1000 tokens rounded up to 1008.
  EXPECT_EQ(j["cpu_estimate"]["kv_bytes_per_token"].get<int64_t>(), 2 * 2 * 32 * 2 * 4);
  EXPECT_EQ(j["cpu_estimate"]["kv_cache_bytes"].get<int64_t>(), 2 * 2 * 32 * 2 * 4 * 1008);
  EXPECT_NE(run_cli("info --model /nonexistent --json").status, 0);
}

TEST(CliInfo, ShowsTheQuantizationOfAnFp8Folder) {
  const auto dir = test::golden_models_dir().parent_path() / "models-fp8" / "qwen3-block";
  const CliRun r = run_cli("info --model " + dir.string() + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dtype"], "F8_E4M3");
  EXPECT_NE(j["quantization"].get<std::string>().find("block 128x128"), std::string::npos) << j["quantization"];
  // FP8 projections, BF16 embeddings and norms: between one and two bytes per parameter.
  EXPECT_GT(j["bytes_per_parameter"].get<double>(), 1.0);
  EXPECT_LT(j["bytes_per_parameter"].get<double>(), 2.0);
  // The CUDA estimate counts the weights as stored, not as BF16.
  EXPECT_EQ(j["cuda_estimate"]["weights_bytes"], j["weight_bytes"]);
}

TEST(CliInfo, ShowsIntegerSchemesAndEstimatesQuantizeOnLoad) {
  const auto awq = test::golden_models_dir().parent_path() / "int" / "llama-awq";
  CliRun r = run_cli("info --model " + awq.string() + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["quantization"].get<std::string>().find("awq: int4 asymmetric group 32"), std::string::npos)
      << j["quantization"];
  EXPECT_FALSE(j["cuda_runs_weights"].get<bool>());
  EXPECT_NE(run_cli("info --model " + awq.string() + " --quantization int4").status, 0);  // already quantized
  const auto llama = test::golden_models_dir() / "llama";
  double bytes[3];
  const char* schemes[] = {"none", "int8", "int4"};
  for (int i = 0; i < 3; ++i) {
    r = run_cli("info --model " + llama.string() + " --json --quantization " + schemes[i]);
    ASSERT_EQ(r.status, 0) << r.err;
    j = nlohmann::json::parse(r.out);
    bytes[i] = j["bytes_per_parameter"].get<double>();
    EXPECT_EQ(j["cpu_estimate"]["weights_bytes"].get<double>(), std::floor(bytes[i] * j["parameters"].get<double>()))
        << schemes[i];
  }
  EXPECT_DOUBLE_EQ(bytes[0], 2.0);
  EXPECT_LT(bytes[1], bytes[0]);
  EXPECT_LT(bytes[2], bytes[1]);
  const CliRun text = run_cli("info --model " + llama.string() + " --quantization int4");
  EXPECT_NE(text.out.find("int4 symmetric group 128"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("bits per weight"), std::string::npos) << text.out;
}

TEST(CliGenerate, RunsIntegerFoldersAndQuantizesOnLoad) {
  const auto awq = test::golden_models_dir().parent_path() / "int" / "llama-awq";
  CliRun r = run_cli("generate --model " + awq.string() + " --prompt-ids 1,17,99 --max-tokens 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 tokens"), std::string::npos) << r.out;
  r = run_cli("generate --model " + (test::golden_models_dir() / "llama").string() +
              " --quantization int4 --prompt-ids 1,17,99 --max-tokens 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 tokens"), std::string::npos) << r.out;
}

TEST(CliQuantize, ReportsWhatFp8Changes) {
  const auto dir = test::golden_models_dir() / "tiny-chat";
  const CliRun r = run_cli("quantize --model " + dir.string() + " --report --tokens 64 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["report"];
  EXPECT_EQ(j["tokens"], 63);
  EXPECT_GT(j["perplexity_base"].get<double>(), 1.0);
  EXPECT_GT(j["kl_mean"].get<double>(), 0.0);
  EXPECT_LT(j["weight_bytes_quant"].get<int64_t>(), j["weight_bytes_base"].get<int64_t>());
  EXPECT_NE(run_cli("quantize --model " + dir.string()).status, 0);  // neither --out nor --report
}

TEST(CliBench, QuantizesDummyWeightsToFp8) {
  const CliRun r = run_cli("bench --dummy qwen3-0.6b --quantization fp8 --kv-cache-dtype fp8 --batch 1 "
                           "--input-len 4 --output-len 2 --repeat 1 --kv-cache-mb 64 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["quantization"].get<std::string>().find("fp8 e4m3 per-channel"), std::string::npos);
  EXPECT_EQ(j["kv_cache_dtype"], "fp8");
  EXPECT_GT(j["output_tokens_per_s"].get<double>(), 0.0);
  EXPECT_NE(run_cli("bench --dummy qwen3-0.6b --quantization int3 --json").status, 0);
}

}  // namespace
}  // namespace inferdesk

namespace inferdesk {
namespace {

int count_id(const nlohmann::json& ids, int32_t id) {
  int n = 0;
  for (const auto& v : ids) n += v.get<int32_t>() == id;
  return n;
}

TEST(CliGenerate, SpecialTokenStringsInUserTextStayPlainUnlessAsked) {
  const auto dir = test::golden_models_dir() / "tiny-chat";
  const std::string input = std::string(INFERDESK_BINARY_DIR) + "/cli_im_end.jsonl";
  {
    std::ofstream f(input);
    f << "\"<|im_end|>\"\n";
  }
  const CliRun tok = run_cli("tokenize --tokenizer " + dir.string() + " --input " + input);
  ASSERT_EQ(tok.status, 0);
  const auto ids = nlohmann::json::parse(tok.out)["ids"];
  ASSERT_EQ(ids.size(), 1u);
  const int32_t im_end = ids[0].get<int32_t>();
  const std::string base = "generate --model " + dir.string() +
                           " --prompt 'hi <|im_end|> there' --chat --max-tokens 1 --temperature 0 --json";
  const CliRun safe = run_cli(base);
  const CliRun parsed = run_cli(base + " --parse-special-tokens");
  ASSERT_EQ(safe.status, 0);
  ASSERT_EQ(parsed.status, 0);
  // The template closes the user turn with one <|im_end|>; the typed one is plain text by default.
  EXPECT_EQ(count_id(nlohmann::json::parse(safe.out)["prompt_ids"], im_end), 1);
  EXPECT_EQ(count_id(nlohmann::json::parse(parsed.out)["prompt_ids"], im_end), 2);
}

}  // namespace
}  // namespace inferdesk
