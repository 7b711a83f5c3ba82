// CudaBackend::moe_experts against the CPU backend: the small-batch path (T = 1, 2, 8), the
// large-batch path (T = 37, 300, and T = 8 with the small path switched off), the large path cut
// into several chunks, experts that receive no tokens, every token routed to the same experts,
// stacked and separate gate/up weights, hidden/intermediate sizes that are multiples of 8 but not
// of the kernels' tiles, BF16 activations. The output sits in a poisoned allocation (extra rows and
// columns must stay poisoned). Also: the per-layer expert counters, and bit-identical results when
// the same call runs twice.
#include <gtest/gtest.h>

#include <random>

#include "tests/gpu/moe/moe_harness.h"

namespace inferdesk::gputest {
namespace {

enum class Route { Random, AllToSame, FewExperts };

struct ExpertCase {
  int T, E, k;
  int64_t H, I;
  bool stacked;
  Route route;
};

std::ostream& operator<<(std::ostream& os, const ExpertCase& c) {
  const char* r = c.route == Route::Random ? "random" : c.route == Route::AllToSame ? "all-to-same" : "few-experts";
  return os << "T " << c.T << " E " << c.E << " k " << c.k << " H " << c.H << " I " << c.I
            << (c.stacked ? " stacked" : " separate") << " route " << r;
}

// Distinct experts per token. AllToSame: every token picks experts 3, 0, 1, 2, 4, ... (so expert 3
// gets every token in slot 0). FewExperts: only experts {1, 3, E-1} and, for k > 3, the next ones
// after E-1 downwards (most experts get nothing).
std::vector<int32_t> make_ids(const ExpertCase& c, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<int32_t> ids;
  for (int t = 0; t < c.T; ++t) {
    std::vector<int32_t> pool;
    if (c.route == Route::Random) {
      for (int e = 0; e < c.E; ++e) pool.push_back(e);
      std::shuffle(pool.begin(), pool.end(), g);
    } else if (c.route == Route::AllToSame) {
      pool.push_back(3 % c.E);
      for (int e = 0; e < c.E; ++e)
        if (e != 3 % c.E) pool.push_back(e);
    } else {
      pool = {1, 3, c.E - 1};
      for (int e = c.E - 2; static_cast<int>(pool.size()) < c.k; --e)
        if (e != 1 && e != 3) pool.push_back(e);
      std::shuffle(pool.begin(), pool.end(), g);
    }
    for (int j = 0; j < c.k; ++j) ids.push_back(pool[static_cast<size_t>(j)]);
  }
  return ids;
}

std::vector<float> as_float(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

// Runs one case on both backends; returns the GPU output (to compare runs bit for bit).
std::vector<float> run_experts(MoePair& p, const MoePair::Experts& ex, const ExpertCase& c,
                               int layer = 0) {
  SCOPED_TRACE(testing::Message() << c);
  const uint64_t seed = static_cast<uint64_t>(c.T * 1009 + c.E * 17 + c.k);
  const std::vector<int32_t> ids = make_ids(c, seed);
  const std::vector<float> w = random_vector(static_cast<size_t>(c.T * c.k), seed + 1, 0.05f, 1.0f);
  const std::vector<float> x = round_bf16(random_vector(static_cast<size_t>(c.T * c.H), seed + 2));

  const Tensor cout = p.cpu_f32(c.T, c.H, std::vector<float>(static_cast<size_t>(c.T * c.H), NAN));
  p.cpu().moe_experts(layer, p.cpu_f32(c.T, c.H, x), ex.cpu, p.cpu_i32(c.T, c.k, ids),
                      p.cpu_f32(c.T, c.k, w), cout);
  const std::vector<float> want = MoePair::host(p.cpu(), cout);

  const GpuMat gx = p.gpu_mat(DType::BF16, c.T, c.H, x);
  const GpuMat gids = p.gpu_mat(DType::I32, c.T, c.k, as_float(ids));
  const GpuMat gw = p.gpu_mat(DType::F32, c.T, c.k, w);
  const GpuMat gout = p.gpu_mat(DType::BF16, c.T, c.H, {}, 8, 2);
  p.gpu().moe_experts(layer, gx.view, ex.gpu, gids.view, gw.view, gout.view);
  const std::vector<float> got = MoePair::host(p.gpu(), gout.view);
  EXPECT_LT(normalised_error(got, want), kTolMoe);
  EXPECT_EQ(p.damaged(gout), 0) << "wrote outside the output";
  return got;
}

void run_cases(const CudaBackendOptions& o, const std::vector<int>& token_counts) {
  MoePair p(o);
  // (E, k, H, I, stacked): Mixtral-like (few experts, k = 2), Qwen1.5-MoE-like (60, k = 4),
  // Qwen3-MoE-like (128, k = 8); H and I multiples of 8, not of 16/32/256.
  struct Shape {
    int E, k;
    int64_t H, I;
    bool stacked;
  };
  for (const Shape s : {Shape{8, 2, 136, 88, true}, Shape{60, 4, 264, 184, false},
                        Shape{128, 8, 128, 40, true}}) {
    const MoePair::Experts ex = p.experts(s.E, s.H, s.I, static_cast<uint64_t>(s.E), s.stacked);
    for (int T : token_counts)
      for (Route r : {Route::Random, Route::AllToSame, Route::FewExperts})
        run_experts(p, ex, {T, s.E, s.k, s.H, s.I, s.stacked, r});
  }
}

TEST(GpuMoeExperts, SmallBatchPathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  run_cases({}, {1, 2, 8});
}

TEST(GpuMoeExperts, LargeBatchPathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  run_cases({}, {37, 300});
}

TEST(GpuMoeExperts, LargeBatchPathServesSmallBatchesWhenTheSmallPathIsOff) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.small_batch_gemv = false;
  run_cases(o, {1, 8});
}

TEST(GpuMoeExperts, LargeBatchPathInSeveralChunks) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  // About 20 tokens per chunk for these sizes: 300 tokens take 15 chunks, 37 take 2.
  o.moe_scratch_bytes = 160 << 10;
  MoePair p(o);
  const MoePair::Experts ex = p.experts(8, 256, 192, 5, true);
  for (int T : {37, 300})
    for (Route r : {Route::Random, Route::FewExperts}) run_experts(p, ex, {T, 8, 2, 256, 192, true, r});
}

TEST(GpuMoeExperts, LargeModelWidths) {
  INFERDESK_REQUIRE_GPU();
  // Qwen3-30B-A3B's expert shape (H 2048, I 768, 128 experts of which 16 are loaded here) through
  // both paths: long rows for the 16-byte loads and several load batches per warp.
  MoePair p;
  const MoePair::Experts ex = p.experts(16, 2048, 768, 9, true);
  for (int T : {1, 4, 8, 64}) run_experts(p, ex, {T, 16, 8, 2048, 768, true, Route::Random});
}

TEST(GpuMoeExperts, SameCallTwiceGivesTheSameBits) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  const MoePair::Experts ex = p.experts(60, 264, 184, 3, false);
  for (int T : {8, 300}) {
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
  run_experts(p, ex, {5, E, 2, 136, 88, true, Route::Random}, 1);       // small path
  run_experts(p, ex, {5, E, 2, 136, 88, true, Route::Random}, 1);
  run_experts(p, ex, {40, E, 2, 136, 88, true, Route::FewExperts}, 2);  // large path
  run_experts(p, ex, {3, E, 2, 136, 88, true, Route::AllToSame}, 7);    // layer out of range: not counted
  const std::vector<int64_t> want = p.cpu().expert_counts(), got = p.gpu().expert_counts();
  ASSERT_EQ(want.size(), static_cast<size_t>(3 * E));
  EXPECT_EQ(got, want);
  int64_t layer1 = 0;
  for (int e = 0; e < E; ++e) layer1 += got[static_cast<size_t>(E + e)];
  EXPECT_EQ(layer1, 2 * 5 * 2);
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
