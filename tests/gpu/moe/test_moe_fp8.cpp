// CudaBackend::moe_experts with FP8 experts against the CPU backend's FP8 experts (the reference),
// the same weights and inputs through both: per-channel, per-tensor and 128 x 128 block scales
// through the small (T = 1, 2, 8), grouped (T = 9, 32) and large (T = 37, 300, and in several
// chunks) paths, gate | up stacked or separate, hidden / intermediate sizes that are not multiples
// of 128 (the block scheme's partial last groups), sizes that are not multiples of 16 (served by
// the large path's CUDA-core GEMM), Qwen3-30B-A3B's expert widths, every token routed to one
// expert, most experts idle, bit-identical repeats; typed errors for the FP8 experts the backend
// does not run. Each call checks which path served it. Tolerances: moe_fp8_harness.h.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "core/util/error.h"
#include "tests/gpu/moe/moe_fp8_harness.h"

namespace inferdesk::gputest {
namespace {

struct Fp8Shape {
  const char* name;
  int E, k;
  int64_t H, I;
  Fp8Scheme scheme;
  bool stacked;
};

// Mixtral-like (8 experts, k = 2), Qwen-MoE-like (k = 4 of 16), widths that are multiples of 16
// but not of 128 (partial block groups in both projections, separate gate / up as the loader
// keeps them when I % 128 != 0), per-tensor scales on separate weights.
std::vector<Fp8Shape> shapes() {
  return {{"channel stacked", 8, 2, 256, 192, fp8_channel(), true},
          {"channel separate odd", 16, 4, 272, 144, fp8_channel(), false},
          {"tensor separate", 8, 2, 256, 128, fp8_tensor(), false},
          {"block stacked", 8, 2, 256, 256, fp8_block(), true},
          {"block separate odd", 16, 4, 272, 144, fp8_block(), false}};
}

void print_err(const char* what, const Fp8Shape& s, double err) {
  std::printf("[ figures  ] %s %s: max normalised error %.2e\n", what, s.name, err);
}

void run_path(const CudaBackendOptions& o, const std::vector<int>& tokens, Path path, double tol) {
  for (const Fp8Shape& s : shapes()) {
    SCOPED_TRACE(s.name);
    MoePair p(o);
    const Fp8Experts ex = make_fp8_experts(p, {s.E, s.H, s.I, s.scheme, s.stacked}, static_cast<uint64_t>(s.E + s.H));
    double err = 0;
    for (int T : tokens)
      for (Route r : {Route::Random, Route::AllToSame, Route::FewExperts})
        run_experts(p, ex.ex, {T, s.E, s.k, s.H, s.I, s.stacked, r}, 0, path, tol, &err);
    print_err(path == Path::Small ? "small" : path == Path::Grouped ? "grouped" : "large", s, err);
  }
}

TEST(GpuMoeFp8, SmallPathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  run_path({}, {1, 2, 8}, Path::Small, kTolMoeFp8);
}

TEST(GpuMoeFp8, GroupedPathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_grouped_pairs_per_expert = 64;  // 128 pairs (T = 32 at k = 4) for the 8-expert shapes too
  run_path(o, {9, 32}, Path::Grouped, kTolMoeFp8);
}

TEST(GpuMoeFp8, LargePathMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_grouped_max_pairs = 0;
  run_path(o, {37, 300}, Path::Large, kTolMoeFp8Large);
}

TEST(GpuMoeFp8, LargePathServesSmallBatchesWhenTheSmallPathIsOff) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.small_batch_gemv = false;  // also switches the grouped path off
  run_path(o, {1, 8}, Path::Large, kTolMoeFp8Large);
}

TEST(GpuMoeFp8, LargePathInSeveralChunks) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_scratch_bytes = 256 << 10;  // ~40 tokens per chunk for these sizes
  o.moe_grouped_max_pairs = 0;
  for (const Fp8Scheme& sc : {fp8_channel(), fp8_block()}) {
    MoePair p(o);
    const Fp8Experts ex = make_fp8_experts(p, {8, 256, 256, sc, true}, 5);
    for (Route r : {Route::Random, Route::FewExperts})
      run_experts(p, ex.ex, {300, 8, 2, 256, 256, true, r}, 0, Path::Large, kTolMoeFp8Large);
  }
}

TEST(GpuMoeFp8, SizesNotMultiplesOf16TakeTheLargePath) {
  INFERDESK_REQUIRE_GPU();
  // 264 = 16 * 16 + 8: no whole 16-byte chunks per row, so neither the E4M3 MMA kernels nor
  // cuBLASLt serve it; the large path's CUDA-core FP8 GEMM does, for every batch size.
  for (const Fp8Scheme& sc : {fp8_channel(), fp8_block()}) {
    MoePair p;
    const Fp8Experts ex = make_fp8_experts(p, {8, 264, 136, sc, false}, 6);
    for (int T : {1, 8, 40})
      run_experts(p, ex.ex, {T, 8, 2, 264, 136, false, Route::Random}, 0, Path::Large, kTolMoeFp8);
  }
}

TEST(GpuMoeFp8, Qwen3Widths) {
  INFERDESK_REQUIRE_GPU();
  // Qwen3-30B-A3B's expert shape (H 2048, I 768; 16 of its 128 experts, top 8) through the three
  // paths in both formats: long rows, several warp steps per warp, 6 block groups in down.
  for (const Fp8Scheme& sc : {fp8_channel(), fp8_block()}) {
    SCOPED_TRACE(sc.gran == ScaleGranularity::Block ? "block" : "channel");
    MoePair p;
    const bool st = true;  // as the published checkpoints load (768 rows fill six 128-row blocks)
    const Fp8Experts ex = make_fp8_experts(p, {16, 2048, 768, sc, st}, 9);
    double small = 0, grouped = 0, large = 0;
    for (int T : {1, 4, 8})
      run_experts(p, ex.ex, {T, 16, 8, 2048, 768, st, Route::Random}, 0, Path::Small, kTolMoeFp8, &small);
    for (int T : {9, 32})
      run_experts(p, ex.ex, {T, 16, 8, 2048, 768, st, Route::Random}, 0, Path::Grouped, kTolMoeFp8, &grouped);
    run_experts(p, ex.ex, {64, 16, 8, 2048, 768, st, Route::Random}, 0, Path::Large, kTolMoeFp8Large, &large);
    std::printf("[ figures  ] Qwen3 widths %s: small %.2e grouped %.2e large %.2e\n",
                sc.gran == ScaleGranularity::Block ? "block" : "channel", small, grouped, large);
  }
}

TEST(GpuMoeFp8, SameCallTwiceGivesTheSameBits) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& sc : {fp8_channel(), fp8_block()}) {
    MoePair p;
    const Fp8Experts ex = make_fp8_experts(p, {16, 272, 144, sc, false}, 3);
    for (int T : {8, 32, 300}) {  // small, grouped (128 of 256 pairs), large
      const ExpertCase c{T, 16, 4, 272, 144, false, Route::Random};
      const double tol = T > 32 ? kTolMoeFp8Large : kTolMoeFp8;
      const std::vector<float> a = run_experts(p, ex.ex, c, 0, Path::Any, tol);
      const std::vector<float> b = run_experts(p, ex.ex, c, 0, Path::Any, tol);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "T " << T;
    }
  }
}

TEST(GpuMoeFp8, CountersMatchTheCpuThroughEveryPath) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  const int E = 8;
  const Fp8Experts ex = make_fp8_experts(p, {E, 256, 128, fp8_channel(), true}, 4);
  p.cpu().init_expert_counters(2, E);
  p.gpu().init_expert_counters(2, E);
  run_experts(p, ex.ex, {5, E, 2, 256, 128, true, Route::Random}, 1, Path::Small, kTolMoeFp8);
  run_experts(p, ex.ex, {40, E, 2, 256, 128, true, Route::FewExperts}, 0, Path::Grouped, kTolMoeFp8);
  run_experts(p, ex.ex, {100, E, 2, 256, 128, true, Route::Random}, 1, Path::Large, kTolMoeFp8Large);
  EXPECT_EQ(p.gpu().expert_counts(), p.cpu().expert_counts());
}

// The FP8 experts the backend does not run fail with Unsupported when the layer first runs.
void expect_unsupported(MoePair& p, const std::vector<ExpertWeights>& experts, int64_t H, const char* what) {
  SCOPED_TRACE(what);
  const GpuMat x = p.gpu_mat(DType::BF16, 1, H, std::vector<float>(static_cast<size_t>(H), 0.5f));
  const GpuMat ids = p.gpu_mat(DType::I32, 1, 1, {1.0f});
  const GpuMat w = p.gpu_mat(DType::F32, 1, 1, {1.0f});
  const GpuMat out = p.gpu_mat(DType::BF16, 1, H);
  try {
    p.gpu().moe_experts(0, x.view, experts, ids.view, w.view, out.view);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
  }
}

TEST(GpuMoeFp8, UnsupportedExpertsAreTypedErrors) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  // Static activation scales (one calibrated scale per expert matrix).
  const Fp8Experts st = make_fp8_experts(p, {2, 128, 64, {ScaleGranularity::Channel, ActQuant::Static, 0.01f}, false},
                                         1);
  expect_unsupported(p, st.ex.gpu, 128, "static activations");
  // Block scales of 64 x 64 (only 128 x 128 is run).
  Fp8Experts blk = make_fp8_experts(p, {2, 128, 64, fp8_block(), false}, 2);
  std::deque<QuantInfo> odd;
  for (ExpertWeights& w : blk.ex.gpu)
    for (Tensor* m : {&w.gate, &w.up, &w.down}) {
      QuantInfo& q = odd.emplace_back(*m->quant);
      q.block_n = q.block_k = 64;
      m->quant = &q;
    }
  expect_unsupported(p, blk.ex.gpu, 128, "64 x 64 blocks");
  // Quantized and BF16 experts in one layer.
  const Fp8Experts ch = make_fp8_experts(p, {2, 128, 64, fp8_channel(), false}, 3);
  MoePair::Experts bf = p.experts(2, 128, 64, 4, false);
  std::vector<ExpertWeights> mixed = ch.ex.gpu;
  mixed[1] = bf.gpu[1];
  expect_unsupported(p, mixed, 128, "mixed FP8 and BF16 experts");
}

}  // namespace
}  // namespace inferdesk::gputest
