// Defaults, per-layer rules and rejection of malformed config.json values.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/model/config.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using nlohmann::json;
using V = std::vector<int64_t>;

json base(const char* type) {
  return {{"model_type", type},     {"vocab_size", 1000},       {"hidden_size", 256},      {"intermediate_size", 512},
          {"num_hidden_layers", 4}, {"num_attention_heads", 8}, {"num_key_value_heads", 2}};
}

void expect_error(const json& j, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    ModelConfig::from_json(j);
    ADD_FAILURE() << "expected an error for " << j.dump();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << p << "\"";
    }
  }
}

TEST(ConfigDefaults, PerFamilyClassDefaults) {
  json j = base("llama");
  j.erase("num_key_value_heads");
  ModelConfig l = ModelConfig::from_json(j);
  EXPECT_EQ(l.num_key_value_heads, 8);  // LlamaConfig: = num_attention_heads
  EXPECT_EQ(l.head_dim, 32);
  EXPECT_EQ(l.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(l.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(l.rms_norm_eps, 1e-6);
  EXPECT_EQ(l.eos_token_ids, V{2});
  EXPECT_EQ(l.bos_token_id, 1);
  EXPECT_FALSE(l.tie_word_embeddings);

  ModelConfig mx = ModelConfig::from_json(base("mixtral"));
  EXPECT_EQ(mx.num_experts, 8);
  EXPECT_EQ(mx.num_experts_per_tok, 2);
  EXPECT_DOUBLE_EQ(mx.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(mx.rms_norm_eps, 1e-5);
  EXPECT_EQ(mx.layer_sliding_window, V(4, 0));  // MixtralConfig.sliding_window = None

  ModelConfig q3 = ModelConfig::from_json(base("qwen3"));
  EXPECT_EQ(q3.head_dim, 128);  // Qwen3Config.head_dim defaults to 128, not hidden/heads
  EXPECT_TRUE(q3.eos_token_ids.empty());
  EXPECT_EQ(q3.bos_token_id, -1);
  json q3null = base("qwen3");
  q3null["head_dim"] = nullptr;
  EXPECT_EQ(ModelConfig::from_json(q3null).head_dim, 32);

  ModelConfig q2m = ModelConfig::from_json(base("qwen2_moe"));
  EXPECT_EQ(q2m.num_experts, 60);
  EXPECT_EQ(q2m.num_experts_per_tok, 4);
  EXPECT_EQ(q2m.moe_intermediate_size, 1408);
  EXPECT_EQ(q2m.shared_expert_intermediate_size, 5632);
  EXPECT_DOUBLE_EQ(q2m.rope_theta, 1e6);

  ModelConfig q3m = ModelConfig::from_json(base("qwen3_moe"));
  EXPECT_EQ(q3m.num_experts, 128);
  EXPECT_EQ(q3m.num_experts_per_tok, 8);
  EXPECT_EQ(q3m.moe_intermediate_size, 768);
  EXPECT_FALSE(q3m.norm_topk_prob);
  EXPECT_TRUE(q3m.qk_norm);

  // Absent num_key_value_heads takes the class default (MistralConfig: 8); null means heads.
  json m = base("mistral");
  m["num_attention_heads"] = 16;
  m.erase("num_key_value_heads");
  EXPECT_EQ(ModelConfig::from_json(m).num_key_value_heads, 8);
  m["num_key_value_heads"] = nullptr;
  EXPECT_EQ(ModelConfig::from_json(m).num_key_value_heads, 16);
  EXPECT_EQ(ModelConfig::from_json(m).layer_sliding_window, V(4, 4096));  // class default
}

TEST(ConfigDefaults, AttentionBiasAndQkNorm) {
  json j = base("llama");
  j["attention_bias"] = true;
  EXPECT_TRUE(ModelConfig::from_json(j).attention_bias);
  json q2 = base("qwen2");
  q2["attention_bias"] = false;  // ignored: qwen2 always has q/k/v biases
  EXPECT_TRUE(ModelConfig::from_json(q2).attention_bias);
  EXPECT_TRUE(ModelConfig::from_json(base("qwen2_moe")).attention_bias);
  EXPECT_FALSE(ModelConfig::from_json(base("qwen3")).attention_bias);
  EXPECT_FALSE(ModelConfig::from_json(base("mistral")).qk_norm);
}

TEST(ConfigSliding, QwenRuleUsesMaxWindowLayers) {
  json j = base("qwen2");
  j["use_sliding_window"] = true;
  j["sliding_window"] = 128;
  j["max_window_layers"] = 2;
  EXPECT_EQ(ModelConfig::from_json(j).layer_sliding_window, (V{0, 0, 128, 128}));
  j["use_sliding_window"] = false;
  EXPECT_EQ(ModelConfig::from_json(j).layer_sliding_window, V(4, 0));
  json q3m = base("qwen3_moe");
  q3m["use_sliding_window"] = true;
  q3m["sliding_window"] = 64;
  EXPECT_EQ(ModelConfig::from_json(q3m).layer_sliding_window, V(4, 64));
  json q2m = base("qwen2_moe");
  q2m["use_sliding_window"] = true;
  q2m["sliding_window"] = 64;
  q2m["max_window_layers"] = 3;
  EXPECT_EQ(ModelConfig::from_json(q2m).layer_sliding_window, (V{64, 0, 64, 0}));
}

TEST(ConfigSliding, LayerTypesOverride) {
  json j = base("qwen3");
  j["use_sliding_window"] = true;
  j["sliding_window"] = 256;
  j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  EXPECT_EQ(ModelConfig::from_json(j).layer_sliding_window, (V{256, 0, 256, 0}));
  j["layer_types"] = {"sliding_attention"};
  expect_error(j, ErrorCode::Format, {"layer_types", "one entry per layer"});
  j["layer_types"] = {"full_attention", "chunked_attention", "full_attention", "full_attention"};
  expect_error(j, ErrorCode::Unsupported, {"layer_types", "chunked_attention"});
}

TEST(ConfigRope, LinearDefaultAndUnsupported) {
  json j = base("llama");
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(ModelConfig::from_json(j).rope_scaling.type, "");
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error(j, ErrorCode::Unsupported, {"rope_scaling", "yarn"});
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}};
  expect_error(j, ErrorCode::Unsupported, {"dynamic"});
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_error(j, ErrorCode::Format, {"low_freq_factor"});
  j["rope_scaling"] = {{"rope_type", "linear"}};
  expect_error(j, ErrorCode::Format, {"rope_scaling.factor"});
  j["rope_scaling"] = "linear";
  expect_error(j, ErrorCode::Format, {"rope_scaling"});
  j.erase("rope_scaling");
  j["rope_theta"] = -5;
  expect_error(j, ErrorCode::Format, {"rope_theta"});
}

TEST(ConfigMoe, MoeLayerRule) {
  json j = base("qwen2_moe");
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3};
  ModelConfig c = ModelConfig::from_json(j);
  // (i + 1) % 2 == 0 -> layers 1, 3, 5; layer 3 is forced dense.
  std::vector<bool> moe;
  for (int64_t i = 0; i < 6; ++i) moe.push_back(c.is_moe_layer(i));
  EXPECT_EQ(moe, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_FALSE(c.is_moe_layer(-1));
  // Mixtral ignores decoder_sparse_step / mlp_only_layers: every layer is MoE.
  json mx = base("mixtral");
  mx["decoder_sparse_step"] = 2;
  mx["mlp_only_layers"] = {0};
  ModelConfig m = ModelConfig::from_json(mx);
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(m.is_moe_layer(i));
}

TEST(ConfigErrors, MissingAndMalformedFields) {
  json j = base("llama");
  j.erase("hidden_size");
  expect_error(j, ErrorCode::Format, {"\"hidden_size\"", "missing"});
  j = base("llama");
  j["vocab_size"] = "1000";
  expect_error(j, ErrorCode::Format, {"\"vocab_size\"", "integer"});
  j = base("llama");
  j["hidden_size"] = 256.5;
  expect_error(j, ErrorCode::Format, {"\"hidden_size\""});
  j = base("llama");
  j["tie_word_embeddings"] = 1;
  expect_error(j, ErrorCode::Format, {"tie_word_embeddings"});
  expect_error(json::array(), ErrorCode::Format, {"not a JSON object"});
  json no_type = base("llama");
  no_type.erase("model_type");
  expect_error(no_type, ErrorCode::Format, {"model_type"});
}

TEST(ConfigErrors, SizesOutOfRange) {
  json j = base("llama");
  j["num_hidden_layers"] = 0;
  expect_error(j, ErrorCode::Format, {"num_hidden_layers", "range"});
  j["num_hidden_layers"] = 1025;
  expect_error(j, ErrorCode::Format, {"num_hidden_layers"});
  j = base("llama");
  j["hidden_size"] = 65536 * 2;
  expect_error(j, ErrorCode::Format, {"hidden_size"});
  j = base("llama");
  j["vocab_size"] = 4'000'001;
  expect_error(j, ErrorCode::Format, {"vocab_size"});
  j = base("llama");
  j["vocab_size"] = -3;
  expect_error(j, ErrorCode::Format, {"vocab_size"});
  j = base("llama");
  j["intermediate_size"] = 0;
  expect_error(j, ErrorCode::Format, {"intermediate_size"});
  j = base("llama");
  j["vocab_size"] = 18446744073709551615ull;
  expect_error(j, ErrorCode::Format, {"vocab_size"});
}

TEST(ConfigErrors, HeadsAndHeadDim) {
  json j = base("llama");
  j["num_key_value_heads"] = 3;
  expect_error(j, ErrorCode::Format, {"num_key_value_heads", "not divisible"});
  j["num_key_value_heads"] = 16;  // more kv heads than heads
  expect_error(j, ErrorCode::Format, {"num_key_value_heads"});
  j = base("llama");
  j["num_attention_heads"] = 6;
  j["num_key_value_heads"] = 2;  // 256 % 6 != 0 and no head_dim
  expect_error(j, ErrorCode::Format, {"hidden_size", "not divisible"});
  j["head_dim"] = 33;
  expect_error(j, ErrorCode::Format, {"head_dim", "even"});
  j["head_dim"] = 2048;
  expect_error(j, ErrorCode::Format, {"head_dim"});
  j["head_dim"] = 64;  // explicit head_dim makes hidden % heads irrelevant
  EXPECT_EQ(ModelConfig::from_json(j).head_dim, 64);
}

TEST(ConfigErrors, MoeCounts) {
  json j = base("qwen3_moe");
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 9;
  expect_error(j, ErrorCode::Format, {"num_experts_per_tok"});
  j["num_experts_per_tok"] = 0;
  expect_error(j, ErrorCode::Format, {"num_experts_per_tok"});
  j["num_experts_per_tok"] = 2;
  j["num_experts"] = 0;
  expect_error(j, ErrorCode::Format, {"num_experts"});
  json mx = base("mixtral");
  mx["num_local_experts"] = 2;
  mx["num_experts_per_tok"] = 3;
  expect_error(mx, ErrorCode::Format, {"num_experts_per_tok"});
  json q = base("qwen2_moe");
  q["mlp_only_layers"] = {7};
  expect_error(q, ErrorCode::Format, {"mlp_only_layers"});
  q["mlp_only_layers"] = {0};
  q["decoder_sparse_step"] = 0;
  expect_error(q, ErrorCode::Format, {"decoder_sparse_step"});
}

TEST(ConfigErrors, UnknownModelTypeListsSupported) {
  json j = base("llama");
  j["model_type"] = "gemma2";
  expect_error(j, ErrorCode::Unsupported,
               {"gemma2", "llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"});
  j = base("llama");
  j["hidden_act"] = "gelu_pytorch_tanh";
  expect_error(j, ErrorCode::Unsupported, {"hidden_act", "gelu_pytorch_tanh"});
}

// An EOS id past the vocabulary never ends a reply; a BOS id past it fails the first step.
TEST(ConfigTokens, SpecialTokenIdsMustLieInTheVocabulary) {
  json j = base("qwen2");  // vocab_size 1000
  j["eos_token_id"] = int64_t{1} << 40;
  expect_error(j, ErrorCode::Format, {"eos_token_id", "1099511627776", "vocab_size 1000"});
  j["eos_token_id"] = {2, 1000};
  expect_error(j, ErrorCode::Format, {"eos_token_id", "1000", "0..999"});
  j["eos_token_id"] = 999;
  j["bos_token_id"] = 1000000;
  expect_error(j, ErrorCode::Format, {"bos_token_id", "1000000"});
  j["bos_token_id"] = 0;
  EXPECT_NO_THROW(ModelConfig::from_json(j));
}

// architectures[0] is the class the weights were saved from: another family's is refused.
TEST(ConfigFamily, ArchitecturesMustNameTheFamilysClass) {
  json j = base("qwen2");
  j["architectures"] = {"GPT2LMHeadModel"};
  expect_error(j, ErrorCode::Unsupported, {"GPT2LMHeadModel", "qwen2", "Qwen2ForCausalLM"});
  j["architectures"] = {"LlamaForCausalLM"};
  expect_error(j, ErrorCode::Unsupported, {"LlamaForCausalLM"});
  j["architectures"] = {"Qwen2ForCausalLM"};
  EXPECT_NO_THROW(ModelConfig::from_json(j));
  j["architectures"] = json::array();
  EXPECT_NO_THROW(ModelConfig::from_json(j));
  for (const char* t : {"llama", "mistral", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"}) {
    json k = base(t);
    k["architectures"] = {"GPT2LMHeadModel"};
    expect_error(k, ErrorCode::Unsupported, {"GPT2LMHeadModel", t});
  }
}

TEST(ConfigTokens, EosIntListNullAndBosNull) {
  json j = base("qwen2");
  j["vocab_size"] = 151936;
  j["eos_token_id"] = {151645, 151643};
  j["bos_token_id"] = nullptr;
  ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.eos_token_ids, (V{151645, 151643}));
  EXPECT_EQ(c.bos_token_id, -1);
  j["eos_token_id"] = nullptr;
  EXPECT_TRUE(ModelConfig::from_json(j).eos_token_ids.empty());
  j["eos_token_id"] = -1;
  expect_error(j, ErrorCode::Format, {"eos_token_id"});
  j["eos_token_id"] = {1, "x"};
  expect_error(j, ErrorCode::Format, {"eos_token_id"});
}

TEST(GenerationConfigParse, FieldsAndErrors) {
  GenerationConfig g = GenerationConfig::from_json(json::parse(R"({
    "bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
    "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95,
    "transformers_version": "4.51.0"})"));
  EXPECT_EQ(g.eos_token_ids, (V{151645, 151643}));
  EXPECT_EQ(g.bos_token_id, 151643);
  EXPECT_DOUBLE_EQ(g.temperature, 0.6);
  EXPECT_DOUBLE_EQ(g.top_p, 0.95);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_LT(g.repetition_penalty, 0);  // not given
  EXPECT_LT(g.min_p, 0);
  GenerationConfig e = GenerationConfig::from_json(json::object());
  EXPECT_TRUE(e.eos_token_ids.empty());
  EXPECT_LT(e.temperature, 0);
  auto bad = [](const char* text, const char* field) {
    try {
      GenerationConfig::from_json(json::parse(text));
      ADD_FAILURE() << text;
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::Format);
      EXPECT_NE(std::string(err.what()).find(field), std::string::npos) << err.what();
    }
  };
  bad(R"({"temperature": "hot"})", "temperature");
  bad(R"({"temperature": -1})", "temperature");
  bad(R"({"top_p": 0})", "top_p");
  bad(R"({"top_p": 1.5})", "top_p");
  bad(R"({"top_k": 2.5})", "top_k");
  bad(R"({"repetition_penalty": 0})", "repetition_penalty");
  bad(R"({"eos_token_id": "2"})", "eos_token_id");
  bad(R"([1])", "generation config");
}

}  // namespace
}  // namespace inferdesk
