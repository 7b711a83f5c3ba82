// Programmatic dependent launch (PDL): a decode-like chain of every kernel of elementwise.cu,
// rope_kv.cu and gemv.cu (embed -> [rms_norm -> gemv -> rope/KV -> gemv -> add_rms_norm ->
// gemv_swiglu or gemv + silu_mul -> gemv -> add_inplace] x layers -> gather -> rms_norm -> gemv),
// launched with PDL on (eagerly, and captured in a CUDA graph replayed several times) must give
// bit-identical results to the same chain launched plainly (PDL off). Every intermediate buffer is
// poisoned (NaN) before each run, so a kernel that read its predecessor's output before
// pdl_wait() (or a block that wrote before it) shows up as a NaN or a stale value in some run.
#include <gtest/gtest.h>

#include <memory>

#include "cuda/kernels/common.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/rope_kv.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

namespace k = inferdesk::cuda;

// Large enough that a GEMV's grid covers the GPU several times over (so the next kernel's blocks
// really are scheduled while it drains) and small enough to run in well under a second.
constexpr int64_t M = 3, H = 1024, D = 128, Hq = 8, Hk = 2, I = 2816, V = 1000, bs = 16;
constexpr int64_t QKV = (Hq + 2 * Hk) * D;
constexpr int kLayers = 3;

const bf16* bf16_ptr(const DevMatrix& m) { return static_cast<const bf16*>(m.data()); }

struct Layer {
  DevMatrix w_qkv{Dt::BF16, QKV, H}, w_o{Dt::BF16, H, Hq*D}, w_gu{Dt::BF16, 2 * I, H};
  DevMatrix w_down{Dt::BF16, H, I}, norm1{Dt::BF16, 1, H}, norm2{Dt::BF16, 1, H};
  DevMatrix q_norm{Dt::BF16, 1, D}, k_norm{Dt::BF16, 1, D};
  DevMatrix kc{Dt::BF16, 4 * Hk*bs, D}, vc{Dt::BF16, 4 * Hk*bs, D};  // 4 cache blocks

  explicit Layer(uint64_t seed) {
    k::fill_random(w_qkv.mat(), seed + 1, 0.05f, test_launch());
    k::fill_random(w_o.mat(), seed + 2, 0.05f, test_launch());
    k::fill_random(w_gu.mat(), seed + 3, 0.05f, test_launch());
    k::fill_random(w_down.mat(), seed + 4, 0.03f, test_launch());
    norm1.upload(random_bf16(H, seed + 5, 0.5f, 1.5f));
    norm2.upload(random_bf16(H, seed + 6, 0.5f, 1.5f));
    q_norm.upload(random_bf16(D, seed + 7, 0.5f, 1.5f));
    k_norm.upload(random_bf16(D, seed + 8, 0.5f, 1.5f));
  }
};

struct Chain {
  std::vector<std::unique_ptr<Layer>> layers;
  DevMatrix table{Dt::BF16, V, H}, norm_f{Dt::BF16, 1, H}, lm{Dt::BF16, V, H};
  // Activations (all rewritten by every run).
  DevMatrix residual{Dt::F32, M, H}, h{Dt::BF16, M, H}, qkv{Dt::BF16, M, QKV}, y{Dt::BF16, M, H};
  DevMatrix gu{Dt::BF16, M, 2 * I}, act{Dt::BF16, M, I}, last{Dt::BF16, 1, H}, logits{Dt::F32, 1, V};
  DeviceBuffer<int32_t> ids{std::vector<int32_t>{7, 999, 123}}, pos{std::vector<int32_t>{5, 700, 31}};
  DeviceBuffer<int32_t> slots{std::vector<int32_t>{0, 37, -1}}, pick{std::vector<int32_t>{1}};
  DeviceBuffer<float> inv_freq{random_vector(D / 2, 11, 0.0f, 1.0f)};

  Chain() {
    for (int l = 0; l < kLayers; ++l) layers.push_back(std::make_unique<Layer>(100 * (l + 1)));
    k::fill_random(table.mat(), 1, 1.0f, test_launch());
    k::fill_random(lm.mat(), 2, 0.05f, test_launch());
    norm_f.upload(random_bf16(H, 3, 0.5f, 1.5f));
  }

  void run(const k::Launch& launch) {
    k::embed_rows(table.mat(), ids.get(), residual.mat(), launch);
    for (int l = 0; l < kLayers; ++l) {
      Layer& L = *layers[static_cast<size_t>(l)];
      k::rms_norm(residual.mat(), bf16_ptr(L.norm1), 1e-5f, h.mat(), launch);
      k::gemv(h.mat(), bf16_ptr(L.w_qkv), QKV, H, nullptr, qkv.mat(), launch);
      k::RopeKvArgs a = fused_rope_args(static_cast<bf16*>(qkv.data()), QKV, M, Hq, Hk, D,
                                        {inv_freq.get(), pos.get(), slots.get(), static_cast<bf16*>(L.kc.data()),
                                         static_cast<bf16*>(L.vc.data()), bs});
      a.q_norm = bf16_ptr(L.q_norm);
      a.k_norm = bf16_ptr(L.k_norm);
      k::qk_norm_rope_write_kv(a, launch);
      // The rotated q stands in for the attention output.
      k::gemv(qkv.cols_mat(0, Hq * D), bf16_ptr(L.w_o), H, Hq * D, nullptr, y.mat(), launch);
      k::add_rms_norm(residual.mat(), y.mat(), bf16_ptr(L.norm2), 1e-5f, h.mat(), launch);
      if (l % 2 == 0) {
        k::gemv_swiglu(h.mat(), bf16_ptr(L.w_gu), I, H, act.mat(), launch);
      } else {
        k::gemv(h.mat(), bf16_ptr(L.w_gu), 2 * I, H, nullptr, gu.mat(), launch);
        k::silu_mul(gu.cols_mat(0, I), gu.cols_mat(I, I), act.mat(), launch);
      }
      k::gemv(act.mat(), bf16_ptr(L.w_down), H, I, nullptr, y.mat(), launch);
      k::add_inplace(residual.mat(), y.mat(), launch);
    }
    k::gather_rows(residual.mat(), pick.get(), last.mat(), launch);
    k::rms_norm(last.mat(), bf16_ptr(norm_f), 1e-5f, last.mat(), launch);
    k::gemv(last.mat(), bf16_ptr(lm), V, H, nullptr, logits.mat(), launch);
  }

  std::vector<DevMatrix*> activations() {
    std::vector<DevMatrix*> v{&residual, &h, &qkv, &y, &gu, &act, &last, &logits};
    for (auto& L : layers) {
      v.push_back(&L->kc);
      v.push_back(&L->vc);
    }
    return v;
  }
  // Poisons every activation and cache (0xFF: NaN) on `s`.
  void poison(cudaStream_t s) {
    for (DevMatrix* m : activations()) {
      const size_t bytes = static_cast<size_t>(m->rows() * m->stride()) * (m->dt() == Dt::F32 ? 4 : 2);
      if (cudaMemsetAsync(m->data(), 0xFF, bytes, s) != cudaSuccess) throw std::runtime_error("poison failed");
    }
  }
  std::vector<std::vector<uint8_t>> results() {
    std::vector<std::vector<uint8_t>> r;
    for (DevMatrix* m : activations()) r.push_back(m->raw_download());
    return r;
  }
};

// gu is only written on odd layers; with one layer or an all-swiglu chain it would stay poisoned.
static_assert(kLayers >= 2, "the chain must use both SwiGLU variants");

void expect_same(const std::vector<std::vector<uint8_t>>& got, const std::vector<std::vector<uint8_t>>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  static const char* const names[] = {"residual", "h", "qkv", "y", "gu", "act", "last", "logits"};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(got[i] == want[i]) << what << ": buffer " << (i < 8 ? names[i] : "k/v cache " + std::to_string(i - 8))
                                   << " differs from the chain without PDL";
}

TEST(GpuKernelsPdl, ChainWithPdlMatchesPlainLaunches) {
  INFERDESK_REQUIRE_GPU();
  Chain chain;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sync_ok();

  std::vector<std::vector<uint8_t>> want;
  {
    chain.poison(s);
    chain.run(test_launch(s, /*pdl=*/false));
    CUDA_OK(cudaStreamSynchronize(s));
    want = chain.results();
  }
  // The reference is made of real numbers: logits finite and not all equal.
  const std::vector<float> logits = chain.logits.download();
  for (float v : logits) ASSERT_TRUE(std::isfinite(v)) << "reference chain produced NaN";
  EXPECT_GT(*std::max_element(logits.begin(), logits.end()), *std::min_element(logits.begin(), logits.end()));

  for (int rep = 0; rep < 3; ++rep) {
    chain.poison(s);
    chain.run(test_launch(s, /*pdl=*/true));
    CUDA_OK(cudaStreamSynchronize(s));
    expect_same(chain.results(), want, "eager run " + std::to_string(rep) + " with PDL");
  }
  {
    const CapturedGraph graph(s, [&](cudaStream_t cs) { chain.run(test_launch(cs, /*pdl=*/true)); });
    int dev = 0, major = 0;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major >= 9)
      EXPECT_GT(graph.programmatic_edges(), 0u) << "PDL is on but the graph has no programmatic edge";
    else
      EXPECT_EQ(graph.programmatic_edges(), 0u) << "PDL needs compute capability 9.0";
    for (int rep = 0; rep < 8; ++rep) {
      chain.poison(s);
      graph.launch(s);
      CUDA_OK(cudaStreamSynchronize(s));
      expect_same(chain.results(), want, "graph replay " + std::to_string(rep) + " with PDL");
    }
  }
  {
    const CapturedGraph graph(s, [&](cudaStream_t cs) { chain.run(test_launch(cs, /*pdl=*/false)); });
    EXPECT_EQ(graph.programmatic_edges(), 0u) << "PDL is off but the graph has programmatic edges";
  }
  cudaStreamDestroy(s);
}

TEST(GpuKernelsPdl, SwitchFollowsTheDevice) {
  INFERDESK_REQUIRE_GPU();
  int dev = 0, major = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  EXPECT_EQ(k::pdl_supported(), major >= 9);
  EXPECT_EQ(k::uses_pdl(k::Launch{nullptr, true}), major >= 9) << "requested PDL applies where the device supports it";
  EXPECT_FALSE(k::uses_pdl(k::Launch{nullptr, false}));
  EXPECT_FALSE(k::uses_pdl(k::Launch{})) << "a default Launch asks for no PDL";
}

}  // namespace
}  // namespace inferdesk::gputest
