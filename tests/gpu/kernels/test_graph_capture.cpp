// The launchers only enqueue work on their stream: a chain of them captured into a CUDA graph (in
// global capture mode, where any allocation or synchronisation would break the capture) replays to
// bit-identical results, with programmatic dependent launch on and off.
#include <gtest/gtest.h>

#include "cuda/kernels/common.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/rope_kv.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

namespace k = inferdesk::cuda;

// Buffers of a small decode-like chain: embed -> add_rms_norm -> gemv (qkv) -> rope/KV ->
// gemv_swiglu -> gather -> rms_norm -> gemv (F32 logits).
struct Chain {
  static constexpr int64_t V = 300, H = 256, D = 64, Hq = 2, Hk = 1, I = 384, T = 3, bs = 16;
  static constexpr int64_t QKV = (Hq + 2 * Hk) * D;
  DevMatrix table{Dt::BF16, V, H}, w_qkv{Dt::BF16, QKV, H}, w_gu{Dt::BF16, 2 * I, H};
  DevMatrix norm{Dt::BF16, 1, H}, lm{Dt::BF16, V, H};
  DevMatrix residual{Dt::F32, T, H}, delta{Dt::BF16, T, H}, h{Dt::BF16, T, H}, qkv{Dt::BF16, T, QKV},
      act{Dt::BF16, T, I};
  DevMatrix last{Dt::BF16, 1, H}, logits{Dt::F32, 1, V};
  DeviceBuffer<int32_t> ids{std::vector<int32_t>{5, 299, 17}}, pos{std::vector<int32_t>{40, 41, 99999}};
  DeviceBuffer<int32_t> slots{std::vector<int32_t>{3, -1, 20}}, pick{std::vector<int32_t>{2}};
  DeviceBuffer<float> inv_freq{random_vector(D / 2, 3, 0.0f, 1.0f)};
  DeviceBuffer<bf16> kc{2 * Hk * bs * D}, vc{2 * Hk * bs * D};

  Chain() {
    k::fill_random(table.mat(), 1, 1.0f, test_launch());
    k::fill_random(w_qkv.mat(), 2, 0.05f, test_launch());
    k::fill_random(w_gu.mat(), 3, 0.05f, test_launch());
    k::fill_random(lm.mat(), 4, 0.05f, test_launch());
    norm.upload(random_bf16(H, 5, 0.5f, 1.5f));
    k::fill_random(delta.mat(), 6, 1.0f, test_launch());
  }

  void run(const k::Launch& l) {
    k::embed_rows(table.mat(), ids.get(), residual.mat(), l);
    k::add_rms_norm(residual.mat(), delta.mat(), bf16_ptr(norm), 1e-6f, h.mat(), l);
    k::gemv(h.mat(), bf16_ptr(w_qkv), QKV, H, nullptr, qkv.mat(), l);
    const k::RopeKvArgs a = fused_rope_args(static_cast<bf16*>(qkv.data()), QKV, T, Hq, Hk, D,
                                            {inv_freq.get(), pos.get(), slots.get(), kc.get(), vc.get(), bs});
    k::qk_norm_rope_write_kv(a, l);
    k::gemv_swiglu(h.mat(), bf16_ptr(w_gu), I, H, act.mat(), l);
    k::silu_mul(act.mat(), act.mat(), act.mat(), l);
    k::gather_rows(h.mat(), pick.get(), last.mat(), l);
    k::rms_norm(last.mat(), bf16_ptr(norm), 1e-6f, last.mat(), l);
    k::gemv(last.mat(), bf16_ptr(lm), V, H, nullptr, logits.mat(), l);
  }
  static const bf16* bf16_ptr(const DevMatrix& m) { return static_cast<const bf16*>(m.data()); }

  std::vector<std::vector<uint8_t>> results() const {
    return {residual.raw_download(), h.raw_download(),    qkv.raw_download(),
            act.raw_download(),      last.raw_download(), logits.raw_download()};
  }
};

// Param: programmatic dependent launch on or off.
class GpuKernelsGraph : public testing::TestWithParam<bool> {};

TEST_P(GpuKernelsGraph, CapturedChainReplaysIdentically) {
  INFERDESK_REQUIRE_GPU();
  const bool pdl = GetParam();
  Chain eager, graphed;
  sync_ok();
  eager.run(test_launch(nullptr, pdl));
  sync_ok();

  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    const CapturedGraph graph(s, [&](cudaStream_t cs) { graphed.run(test_launch(cs, pdl)); });
    graph.launch(s);
    CUDA_OK(cudaStreamSynchronize(s));
  }
  const auto want = eager.results(), got = graphed.results();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "buffer " << i;
  std::vector<bf16> kg = graphed.kc.download(), ke = eager.kc.download();
  EXPECT_EQ(std::memcmp(kg.data(), ke.data(), kg.size() * 2), 0) << "k cache differs";
  // The results are real numbers, not poison.
  for (float v : graphed.logits.download()) ASSERT_TRUE(std::isfinite(v));
  cudaStreamDestroy(s);
}

INSTANTIATE_TEST_SUITE_P(Pdl, GpuKernelsGraph, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "on" : "off"; });

}  // namespace
}  // namespace inferdesk::gputest
