// Integer weights (issue 28): the loader's dequantized weights against the reference packers'
// own dequantizers (tests/golden/int, made by tools/golden/make_int_fixtures.py with AutoAWQ,
// AutoGPTQ and compressed-tensors), the quantization_config parsers, bad input, the round-to-nearest
// quantizers, and a whole AWQ folder generating on the CPU like its dequantized float twin.
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/engine/model_loader.h"
#include "core/io/int_weights.h"
#include "core/io/safetensors.h"
#include "core/util/dtype.h"
#include "tests/support/forwarding_backend.h"
#include "tests/unit/io/st_writer.h"

namespace inferdesk::test {
namespace {

std::filesystem::path int_dir() { return std::filesystem::path(INFERDESK_TEST_SOURCE_DIR) / "tests/golden/int"; }

nlohmann::json cases_json() { return nlohmann::json::parse(std::ifstream(int_dir() / "cases.json")); }

// A case's tensors, editable, behind a TensorLookup.
struct CaseTensors {
  std::map<std::string, HostTensor> t;
  std::map<std::string, std::string> bytes;  // owned data of edited tensors
  TensorLookup lookup() const {
    return [this](const std::string& n) -> const HostTensor* {
      auto it = t.find(n);
      return it == t.end() ? nullptr : &it->second;
    };
  }
  void set(const std::string& name, DType d, std::vector<int64_t> shape, std::string data) {
    bytes[name] = std::move(data);
    t[name] = HostTensor{name, d, std::move(shape), reinterpret_cast<const std::byte*>(bytes[name].data()),
                         bytes[name].size()};
  }
};

struct Case {
  std::string name;
  QuantConfig config;
  int64_t n = 0, k = 0;
  SafetensorsFile file;
  CaseTensors tensors;
  std::vector<float> expected;
};

Case load_case(const nlohmann::json& c) {
  Case out{c["name"],
           QuantConfig::from_json(c["quantization_config"]),
           c["out_features"],
           c["in_features"],
           SafetensorsFile::open(int_dir() / (c["name"].get<std::string>() + ".safetensors")),
           {},
           {}};
  for (const HostTensor& t : out.file.tensors()) out.tensors.t[t.name] = t;
  const HostTensor& ref = out.tensors.t.at("reference.dequantized");
  out.expected.resize(static_cast<size_t>(out.n * out.k));
  std::memcpy(out.expected.data(), ref.data, out.expected.size() * 4);
  return out;
}

HostIntWeight read_case(const Case& c) {
  auto q = c.config.scheme_for("m");
  if (!q) throw Error(ErrorCode::Internal, "no scheme for m");
  return read_int_weight(c.config.int_packing, *q, "m", c.n, c.k, c.tensors.lookup());
}

TEST(IntFixtures, EveryReferenceCaseIsThere) {
  const auto j = cases_json();
  int awq = 0, gptq = 0, v2 = 0, ct = 0, desc = 0, asym = 0, eight = 0;
  for (const auto& c : j["cases"]) {
    const std::string n = c["name"];
    awq += n.rfind("awq", 0) == 0;
    gptq += n.rfind("gptq-", 0) == 0;
    v2 += n.rfind("gptqv2-", 0) == 0;
    ct += n.rfind("ct", 0) == 0;
    desc += n.find("-desc-") != std::string::npos;
    asym += n.find("asym") != std::string::npos;
    eight += n.find("8bit") != std::string::npos || n.find("w8") != std::string::npos;
  }
  EXPECT_GE(awq, 2);
  EXPECT_GE(gptq, 6);
  EXPECT_GE(v2, 2);
  EXPECT_GE(ct, 4);
  EXPECT_GE(desc, 2);
  EXPECT_GE(asym, 3);
  EXPECT_GE(eight, 4);
}

TEST(IntFixtures, DequantizedWeightsEqualTheReferencePackers) {
  const nlohmann::json all = cases_json();
  for (const auto& cj : all["cases"]) {
    const Case c = load_case(cj);
    const HostIntWeight h = read_case(c);
    ASSERT_EQ(h.rows, c.n) << c.name;
    EXPECT_EQ(h.scheme.act_order, c.name.find("-desc-") != std::string::npos) << c.name;
    int64_t mismatches = 0;
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t k = 0; k < c.k; ++k)
        if (h.dequantized(n, k) != c.expected[static_cast<size_t>(n * c.k + k)] && mismatches++ < 3)
          ADD_FAILURE() << c.name << " [" << n << ", " << k << "]: " << h.dequantized(n, k) << " vs reference "
                        << c.expected[static_cast<size_t>(n * c.k + k)];
    EXPECT_EQ(mismatches, 0) << c.name;
  }
}

// ---- bad input ----

Case first_case(const std::string& prefix) {
  const nlohmann::json all = cases_json();
  for (const auto& cj : all["cases"])
    if (cj["name"].get<std::string>().rfind(prefix, 0) == 0) return load_case(cj);
  throw Error(ErrorCode::Internal, "no fixture " + prefix);
}

TEST(IntBadInput, WrongShapesDtypesAndMissingTensorsNameTheTensor) {
  {
    Case c = first_case("awq-g32");
    HostTensor t = c.tensors.t.at("m.qweight");
    t.shape = {c.k / 2, c.n / 4};
    c.tensors.t["m.qweight"] = t;
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.qweight", "shape"});
  }
  {
    Case c = first_case("awq-g32");
    c.tensors.t.erase("m.qzeros");
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.qzeros", "missing"});
  }
  {
    Case c = first_case("gptq-4bit-g64-nodesc-asym");
    HostTensor t = c.tensors.t.at("m.scales");
    t.dtype = DType::I32;
    t.shape = {t.shape[0], t.shape[1] / 2};
    c.tensors.t["m.scales"] = t;
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.scales", "dtype"});
  }
  {
    Case c = first_case("ct-w4a16-group128");
    c.tensors.t.erase("m.weight_scale");
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.weight_scale"});
  }
  {
    Case c = first_case("ct-w4a16-group128");
    c.tensors.set("m.weight_shape", DType::I32, {2}, std::string("\x20\0\0\0\x40\0\0\0", 8));
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.weight_shape", "[32, 64]"});
  }
}

TEST(IntBadInput, GIdxOutOfRangeAndNonFiniteScalesAreFormatErrors) {
  {
    Case c = first_case("gptq-4bit-g32-desc-asym");
    std::string g(reinterpret_cast<const char*>(c.tensors.t.at("m.g_idx").data), c.k * 4);
    const int32_t bad = static_cast<int32_t>(c.k / 32);  // one past the last group
    std::memcpy(g.data() + 5 * 4, &bad, 4);
    c.tensors.set("m.g_idx", DType::I32, {c.k}, g);
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.g_idx", "g_idx[5]"});
  }
  {
    Case c = first_case("gptq-4bit-g32-desc-asym");
    c.tensors.t.erase("m.g_idx");
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.g_idx", "desc_act"});
  }
  for (float v : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Case c = first_case("awq-g128");
    const HostTensor& s = c.tensors.t.at("m.scales");
    std::string d(reinterpret_cast<const char*>(s.data), s.nbytes);
    const uint16_t h = f32_to_f16(v);
    std::memcpy(d.data() + 6, &h, 2);
    c.tensors.set("m.scales", DType::F16, s.shape, d);
    expect_error([&] { read_case(c); }, ErrorCode::Format, {"m.scales", "finite"});
  }
}

TEST(IntBadInput, AGroupSizeThatDoesNotDivideKIsAFormatError) {
  Case c = first_case("gptq-4bit-g64-nodesc-asym");
  auto q = *c.config.scheme_for("m");
  q.group_size = 48;
  expect_error([&] { read_int_weight(c.config.int_packing, q, "m", c.n, c.k, c.tensors.lookup()); }, ErrorCode::Format,
               {"m.qweight", "group_size 48"});
}

// ---- quantization_config ----

QuantInfo scheme_of(const nlohmann::json& qc) {
  auto q = QuantConfig::from_json(qc).scheme_for("model.layers.0.mlp.up_proj");
  if (!q) throw Error(ErrorCode::Internal, "no scheme");
  return *q;
}

TEST(IntQuantConfig, ReadsTheHubFields) {
  const QuantInfo awq = scheme_of(
      {{"quant_method", "awq"}, {"version", "gemm"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}});
  EXPECT_EQ(awq.scheme, QuantScheme::Int);
  EXPECT_EQ(awq.bits, 4);
  EXPECT_EQ(awq.group_size, 128);
  EXPECT_TRUE(awq.has_zero_point);
  const QuantInfo gptq = scheme_of(
      {{"quant_method", "gptq"}, {"bits", 8}, {"group_size", -1}, {"desc_act", true}, {"sym", true}});
  EXPECT_EQ(gptq.bits, 8);
  EXPECT_EQ(gptq.granularity, ScaleGranularity::Channel);
  EXPECT_TRUE(gptq.act_order);
  EXPECT_FALSE(gptq.has_zero_point);
  EXPECT_EQ(QuantConfig::from_json(
                {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}, {"checkpoint_format", "gptq_v2"}})
                .int_packing,
            IntPacking::GptqV2);
  const nlohmann::json w8a8 = {
      {"quant_method", "compressed-tensors"},
      {"format", "int-quantized"},
      {"config_groups",
       {{"group_0",
         {{"targets", {"Linear"}},
          {"weights", {{"num_bits", 8}, {"type", "int"}, {"symmetric", true}, {"strategy", "channel"}}},
          {"input_activations",
           {{"num_bits", 8}, {"type", "int"}, {"symmetric", true}, {"strategy", "token"}, {"dynamic", true}}}}}}},
      {"ignore", {"lm_head"}}};
  const QuantConfig c = QuantConfig::from_json(w8a8);
  EXPECT_EQ(c.int_packing, IntPacking::CtInt8);
  EXPECT_EQ(c.scheme_for("x.q_proj")->act, ActQuant::DynamicToken);
  EXPECT_FALSE(c.scheme_for("lm_head"));
}

TEST(IntQuantConfig, UnknownOrOutOfRangeFieldsAreTypedErrors) {
  const nlohmann::json awq = {{"quant_method", "awq"}, {"version", "gemm"}, {"bits", 4}, {"group_size", 128}};
  auto with = [](nlohmann::json j, const char* k, nlohmann::json v) {
    j[k] = std::move(v);
    return j;
  };
  expect_error([&] { QuantConfig::from_json(with(awq, "version", "gemv")); }, ErrorCode::Unsupported, {"gemv"});
  expect_error([&] { QuantConfig::from_json(with(awq, "bits", 3)); }, ErrorCode::Unsupported, {"bits"});
  expect_error([&] { QuantConfig::from_json(with(awq, "group_size", 0)); }, ErrorCode::Format, {"group_size"});
  expect_error([&] { QuantConfig::from_json(with(awq, "group_size", "128")); }, ErrorCode::Format, {"group_size"});
  const nlohmann::json gptq = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}};
  expect_error([&] { QuantConfig::from_json(with(gptq, "bits", 2)); }, ErrorCode::Unsupported, {"bits = 2"});
  expect_error([&] { QuantConfig::from_json(with(gptq, "checkpoint_format", "marlin")); }, ErrorCode::Unsupported,
               {"marlin"});
  expect_error([&] { QuantConfig::from_json(with(gptq, "desc_act", "yes")); }, ErrorCode::Format, {"desc_act"});
  const nlohmann::json all = cases_json();
  nlohmann::json ct = all["cases"].back()["quantization_config"];
  ct["config_groups"]["group_0"]["weights"]["strategy"] = "block";
  expect_error([&] { QuantConfig::from_json(ct); }, ErrorCode::Unsupported, {"strategy", "block"});
  ct["config_groups"]["group_0"]["weights"]["strategy"] = "channel";
  ct["config_groups"]["group_0"]["weights"]["symmetric"] = false;
  expect_error([&] { QuantConfig::from_json(ct); }, ErrorCode::Unsupported, {"asymmetric"});
}

// ---- round-to-nearest ----

HostTensor f32_tensor(const std::vector<float>& v, int64_t n, int64_t k) {
  return HostTensor{"w", DType::F32, {n, k}, reinterpret_cast<const std::byte*>(v.data()), v.size() * 4};
}

std::vector<float> random_weights(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& f : v) f = d(rng);
  v[3] = 0.4f;  // an outlier that sets its row's (or group's) scale
  return v;
}

TEST(IntRtn, Int8PerChannelRoundsToNearestWithAmaxOver127) {
  const int64_t n = 8, k = 96;
  const auto w = random_weights(n * k, 1);
  const HostIntWeight h = quantize_int8_per_channel(f32_tensor(w, n, k), n, k);
  EXPECT_EQ(h.scheme.bits, 8);
  EXPECT_EQ(h.scheme.granularity, ScaleGranularity::Channel);
  ASSERT_EQ(h.scales.cols, 1);
  EXPECT_FLOAT_EQ(h.scales.values[0], 0.4f / 127.0f);
  for (int64_t r = 0; r < n; ++r) {
    const float s = h.scales.values[static_cast<size_t>(r)];
    for (int64_t c = 0; c < k; ++c) {
      const float x = w[static_cast<size_t>(r * k + c)];
      EXPECT_EQ(h.code(r, c), static_cast<int32_t>(std::nearbyint(x / s))) << r << "," << c;
      EXPECT_LE(std::fabs(h.dequantized(r, c) - x), 0.5f * s * 1.0001f);
    }
  }
}

TEST(IntRtn, Int4Group128ClampsToTheSignedNibble) {
  const int64_t n = 4, k = 256;
  const auto w = random_weights(n * k, 2);
  const HostIntWeight h = quantize_int4_group(f32_tensor(w, n, k), n, k);
  EXPECT_EQ(h.scheme.bits, 4);
  EXPECT_EQ(h.scheme.group_size, 128);
  ASSERT_EQ(h.scales.cols, 2);
  EXPECT_EQ(h.code_cols(), 128);
  EXPECT_FLOAT_EQ(h.scales.values[0], 0.4f / 7.0f);
  EXPECT_EQ(h.code(0, 3), 7);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const float s = h.scales.values[static_cast<size_t>(r * 2 + c / 128)];
      const float x = w[static_cast<size_t>(r * k + c)];
      const int32_t q = h.code(r, c);
      EXPECT_TRUE(q >= -8 && q <= 7);
      EXPECT_EQ(q, std::clamp(static_cast<int32_t>(std::nearbyint(x / s)), -8, 7)) << r << "," << c;
    }
  // Non-finite input is refused, naming the tensor.
  auto bad = w;
  bad[10] = std::numeric_limits<float>::infinity();
  expect_error([&] { quantize_int4_group(f32_tensor(bad, n, k), n, k); }, ErrorCode::Format, {"'w'", "non-finite"});
}

// ---- whole folders ----

constexpr double kW8a8LogprobTol = 0.05;

std::vector<GenerationResult> greedy(LoadedModel m, int tokens) {
  EngineOptions opts;
  opts.num_kv_blocks = 64;
  Engine engine(std::move(m), opts);
  std::vector<Request> reqs;
  for (std::vector<int32_t> p : {std::vector<int32_t>{1, 17, 99, 4, 120}, std::vector<int32_t>{1, 100, 3}}) {
    Request r;
    r.prompt_ids = p;
    r.params.temperature = 0;
    r.params.max_tokens = tokens;
    r.params.ignore_eos = true;
    r.params.logprobs = 5;
    reqs.push_back(r);
  }
  return generate_all(engine, reqs);
}

// Greedy runs of `m` equal those of llama-awq-ref (the reference-dequantized float32 weights):
// same tokens, log-probabilities within float32 summation-order noise.
void expect_like_the_twin(LoadedModel m) {
  const auto a = greedy(std::move(m), 12);
  const auto b = greedy(load_model_folder(int_dir() / "llama-awq-ref", make_cpu_backend(1)), 12);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].reason, FinishReason::Length) << a[i].error;
    EXPECT_EQ(a[i].token_ids(), b[i].token_ids()) << "prompt " << i;
    for (size_t t = 0; t < std::min(a[i].tokens.size(), b[i].tokens.size()); ++t)
      EXPECT_NEAR(a[i].tokens[t].logprob, b[i].tokens[t].logprob, 1e-4) << "prompt " << i << " step " << t;
  }
}

TEST(IntFolder, AwqFolderGeneratesLikeItsReferenceDequantizedTwin) {
  LoadedModel awq = load_model_folder(int_dir() / "llama-awq", make_cpu_backend(1));
  EXPECT_NE(awq.quantization.find("awq"), std::string::npos) << awq.quantization;
  expect_like_the_twin(std::move(awq));
}

TEST(IntFolder, GptqFolderOfTheSameWeightsGeneratesExactlyLikeTheTwin) {
  // llama-gptq holds llama-awq-ref's weights packed by AutoGPTQ: the same floats, so the same run.
  LoadedModel gptq = load_model_folder(int_dir() / "llama-gptq", make_cpu_backend(1));
  EXPECT_NE(gptq.quantization.find("gptq: int4 asymmetric group 32"), std::string::npos) << gptq.quantization;
  expect_like_the_twin(std::move(gptq));
}

TEST(IntFolder, W8A8FolderStaysCloseToItsWeightOnlyView) {
  LoadedModel m = load_model_folder(int_dir() / "llama-w8a8", make_cpu_backend(1));
  EXPECT_NE(m.quantization.find("int8 activations"), std::string::npos) << m.quantization;
  const auto a = greedy(std::move(m), 12);
  // The same int8 weights without activation quantization (W8A16): a copy whose config drops it.
  TempDir tmp;
  std::filesystem::copy_file(int_dir() / "llama-w8a8/model.safetensors", tmp.path() / "model.safetensors");
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(int_dir() / "llama-w8a8/config.json"));
  cfg["quantization_config"]["config_groups"]["group_0"]["input_activations"] = nullptr;
  write_file(tmp.path() / "config.json", cfg.dump());
  LoadedModel w8a16 = load_model_folder(tmp.path(), make_cpu_backend(1));
  EXPECT_NE(w8a16.quantization.find("weight-only"), std::string::npos) << w8a16.quantization;
  const auto b = greedy(std::move(w8a16), 12);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].reason, FinishReason::Length) << a[i].error;
    ASSERT_FALSE(b[i].tokens.empty());
    // Per-token int8 activations move log-probabilities by about 1/127 of the activations' range.
    EXPECT_EQ(a[i].tokens[0].id, b[i].tokens[0].id) << "prompt " << i;
    EXPECT_NEAR(a[i].tokens[0].logprob, b[i].tokens[0].logprob, kW8a8LogprobTol) << "prompt " << i;
  }
}

// A backend that runs no integer scheme (as the CUDA backend does today).
class NoIntBackend : public ForwardingBackend {
 public:
  NoIntBackend() : ForwardingBackend(make_cpu_backend(1)) {}
  bool supports_quant(const QuantInfo& q) const override {
    return q.scheme != QuantScheme::Int && ForwardingBackend::supports_quant(q);
  }
};

TEST(IntFolder, ABackendWithoutIntegerKernelsRefusesWithUnsupported) {
  for (const char* folder : {"llama-awq", "llama-w8a8"})
    expect_error([&] { load_model_folder(int_dir() / folder, std::make_unique<NoIntBackend>()); },
                 ErrorCode::Unsupported, {"model.layers.0.", "does not run int"});
}

TEST(IntFolder, QuantizeOnLoadRunsAndRefusesQuantizedFolders) {
  const auto golden = std::filesystem::path(INFERDESK_TEST_SOURCE_DIR) / "tests/golden/models/llama";
  const auto ref = greedy(load_model_folder(golden, make_cpu_backend(1)), 6);
  for (LoadQuantization q : {LoadQuantization::Int8, LoadQuantization::Int4}) {
    LoadOptions lo;
    lo.quantization = q;
    LoadedModel m = load_model_folder(golden, make_cpu_backend(1), {}, lo);
    EXPECT_NE(m.quantization.find(q == LoadQuantization::Int8 ? "int8" : "int4"), std::string::npos);
    const LoadedModel plain = load_model_folder(golden, make_cpu_backend(1));
    EXPECT_LT(m.weight_bytes, plain.weight_bytes);
    const auto got = greedy(std::move(m), 6);
    // Int8 stays close to BF16: the first token agrees.
    if (q == LoadQuantization::Int8) EXPECT_EQ(got[0].token_ids().at(0), ref[0].token_ids().at(0));
    EXPECT_EQ(got[0].reason, FinishReason::Length) << got[0].error;
    lo.quantization = q;
    expect_error([&] { load_model_folder(int_dir() / "llama-awq", make_cpu_backend(1), {}, lo); },
                 ErrorCode::InvalidArgument, {"already quantized"});
  }
}

}  // namespace
}  // namespace inferdesk::test
