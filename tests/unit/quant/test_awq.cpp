// AWQ (core/quant): the scale search beats plain quantization on a layer with outlier inputs, the
// packing round-trips through the AWQ reader, a written folder reloads to the same weights, cancel
// leaves nothing, bad inputs are typed errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/engine/model_loader.h"
#include "core/quant/awq_export.h"
#include "core/quant/awq_quantizer.h"
#include "core/util/error.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {
namespace fs = std::filesystem;

Matrix random_matrix(int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Matrix m{std::vector<float>(static_cast<size_t>(rows * cols)), rows, cols};
  for (float& v : m.v) v = d(rng);
  return m;
}

Matrix dequantized(const HostIntWeight& h) {
  Matrix m{std::vector<float>(static_cast<size_t>(h.rows * h.scheme.in_features)), h.rows, h.scheme.in_features};
  for (int64_t n = 0; n < m.rows; ++n)
    for (int64_t k = 0; k < m.cols; ++k) m.at(n, k) = h.dequantized(n, k);
  return m;
}

fs::path temp_path(const std::string& tag) {
  return fs::temp_directory_path() / ("inferdesk-awq-" + tag + "-" + std::to_string(std::random_device{}()));
}

std::vector<int32_t> some_ids(int32_t n, int32_t vocab) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < n; ++i) ids.push_back((i * 37 + 11) % vocab);
  return ids;
}

TEST(AwqMath, ScaleSearchBeatsRoundToNearestWithOutliers) {
  Matrix x = random_matrix(192, 256, 1), w = random_matrix(64, 256, 2, 0.05f);
  for (int64_t c : {3, 77, 130, 201}) {  // large inputs on a few channels, small weights there
    for (int64_t t = 0; t < x.rows; ++t) x.at(t, c) *= 50.0f;
    for (int64_t n = 0; n < w.rows; ++n) w.at(n, c) /= 50.0f;
  }
  const ScaleSearchResult r = search_awq_scales(x, {&w});
  const double rtn_sym = output_mse(
      x,
      dequantized(quantize_int4_group(
          HostTensor{"w", DType::F32, {64, 256}, reinterpret_cast<const std::byte*>(w.v.data()), w.v.size() * 4}, 64,
          256)),
      w);
  std::printf("output MSE: AWQ %.4g (ratio %.2f), asymmetric unscaled %.4g, symmetric RTN %.4g\n", r.loss, r.ratio,
              r.loss_unscaled, rtn_sym);
  EXPECT_GT(r.ratio, 0.0);
  EXPECT_LT(r.loss, 0.5 * r.loss_unscaled);
  EXPECT_LT(r.loss, 0.5 * rtn_sym);
  ASSERT_EQ(r.scales.size(), 256u);
  EXPECT_GT(r.scales[77], 2.0f * r.scales[0]);  // the outlier channels are scaled up
}

TEST(AwqMath, GroupMustDivideInputs) {
  try {
    awq_quantize(random_matrix(8, 96, 3));
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("96"), std::string::npos);
  }
}

TEST(AwqPack, RoundTripsThroughTheAwqReader) {
  const Matrix w = random_matrix(24, 256, 4);
  const HostIntWeight h = awq_quantize(w);
  const AwqPacked p = pack_awq(h);
  const HostTensor qw{
      "m.qweight", DType::I32, {256, 3}, reinterpret_cast<const std::byte*>(p.qweight.data()), p.qweight.size()};
  const HostTensor qz{
      "m.qzeros", DType::I32, {2, 3}, reinterpret_cast<const std::byte*>(p.qzeros.data()), p.qzeros.size()};
  const HostTensor sc{
      "m.scales", DType::F16, {2, 24}, reinterpret_cast<const std::byte*>(p.scales.data()), p.scales.size()};
  const HostIntWeight back = read_int_weight(IntPacking::Awq, h.scheme, "m", 24, 256, [&](const std::string& n) {
    return n == qw.name ? &qw : n == qz.name ? &qz : n == sc.name ? &sc : nullptr;
  });
  EXPECT_EQ(back.codes, h.codes);
  EXPECT_EQ(back.zeros, h.zeros);
  EXPECT_EQ(back.scales.values, h.scales.values);
  double err = 0;
  for (int64_t n = 0; n < 24; ++n)
    for (int64_t k = 0; k < 256; ++k) err = std::max(err, std::fabs(double(back.dequantized(n, k)) - w.at(n, k)));
  EXPECT_LT(err, 0.6);  // half a step of a ~[-3.5, 3.5] range in 15 steps
}

TEST(AwqFolder, WriteThenReadGivesTheSameWeights) {
  const fs::path dir = test::golden_models_dir() / "tiny-chat", out = temp_path("rt");
  AwqOptions o;
  o.max_tokens = 64;
  o.make_backend = [] { return make_cpu_backend(2); };
  int calls = 0;
  o.progress = [&](double f) {
    EXPECT_LE(f, 1.0);
    return ++calls > 0;
  };
  const AwqResult r = awq_quantize_model(dir, some_ids(64, 480), o);
  EXPECT_GT(calls, 2);
  ASSERT_EQ(r.linears.size(), 14u);  // 7 projections x 2 layers
  EXPECT_FALSE(r.replaced.empty());  // norm weights scaled
  const AwqExportResult w = export_awq_folder(ModelFolder::open(dir), r, out);
  EXPECT_EQ(w.quantized, 14);
  const ModelFolder back = ModelFolder::open(out);
  EXPECT_EQ(back.config().quantization.int_packing, IntPacking::Awq);
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  for (const auto& [module, h] : r.linears) {
    const HostIntWeight got = read_int_weight(IntPacking::Awq, h.scheme, module, h.rows, h.scheme.in_features,
                                              [&](const std::string& n) { return back.find(n); });
    EXPECT_EQ(got.codes, h.codes) << module;
    EXPECT_EQ(got.zeros, h.zeros) << module;
    EXPECT_EQ(got.scales.values, h.scales.values) << module;
    EXPECT_EQ(back.find(module + ".weight"), nullptr);
  }
  for (const auto& [name, v] : r.replaced) {
    const HostTensor* t = back.find(name);
    ASSERT_NE(t, nullptr) << name;
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(float_at(*t, static_cast<int64_t>(i)), v[i]) << name;
  }
  LoadedModel m = load_model_folder(out, make_cpu_backend(2));  // loads as published, no re-quantizing
  EXPECT_NE(m.quantization.find("awq"), std::string::npos) << m.quantization;
  fs::remove_all(out);
}

TEST(AwqFolder, CancelLeavesNoFolder) {
  const fs::path dir = test::golden_models_dir() / "tiny-chat", out = temp_path("cancel");
  AwqOptions o;
  o.max_tokens = 32;
  o.make_backend = [] { return make_cpu_backend(2); };
  const AwqResult r = awq_quantize_model(dir, some_ids(32, 480), o);
  AwqExportOptions eo;
  int calls = 0;
  eo.progress = [&](int64_t, int64_t) { return ++calls < 3; };
  EXPECT_THROW(
      try { export_awq_folder(ModelFolder::open(dir), r, out, eo); } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Cancelled);
        throw;
      },
      Error);
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(out.filename().string()), std::string::npos) << e.path();
  o.progress = [](double) { return false; };  // cancelling the calibration itself
  try {
    awq_quantize_model(dir, some_ids(32, 480), o);
    ADD_FAILURE() << "expected Cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Cancelled);
  }
}

void expect_code(const std::function<void()>& f, ErrorCode code, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected " << to_string(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// A source shard cut short during the export (a download or another quantization rewriting it):
// the weights read from it are zeros, so the export fails with the file named and leaves no folder.
TEST(AwqFolder, SourceTruncatedWhileExportingLeavesNoFolder) {
  const fs::path src = temp_path("shrunk-src"), out = temp_path("shrunk-out");
  fs::remove_all(src);
  fs::copy(test::golden_models_dir() / "tiny-chat", src, fs::copy_options::recursive);
  AwqOptions o;
  o.max_tokens = 32;
  o.make_backend = [] { return make_cpu_backend(2); };
  const AwqResult r = awq_quantize_model(src, some_ids(32, 480), o);
  const ModelFolder folder = ModelFolder::open(src);
  fs::resize_file(src / "model.safetensors", 4096);  // the header survives, the weights do not
  expect_code([&] { export_awq_folder(folder, r, out); }, ErrorCode::Io, "model.safetensors");
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(src);
}

TEST(AwqFolder, BadInputsAreTypedErrors) {
  const fs::path tiny = test::golden_models_dir() / "tiny-chat";
  expect_code([&] { check_awq_quantizable(ModelFolder::open(test::golden_models_dir() / "mixtral")); },
              ErrorCode::Unsupported, "MoE");
  const fs::path awq = test::golden_models_dir().parent_path() / "int" / "awq-ours";
  expect_code([&] { check_awq_quantizable(ModelFolder::open(awq)); }, ErrorCode::InvalidArgument, "already quantized");
  expect_code([&] { awq_quantize_model(tiny, {5}); }, ErrorCode::InvalidArgument, "fewer than two");
  expect_code([&] { awq_quantize_model(tiny, {5, 9999}); }, ErrorCode::InvalidArgument, "9999");
  AwqResult r;
  r.linears.emplace("x", awq_quantize(random_matrix(8, 128, 5)));
  expect_code([&] { export_awq_folder(ModelFolder::open(tiny), r, tiny); }, ErrorCode::InvalidArgument,
              "already exists");
}

}  // namespace
}  // namespace inferdesk
