// The decoder's stacked-weight loading (what the CUDA backend asks for: q/k/v, dense and shared
// gate/up, and each routed expert's gate/up stacked into one weight) checked on the CPU: a backend
// that forwards every op to the CPU backend but says it wants fused weights, and stacks them on the
// host. The MoE fixtures without q/k norm (the default fused q/k-norm op needs separate q and k)
// must still match transformers by vLLM's rule.
#include <gtest/gtest.h>

#include <cstring>
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
  StackingCpuBackend() : ForwardingBackend(make_cpu_backend()) {}
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
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& e, const Tensor& ids,
                   const Tensor& w, Tensor out) override {
    // The views of a stacked expert are the two row halves of one weight.
    for (const ExpertWeights& ew : e)
      if (static_cast<const char*>(ew.up.data) !=
          static_cast<const char*>(ew.gate.data) +
              ew.gate.rows * ew.gate.stride * static_cast<int64_t>(ew.gate.element_size()))
        throw Error(ErrorCode::Internal, "expert gate and up are not stacked");
    inner().moe_experts(layer, x, e, ids, w, out);
  }

 private:
  std::vector<std::shared_ptr<std::vector<std::byte>>> host_;
  int stacked_ = 0;
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

}  // namespace
}  // namespace inferdesk
