// Dummy weights with integer schemes (make_dummy_int_weights, load_dummy_model): each scheme loads
// with its own layout and byte count, names itself and its BF16 lm_head, and runs: the fast CPU
// kernels and the scalar reference generate the same greedy tokens from the same random codes.
#include <gtest/gtest.h>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/engine/model_loader.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

LoadedModel load(LoadQuantization q, CpuIsa isa, bool lm_head = false) {
  LoadOptions lo;
  lo.quantization = q;
  lo.quantize_lm_head = lm_head;
  const auto config = test::golden_models_dir() / "llama" / "config.json";
  return load_dummy_model(config.string(), {}, make_cpu_backend(CpuBackendOptions{2, isa}), 1, {}, lo);
}

std::vector<int32_t> greedy_tokens(LoadedModel m) {
  Engine e(std::move(m), EngineOptions{});
  Request r;
  r.prompt_ids = {1, 5, 9, 13, 2, 7};
  r.params.temperature = 0;
  r.params.max_tokens = 6;
  r.params.ignore_eos = true;
  return generate_all(e, {r})[0].token_ids();
}

TEST(DummyIntWeights, EachSchemeLoadsNamesItselfAndRuns) {
  const int64_t bf16 = load(LoadQuantization::None, CpuIsa::Auto).weight_bytes;
  int64_t bytes[8] = {};
  for (LoadQuantization q : {LoadQuantization::Int8, LoadQuantization::Int4, LoadQuantization::Awq,
                             LoadQuantization::Gptq, LoadQuantization::W8A16, LoadQuantization::W8A8}) {
    LoadedModel fast = load(q, CpuIsa::Auto);
    const std::string what = fast.quantization;
    EXPECT_NE(what.find(describe(dummy_int_scheme(q))), std::string::npos) << what;
    EXPECT_NE(what.find("lm_head BF16"), std::string::npos) << what;
    bytes[static_cast<int>(q)] = fast.weight_bytes;
    EXPECT_LT(fast.weight_bytes, bf16) << what;
    const std::vector<int32_t> got = greedy_tokens(std::move(fast));
    EXPECT_EQ(got.size(), 6u) << what;
    EXPECT_EQ(got, greedy_tokens(load(q, CpuIsa::Scalar))) << what;
  }
  // Same bits, same bytes; zero points cost one more float per group.
  EXPECT_EQ(bytes[static_cast<int>(LoadQuantization::Int4)], bytes[static_cast<int>(LoadQuantization::Gptq)]);
  EXPECT_GT(bytes[static_cast<int>(LoadQuantization::Awq)], bytes[static_cast<int>(LoadQuantization::Gptq)]);
  EXPECT_EQ(bytes[static_cast<int>(LoadQuantization::W8A16)], bytes[static_cast<int>(LoadQuantization::W8A8)]);
  EXPECT_GT(bytes[static_cast<int>(LoadQuantization::W8A16)], bytes[static_cast<int>(LoadQuantization::Awq)]);
}

TEST(DummyIntWeights, AQuantizedLmHeadIsSaidAndCounted) {
  const LoadedModel plain = load(LoadQuantization::Awq, CpuIsa::Auto);
  const LoadedModel head = load(LoadQuantization::Awq, CpuIsa::Auto, true);
  EXPECT_NE(head.quantization.find("lm_head quantized too"), std::string::npos) << head.quantization;
  EXPECT_NE(head.weight_bytes, plain.weight_bytes);
  EXPECT_THROW(load(LoadQuantization::Fp8, CpuIsa::Auto, true), Error);
}

TEST(DummyIntWeights, FoldersRefuseTheDummyOnlySchemes) {
  LoadOptions lo;
  lo.quantization = LoadQuantization::Awq;
  try {
    load_model_folder(test::golden_models_dir() / "llama", make_cpu_backend(1), {}, lo);
    FAIL() << "an awq --quantization of a folder loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
  EXPECT_EQ(parse_load_quantization("w8a8"), LoadQuantization::W8A8);
  EXPECT_THROW(parse_load_quantization("int3"), Error);
}

}  // namespace
}  // namespace inferdesk
