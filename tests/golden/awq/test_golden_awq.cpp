// AWQ golden checks:
//  - tests/golden/int/awq-ours is an AWQ folder written by InferDesk (`inferdesk-cli quantize
//    --model tests/golden/models/tiny-chat --method awq`); tests/golden/int/awq-ours-autoawq.safetensors
//    holds AutoAWQ's own dequantize_gemm of it (tools/golden/check_awq_autoawq.py; CI has no
//    python3-torch, so the reference is a committed fixture). Our reader must give the same weights
//    bit for bit (AutoAWQ computes in the scales' F16, so ours are compared after rounding to F16,
//    one rounding of the same exact product), and our packer must write the fixture's bytes again.
//  - On a model with outlier input channels, AWQ beats INT4 round-to-nearest on KL and perplexity.
//  - The in-app schemes' figures on the golden models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "core/io/safetensors.h"
#include "core/io/safetensors_writer.h"
#include "core/quant/awq_export.h"
#include "core/quant/quant_schemes.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {
namespace fs = std::filesystem;

fs::path source_dir() { return test::golden_models_dir().parent_path().parent_path().parent_path(); }

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_GT(s.str().size(), 1000u) << p;
  return s.str();
}

TEST(GoldenAwq, AutoAwqDequantizerGivesOurWeightsBitForBit) {
  const fs::path int_dir = test::golden_models_dir().parent_path() / "int";
  const ModelFolder ours = ModelFolder::open(int_dir / "awq-ours");
  const ModelFolder ref_folder = ModelFolder::open(int_dir / "awq-ours");  // for its config
  const SafetensorsFile ref = SafetensorsFile::open(int_dir / "awq-ours-autoawq.safetensors");
  const QuantConfig& qc = ours.config().quantization;
  ASSERT_EQ(qc.int_packing, IntPacking::Awq);
  int modules = 0;
  for (const HostTensor& r : ref.tensors()) {
    const std::string m = r.name.substr(0, r.name.size() - std::string(".dequantized").size());
    const int64_t N = r.shape[0], K = r.shape[1];
    const HostIntWeight h = read_int_weight(IntPacking::Awq, qc.groups.at(0).scheme, m, N, K,
                                            [&](const std::string& n) { return ours.find(n); });
    int64_t differ = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const uint16_t a = f32_to_f16(h.dequantized(n, k)), b = f32_to_f16(float_at(r, n * K + k));
        differ += a != b;
      }
    EXPECT_EQ(differ, 0) << m;
    const AwqPacked p = pack_awq(h);  // and our packer writes exactly the committed bytes again
    for (const auto& [suffix, bytes] : {std::pair{".qweight", &p.qweight}, {".qzeros", &p.qzeros},
                                        {".scales", &p.scales}}) {
      const HostTensor* t = ours.find(m + suffix);
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(t->nbytes, bytes->size());
      EXPECT_EQ(std::memcmp(t->data, bytes->data(), t->nbytes), 0) << m << suffix;
    }
    ++modules;
  }
  EXPECT_EQ(modules, 14);
}

// tiny-chat with a few input channels of every q/k/v and gate/up made 50x larger through the norm
// weight, the matching weight columns 50x smaller: the float model is nearly unchanged (BF16
// rounding), but round-to-nearest loses those columns.
void make_outlier_model(const fs::path& src, const fs::path& out) {
  const ModelFolder f = ModelFolder::open(src);
  fs::create_directories(out);
  for (const char* n : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(src / n, out / n);
  std::map<std::string, std::vector<float>> values;
  std::vector<SafetensorsOut> ts;
  for (const std::string& name : f.tensor_names()) {
    const HostTensor* t = f.find(name);
    std::vector<float>& v = values[name];
    for (int64_t i = 0; i < t->numel(); ++i) v.push_back(float_at(*t, i));
    const bool norm = name.ends_with("input_layernorm.weight") || name.ends_with("post_attention_layernorm.weight");
    const bool reads_norm = name.ends_with("q_proj.weight") || name.ends_with("k_proj.weight") ||
                            name.ends_with("v_proj.weight") || name.ends_with("gate_proj.weight") ||
                            name.ends_with("up_proj.weight");
    const int64_t cols = t->shape.back();
    for (int64_t c : {5, 37, 64, 101})
      for (int64_t r = 0; r < (norm ? 1 : t->numel() / cols); ++r) {
        if (norm) v[c] *= 50.0f;
        if (reads_norm) v[r * cols + c] /= 50.0f;
      }
    const std::string dt = dtype_name(t->dtype);
    ts.push_back({name, dt, t->shape, static_cast<int64_t>(t->nbytes), [&v, dt] { return float_bytes(v, dt); }});
  }
  write_safetensors(out / "model.safetensors", ts);
}

void print(const std::string& model, const std::vector<SchemeReport>& rs) {
  for (const SchemeReport& s : rs)
    std::printf("%-18s %-9s KL mean %.4g max %.4g  top-1 %.1f%%  ppl %.3f -> %.3f\n", model.c_str(),
                scheme_label(s.scheme), s.report.kl_mean, s.report.kl_max, 100 * s.report.top1_agreement,
                s.report.perplexity_base, s.report.perplexity_quant);
}

SchemeReportOptions options() {
  SchemeReportOptions o;
  o.max_tokens = 256;
  o.make_backend = [] { return make_cpu_backend(2); };
  return o;
}

TEST(GoldenAwq, AwqBeatsRoundToNearestWithOutlierChannels) {
  const fs::path tiny = test::golden_models_dir() / "tiny-chat";
  const fs::path dir = fs::temp_directory_path() / ("inferdesk-outlier-" + std::to_string(std::random_device{}()));
  make_outlier_model(tiny, dir);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  const auto eval = tok.encode(read_text(source_dir() / "resources/eval/declaration.txt"), false);
  const auto calib = tok.encode(read_text(source_dir() / "resources/calibration/lincoln.txt"), false);
  SchemeReportOptions o = options();
  const std::vector<SchemeReport> rs = report_in_app_schemes(dir, eval, calib, o);
  fs::remove_all(dir);
  print("outlier tiny-chat", rs);
  ASSERT_EQ(rs.size(), 3u);
  const QuantEvalReport &int8 = rs[0].report, &rtn = rs[1].report, &awq = rs[2].report;
  EXPECT_LT(awq.kl_mean, rtn.kl_mean);
  EXPECT_LT(awq.kl_max, rtn.kl_max);
  EXPECT_GE(awq.top1_agreement, rtn.top1_agreement);
  // Perplexity: AWQ's stays closer to the unquantized model's.
  EXPECT_LT(std::fabs(std::log(awq.perplexity_quant / awq.perplexity_base)),
            std::fabs(std::log(rtn.perplexity_quant / rtn.perplexity_base)));
  EXPECT_LT(int8.kl_mean, awq.kl_mean);  // 8 bits stay ahead of 4
}

TEST(GoldenAwq, FiguresOnTheGoldenModels) {
  const Tokenizer tok = Tokenizer::from_dir(test::golden_models_dir() / "tiny-chat");  // ids < 480 fit every vocab
  const auto eval = tok.encode(read_text(source_dir() / "resources/eval/declaration.txt"), false);
  const auto calib = tok.encode(read_text(source_dir() / "resources/calibration/lincoln.txt"), false);
  for (const char* name : {"tiny-chat", "llama", "mistral", "qwen2", "qwen3"}) {
    const std::vector<SchemeReport> rs = report_in_app_schemes(test::golden_models_dir() / name, eval, calib, options());
    print(name, rs);
    ASSERT_EQ(rs.size(), 3u);
    for (const SchemeReport& s : rs) {
      EXPECT_TRUE(std::isfinite(s.report.kl_mean) && std::isfinite(s.report.perplexity_quant)) << name;
      EXPECT_GT(s.report.top1_agreement, 0.3) << name << " " << scheme_label(s.scheme);
    }
    EXPECT_LT(rs[0].report.kl_mean, rs[1].report.kl_mean) << name;  // int8 closer than int4
  }
}

}  // namespace
}  // namespace inferdesk
