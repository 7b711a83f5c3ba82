// The quantization report (core/engine/quant_eval.h) on the tiny chat model and the shipped
// evaluation text: no quantization gives zero divergence and equal perplexities (the measure is
// consistent), FP8 on load a small but nonzero one, fewer weight bytes, and cancel stops it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/quant_eval.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

std::vector<int32_t> eval_ids(const std::filesystem::path& model) {
  std::ifstream in(test::golden_models_dir().parent_path().parent_path().parent_path() / "resources/eval/declaration.txt");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_GT(text.str().size(), 1000u);
  return Tokenizer::from_dir(model).encode(text.str(), false);
}

TEST(QuantEval, NoQuantizationMeansNoDivergence) {
  const auto dir = test::golden_models_dir() / "tiny-chat";
  QuantEvalOptions o;
  o.quantization = LoadQuantization::None;
  o.max_tokens = 96;
  const QuantEvalReport r = evaluate_quantization(dir, eval_ids(dir), [] { return make_cpu_backend(2); }, o);
  EXPECT_EQ(r.tokens, 95);
  EXPECT_EQ(r.kl_mean, 0.0);
  EXPECT_EQ(r.perplexity_base, r.perplexity_quant);
  EXPECT_EQ(r.top1_agreement, 1.0);
  EXPECT_GT(r.perplexity_base, 1.0);
}

TEST(QuantEval, Fp8OnLoadIsCloseAndSmaller) {
  const auto dir = test::golden_models_dir() / "tiny-chat";
  QuantEvalOptions o;
  o.max_tokens = 200;
  o.chunk = 64;  // several chunks through the paged cache
  int calls = 0;
  o.progress = [&](double f) {
    EXPECT_GT(f, 0.0);
    EXPECT_LE(f, 1.0);
    ++calls;
    return true;
  };
  const QuantEvalReport r = evaluate_quantization(dir, eval_ids(dir), [] { return make_cpu_backend(2); }, o);
  EXPECT_EQ(calls, 8);  // 4 chunks per model
  EXPECT_GT(r.kl_mean, 0.0);
  // A random-weight model's distributions are flat: FP8 moves them a little (measured ~1e-3).
  EXPECT_LT(r.kl_mean, 0.05);
  EXPECT_GE(r.kl_max, r.kl_mean);
  EXPECT_GT(r.top1_agreement, 0.8);
  EXPECT_NEAR(r.perplexity_quant / r.perplexity_base, 1.0, 0.1);
  EXPECT_LT(r.weight_bytes_quant, r.weight_bytes_base);
  EXPECT_EQ(r.decode_tps_base, 0.0);  // not asked for
  // The speed measure itself (the app asks for it on GPUs; the CPU runs the same code).
  QuantEvalOptions speed;
  speed.max_tokens = 32;
  speed.measure_speed = true;
  const QuantEvalReport s = evaluate_quantization(dir, eval_ids(dir), [] { return make_cpu_backend(2); }, speed);
  EXPECT_GT(s.decode_tps_base, 0.0);
  EXPECT_GT(s.decode_tps_quant, 0.0);
  o.progress = [](double) { return false; };
  EXPECT_THROW(evaluate_quantization(dir, eval_ids(dir), [] { return make_cpu_backend(2); }, o), Error);
}

}  // namespace
}  // namespace inferdesk
