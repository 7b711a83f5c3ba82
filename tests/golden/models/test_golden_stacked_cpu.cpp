// The decoder's stacked-weight loading (what the CUDA backend asks for: q/k/v, dense and shared
// gate/up, and each routed expert's gate/up stacked into one weight) checked on the CPU: a backend
// that forwards every op to the CPU backend but says it wants fused weights, and stacks them on the
// host. The MoE fixtures without q/k norm (the default fused q/k-norm op needs separate q and k)
// must still match transformers by vLLM's rule.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>

#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/generate.h"
#include "core/util/error.h"
#include "tests/support/forwarding_backend.h"
#include "tests/support/golden.h"

namespace inferdesk {
namespace {

class StackingCpuBackend : public test::ForwardingBackend {
 public:
  // allow_separate: experts whose gate and up could not be stacked (block-scaled FP8 parts that do
  // not fill whole scale blocks) are accepted.
  explicit StackingCpuBackend(bool allow_separate = false)
      : ForwardingBackend(make_cpu_backend()), allow_separate_(allow_separate) {}
  int stacked_weights() const { return stacked_; }

  bool wants_fused_weights() const override { return true; }
  Buffer load_weight_rows(const std::vector<HostTensor>& parts, int64_t cols) override {
    // Concatenate the parts (all of one dtype in these fixtures) in host memory kept alive here.
    const DType dt = parts.at(0).dtype;
    size_t bytes = 0;
    int64_t elems = 0;
    for (const HostTensor& p : parts) {
      if (p.dtype != dt) throw Error(ErrorCode::Internal, "stacked parts of different dtypes");
      bytes += p.nbytes;
      elems += p.numel();
    }
    auto mem = std::make_shared<std::vector<std::byte>>(bytes);
    size_t at = 0;
    for (const HostTensor& p : parts) {
      std::memcpy(mem->data() + at, p.data, p.nbytes);
      at += p.nbytes;
    }
    host_.push_back(mem);
    HostTensor h;
    h.name = parts[0].name + " (stacked)";
    h.dtype = dt;
    h.shape = {elems / cols, cols};
    h.data = mem->data();
    h.nbytes = bytes;
    ++stacked_;
    return inner().load_weight(h, elems / cols, cols);
  }

  std::string name() const override { return "stacking-cpu"; }
  // The CPU backend reads a quantized weight's scales from its first row: the up half of a stacked
  // FP8 gate | up gets a QuantInfo of its own whose scales start at its rows (what the CUDA backend
  // works out itself).
  std::vector<ExpertWeights> halves(const std::vector<ExpertWeights>& experts) {
    std::vector<ExpertWeights> out = experts;
    for (ExpertWeights& ew : out) {
      if (!ew.gate.quant || ew.gate.quant != ew.up.quant) continue;
      auto [it, fresh] = halves_.try_emplace(ew.gate.quant, *ew.gate.quant, *ew.gate.quant);
      if (fresh) {
        const QuantInfo& q = *ew.gate.quant;
        const int64_t rows = q.granularity == ScaleGranularity::Block ? ew.gate.rows / q.block_n : ew.gate.rows;
        it->second.first.scale_rows = it->second.second.scale_rows = rows;
        it->second.second.scales = static_cast<const float*>(q.scales) + rows * q.scale_cols;
      }
      ew.gate.quant = &it->second.first;
      ew.up.quant = &it->second.second;
    }
    return out;
  }
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& e, const Tensor& ids,
                   const Tensor& w, Tensor out) override {
    // The views of a stacked expert are the two row halves of one weight.
    for (const ExpertWeights& ew : e)
      if (!allow_separate_ && static_cast<const char*>(ew.up.data) !=
                                  static_cast<const char*>(ew.gate.data) +
                                      ew.gate.rows * ew.gate.stride * static_cast<int64_t>(ew.gate.element_size()))
        throw Error(ErrorCode::Internal, "expert gate and up are not stacked");
    inner().moe_experts(layer, x, halves(e), ids, w, out);
  }

 private:
  std::vector<std::shared_ptr<std::vector<std::byte>>> host_;
  int stacked_ = 0;
  bool allow_separate_ = false;
  std::map<const QuantInfo*, std::pair<QuantInfo, QuantInfo>> halves_;  // gate, up
};

class GoldenStackedCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenStackedCpu, MatchesTransformers) {
  const test::GoldenModel g = test::read_golden(GetParam());
  auto backend = std::make_unique<StackingCpuBackend>();
  const StackingCpuBackend* sb = backend.get();
  LoadedModel m = load_model_folder(g.dir, std::move(backend));
  // At least q/k/v per layer and gate/up per routed expert of each MoE layer (moe_experts above
  // also checks that every expert it gets is stacked).
  const ModelConfig& c = m.config;
  int64_t want = c.num_hidden_layers;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) want += c.is_moe_layer(l) ? c.num_experts : 0;
  EXPECT_GE(sb->stacked_weights(), want);
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine engine(std::move(m), opts);
  for (size_t i = 0; i < g.cases.size(); ++i) {
    const Request r = test::golden_request(g.cases[i], g.max_new_tokens);
    const auto results = generate_all(engine, {r});
    ASSERT_EQ(results[0].reason, FinishReason::Length) << results[0].error;
    EXPECT_EQ(test::compare_with_golden(g.cases[i], results[0], 1e-3), "") << GetParam() << " case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(MoeWithoutQkNorm, GoldenStackedCpu, ::testing::Values("mixtral", "qwen2_moe"),
                         [](const auto& info) { return info.param; });

// Block-wise FP8 folders whose k/v (64 rows) and, for the Qwen MoE ones, expert gate / up (64
// rows) do not fill a 128-row scale block: those load apart while q|k|v or gate|up that can stack
// do (Mixtral's 128-row experts, the shared expert), the decoder keeps buffers for both forms, and
// the tokens are the plain CPU backend's, which loads everything apart.
class GoldenStackedFp8Cpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenStackedFp8Cpu, UnstackableBlockPartsLoadApart) {
  const std::string name = GetParam();
  const test::GoldenModel g = test::read_golden_at(test::golden_fp8_dir() / name, name);
  auto backend = std::make_unique<StackingCpuBackend>(/*allow_separate=*/true);
  const StackingCpuBackend* sb = backend.get();
  EngineOptions opts;
  opts.num_kv_blocks = 128;
  Engine stacked(load_model_folder(g.dir, std::move(backend)), opts);
  EXPECT_GT(sb->stacked_weights(), 0) << "nothing was stacked";
  Engine plain(load_model_folder(g.dir, make_cpu_backend()), opts);
  for (size_t i = 0; i < g.cases.size(); ++i) {
    const Request r = test::golden_request(g.cases[i], g.max_new_tokens);
    const auto a = generate_all(stacked, {r});
    const auto b = generate_all(plain, {r});
    ASSERT_EQ(a[0].reason, FinishReason::Length) << a[0].error;
    ASSERT_EQ(b[0].reason, FinishReason::Length) << b[0].error;
    std::vector<int32_t> ta, tb;
    for (const GeneratedToken& t : a[0].tokens) ta.push_back(t.id);
    for (const GeneratedToken& t : b[0].tokens) tb.push_back(t.id);
    EXPECT_EQ(ta, tb) << name << " case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(BlockFp8, GoldenStackedFp8Cpu,
                         ::testing::Values("llama-block", "mixtral-block", "qwen2_moe-block"), [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace inferdesk
