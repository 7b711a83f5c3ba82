// CudaBackend::moe_experts against the CPU backend: the small-batch path (T = 1, 2, 8), the
// large-batch path (T = 37, 300 with the grouped path off, and T = 8 with the small path switched
// off), the large path cut into several chunks, experts that receive no tokens, every token routed
// to the same experts, stacked and separate gate/up weights, hidden/intermediate sizes that are
// multiples of 8 but not of the kernels' tiles, BF16 activations. The output sits in a poisoned
// allocation (extra rows and columns must stay poisoned). Each call checks which path served it.
// Also: the per-layer expert counters through all three paths, and bit-identical results when the
// same call runs twice. The grouped path's own cases are in test_moe_grouped.cpp.
#include <gtest/gtest.h>

#include <random>

#include "tests/gpu/moe/moe_harness.h"

namespace inferdesk::gputest {
namespace {

void run_cases(const CudaBackendOptions& o, const std::vector<int>& token_counts, Path path) {
  MoePair p(o);
  // (E, k, H, I, stacked): Mixtral-like (few experts, k = 2), Qwen1.5-MoE-like (60, k = 4),
  // Qwen3-MoE-like (128, k = 8); H and I multiples of 8, not of 16/32/256.
  struct Shape {
    int E, k;
    int64_t H, I;
    bool stacked;
  };
  for (const Shape s : {Shape{8, 2, 136, 88, true}, Shape{60, 4, 264, 184, false}, Shape{128, 8, 128, 40, true}}) {
    const MoePair::Experts ex = p.experts(s.E, s.H, s.I, static_cast<uint64_t>(s.E), s.stacked);
    for (int T : token_counts)
      for (Route r : {Route::Random, Route::AllToSame, Route::FewExperts})
        run_experts(p, ex, {T, s.E, s.k, s.H, s.I, s.stacked, r}, 0, path);
  }
}

TEST(GpuMoeExperts, SmallBatchPathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  run_cases({}, {1, 2, 8}, Path::Small);
}

TEST(GpuMoeExperts, LargeBatchPathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_grouped_max_pairs = 0;  // (T = 37 would take it)
  run_cases(o, {37, 300}, Path::Large);
}

TEST(GpuMoeExperts, LargeBatchPathServesSmallBatchesWhenTheSmallPathIsOff) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.small_batch_gemv = false;  // also switches the grouped path off
  run_cases(o, {1, 8, 37}, Path::Large);
}

TEST(GpuMoeExperts, LargeBatchPathInSeveralChunks) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  // About 20 tokens per chunk for these sizes: 300 tokens take 15 chunks, 37 take 2.
  o.moe_scratch_bytes = 160 << 10;
  o.moe_grouped_max_pairs = 0;  // (T = 37 would take it; its scratch would also come off the 160 KiB)
  MoePair p(o);
  const MoePair::Experts ex = p.experts(8, 256, 192, 5, true);
  for (int T : {37, 300})
    for (Route r : {Route::Random, Route::FewExperts}) run_experts(p, ex, {T, 8, 2, 256, 192, true, r}, 0, Path::Large);
}

TEST(GpuMoeExperts, LargeModelWidths) {
  INFERDESK_REQUIRE_GPU();
  // Qwen3-30B-A3B's expert shape (H 2048, I 768, 128 experts of which 16 are loaded here) through
  // the three paths: long rows for the 16-byte loads and several load batches per warp. 16 experts
  // at top-8: the grouped path up to 16 * 16 = 256 pairs (32 rows).
  MoePair p;
  const MoePair::Experts ex = p.experts(16, 2048, 768, 9, true);
  for (int T : {1, 4, 8}) run_experts(p, ex, {T, 16, 8, 2048, 768, true, Route::Random}, 0, Path::Small);
  for (int T : {9, 32}) run_experts(p, ex, {T, 16, 8, 2048, 768, true, Route::Random}, 0, Path::Grouped);
  run_experts(p, ex, {64, 16, 8, 2048, 768, true, Route::Random}, 0, Path::Large);
}

TEST(GpuMoeExperts, SameCallTwiceGivesTheSameBits) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  const MoePair::Experts ex = p.experts(60, 264, 184, 3, false);
  for (int T : {8, 32, 300}) {  // small, grouped (128 of 960 pairs), large
    const ExpertCase c{T, 60, 4, 264, 184, false, Route::Random};
    const std::vector<float> a = run_experts(p, ex, c), b = run_experts(p, ex, c);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "T " << T;
  }
}

TEST(GpuMoeExperts, CountersMatchTheCpuPerLayerAndExpert) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  const int E = 8;
  const MoePair::Experts ex = p.experts(E, 136, 88, 4, true);
  p.cpu().init_expert_counters(3, E);
  p.gpu().init_expert_counters(3, E);
  run_experts(p, ex, {5, E, 2, 136, 88, true, Route::Random}, 1, Path::Small);
  run_experts(p, ex, {5, E, 2, 136, 88, true, Route::Random}, 1, Path::Small);
  run_experts(p, ex, {40, E, 2, 136, 88, true, Route::FewExperts}, 2, Path::Grouped);  // 80 <= 128 pairs
  run_experts(p, ex, {100, E, 2, 136, 88, true, Route::Random}, 0, Path::Large);
  run_experts(p, ex, {3, E, 2, 136, 88, true, Route::AllToSame}, 7);  // layer out of range: not counted
  const std::vector<int64_t> want = p.cpu().expert_counts(), got = p.gpu().expert_counts();
  ASSERT_EQ(want.size(), static_cast<size_t>(3 * E));
  EXPECT_EQ(got, want);
  int64_t layer1 = 0;
  for (int e = 0; e < E; ++e) layer1 += got[static_cast<size_t>(E + e)];
  EXPECT_EQ(layer1, 2 * 5 * 2);
  int64_t layer0 = 0, layer2 = 0;
  for (int e = 0; e < E; ++e) layer0 += got[static_cast<size_t>(e)], layer2 += got[static_cast<size_t>(2 * E + e)];
  EXPECT_EQ(layer0, 100 * 2);
  EXPECT_EQ(layer2, 40 * 2);
  p.gpu().init_expert_counters(3, E);
  EXPECT_EQ(p.gpu().expert_counts(), std::vector<int64_t>(3 * E, 0));
}

TEST(GpuMoeExperts, RejectsExpertsOfDifferentShapes) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  MoePair::Experts a = p.experts(2, 64, 32, 1, false);
  const MoePair::Experts b = p.experts(1, 64, 48, 2, false);
  a.gpu[1] = b.gpu[0];
  const GpuMat x = p.gpu_mat(DType::BF16, 1, 64, std::vector<float>(64, 0.5f));
  const GpuMat ids = p.gpu_mat(DType::I32, 1, 1, {1.0f});
  const GpuMat w = p.gpu_mat(DType::F32, 1, 1, {1.0f});
  const GpuMat out = p.gpu_mat(DType::BF16, 1, 64);
  try {
    p.gpu().moe_experts(0, x.view, a.gpu, ids.view, w.view, out.view);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
  }
}

}  // namespace
}  // namespace inferdesk::gputest
