// Hostile model folders (tests/support/hostile_folder.h): what `info` (inspect_model_folder)
// accepts, `generate` (load_model_folder) must load, and what one refuses the other refuses with
// the same typed error naming the tensor or field.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "core/engine/model_info.h"
#include "core/engine/model_loader.h"
#include "core/util/error.h"
#include "tests/support/hostile_folder.h"

namespace inferdesk {
namespace {

using test::HostileFolder;
using Tensor = HostileFolder::Tensor;

struct Refusal {
  bool thrown = false;
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

template <typename F>
Refusal refusal_of(F&& f) {
  Refusal r;
  try {
    f();
  } catch (const Error& e) {
    r = {true, e.code(), e.what()};
  }
  return r;
}

// Both ways in refuse the folder with `code` and a message containing `needle`.
void expect_refused(const HostileFolder& h, ErrorCode code, const std::string& needle) {
  const Refusal info = refusal_of([&] { inspect_model_folder(h.dir()); });
  const Refusal load = refusal_of([&] { load_model_folder(h.dir(), make_cpu_backend(1)); });
  ASSERT_TRUE(info.thrown) << "info accepted it (generate: " << load.message << ")";
  ASSERT_TRUE(load.thrown) << "generate accepted it (info: " << info.message << ")";
  EXPECT_EQ(info.code, code) << info.message;
  EXPECT_EQ(load.code, code) << load.message;
  EXPECT_NE(info.message.find(needle), std::string::npos) << info.message;
  EXPECT_NE(load.message.find(needle), std::string::npos) << load.message;
}

TEST(ModelValidation, MissingLmHeadIsRefusedByInfoAsByGenerate) {
  HostileFolder h("tiny-chat");
  h.edit_tensor("lm_head.weight", [](Tensor&) { return false; });
  expect_refused(h, ErrorCode::NotFound, "lm_head.weight");
}

TEST(ModelValidation, TransposedEmbeddingIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_tensor("model.embed_tokens.weight", [](Tensor& t) {
    std::swap(t.shape[0], t.shape[1]);
    return true;
  });
  expect_refused(h, ErrorCode::Format, "model.embed_tokens.weight");
}

TEST(ModelValidation, WrongQProjShapeIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_tensor("model.layers.1.self_attn.q_proj.weight", [](Tensor& t) {
    t.shape = {t.shape[0] / 2, t.shape[1] * 2};
    return true;
  });
  expect_refused(h, ErrorCode::Format, "model.layers.1.self_attn.q_proj.weight");
}

TEST(ModelValidation, HeadDimInconsistentWithTheTensorsIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_config([](nlohmann::json& c) { c["head_dim"] = 64; });  // the tensors have 128 / 4 = 32
  expect_refused(h, ErrorCode::Format, "q_proj.weight");
}

TEST(ModelValidation, VocabSizeUnlikeTheEmbeddingIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_config([](nlohmann::json& c) { c["vocab_size"] = 3; });
  expect_refused(h, ErrorCode::Format, "model.embed_tokens.weight");
}

TEST(ModelValidation, MoeConfigWithoutExpertTensorsIsRefused) {
  HostileFolder h("qwen2_moe");
  h.edit_tensors([](Tensor& t) { return t.name.find(".experts.") == std::string::npos; });
  expect_refused(h, ErrorCode::NotFound, ".experts.0.");
}

TEST(ModelValidation, U8EmbeddingIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_tensor("model.embed_tokens.weight", [](Tensor& t) {
    t.dtype = "U8";
    t.bytes.resize(t.bytes.size() / 2);
    return true;
  });
  expect_refused(h, ErrorCode::Unsupported, "model.embed_tokens.weight");
}

TEST(ModelValidation, ArchitectureOfAnotherFamilyIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_config([](nlohmann::json& c) { c["architectures"] = {"GPT2LMHeadModel"}; });
  expect_refused(h, ErrorCode::Unsupported, "GPT2LMHeadModel");
}

TEST(ModelValidation, SpecialTokenIdsOutsideTheVocabularyAreRefused) {
  {
    HostileFolder h("tiny-chat");
    h.edit_config([](nlohmann::json& c) { c["eos_token_id"] = int64_t{1} << 40; });
    expect_refused(h, ErrorCode::Format, "eos_token_id");
  }
  {
    HostileFolder h("tiny-chat");
    h.edit_json("generation_config.json", [](nlohmann::json& g) { g["bos_token_id"] = 1000000; });
    expect_refused(h, ErrorCode::Format, "bos_token_id");
  }
  {
    HostileFolder h("tiny-chat");
    h.edit_json("generation_config.json", [](nlohmann::json& g) { g["eos_token_id"] = {2, 480}; });
    expect_refused(h, ErrorCode::Format, "generation_config.json");
  }
}

TEST(ModelValidation, UnknownQuantMethodIsRefusedNamingItAndTheSupported) {
  HostileFolder h("tiny-chat");
  h.edit_config([](nlohmann::json& c) { c["quantization_config"] = {{"quant_method", "bitsandbytes"}}; });
  expect_refused(h, ErrorCode::Unsupported, "bitsandbytes");
  const Refusal r = refusal_of([&] { inspect_model_folder(h.dir()); });
  EXPECT_NE(r.message.find("awq"), std::string::npos) << r.message;
}

// A quantization_config the tensors do not follow: BF16 weights under an "awq" config would
// otherwise load as BF16 with the config ignored.
TEST(ModelValidation, QuantizationConfigWithoutQuantizedTensorsIsRefused) {
  HostileFolder h("tiny-chat");
  h.edit_config([](nlohmann::json& c) {
    c["quantization_config"] = {
        {"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"version", "gemm"}, {"zero_point", true}};
  });
  expect_refused(h, ErrorCode::Format, "quantization_config");
}

// Little-endian bits of a BF16 NaN written into element `i` of a BF16 tensor.
void poison_bf16(Tensor& t, size_t i, uint16_t bits) { std::memcpy(t.bytes.data() + 2 * i, &bits, 2); }

TEST(ModelValidation, NonFiniteWeightIsRefusedAtLoadNamingTheTensor) {
  for (uint16_t bits : {uint16_t{0x7FC0}, uint16_t{0xFF80}}) {  // NaN, -Inf
    HostileFolder h("tiny-chat");
    h.edit_tensor("model.layers.1.mlp.up_proj.weight", [&](Tensor& t) {
      poison_bf16(t, 300, bits);
      return true;
    });
    const Refusal r = refusal_of([&] { load_model_folder(h.dir(), make_cpu_backend(1)); });
    ASSERT_TRUE(r.thrown) << bits;
    EXPECT_EQ(r.code, ErrorCode::Format);
    EXPECT_NE(r.message.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("element 300 (row 2, column 44)"), std::string::npos) << r.message;
  }
}

// Every golden fixture, dense, MoE, FP8 and integer, still passes the checks it now goes through.
TEST(ModelValidation, EveryGoldenFolderPasses) {
  const auto root = test::golden_models_dir().parent_path();
  int checked = 0;
  for (const char* group : {"models", "models-fp8", "int"}) {
    for (const auto& e : std::filesystem::directory_iterator(root / group)) {
      if (!e.is_directory() || !std::filesystem::exists(e.path() / "config.json")) continue;
      EXPECT_NO_THROW(inspect_model_folder(e.path())) << e.path();
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace inferdesk
