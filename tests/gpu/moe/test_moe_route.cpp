// CudaBackend::moe_route and sigmoid_gate_add against the CPU backend. Routing: expert ids must be
// identical (ties included: lower id first), weights within float rounding; logits quantised to a
// grid so that rows hold many exact ties but no near ties (where the GPU's expf and the CPU's exp
// could order two probabilities differently). Outputs start poisoned, and their padding columns
// must stay poisoned.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/gpu/moe/moe_harness.h"

namespace inferdesk::gputest {
namespace {

struct RouteCase {
  int T, E, k;
  bool normalize;
  int levels;  // logits take `levels` distinct values (few: heavy ties)
};

std::ostream& operator<<(std::ostream& os, const RouteCase& c) {
  return os << "T " << c.T << " E " << c.E << " k " << c.k << (c.normalize ? " normalize" : "") << " levels "
            << c.levels;
}

std::vector<float> grid_logits(const RouteCase& c, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> lv(0, c.levels - 1);
  std::vector<float> v(static_cast<size_t>(c.T * c.E));
  // Values on a grid of 1/16 in [-4, 4): distinct values differ by >= 1/16.
  for (float& x : v) x = -4.0f + static_cast<float>(lv(g)) * (8.0f / static_cast<float>(c.levels));
  // Row 0: all equal (ids 0..k-1). Row 1: a NaN logit (probability 0, as on the CPU).
  for (int e = 0; e < c.E; ++e) v[static_cast<size_t>(e)] = 0.5f;
  if (c.T > 1 && c.E > c.k) v[static_cast<size_t>(c.E + 1)] = NAN;
  return v;
}

void run_route(const RouteCase& c, int ids_pad, int w_pad) {
  SCOPED_TRACE(testing::Message() << c << " pads " << ids_pad << "/" << w_pad);
  MoePair p;
  const std::vector<float> logits = grid_logits(c, static_cast<uint64_t>(c.T * 131 + c.E * 7 + c.k));
  const Tensor cl = p.cpu_f32(c.T, c.E, logits);
  const Tensor cids = p.cpu_i32(c.T, c.k, std::vector<int32_t>(static_cast<size_t>(c.T * c.k), -7));
  const Tensor cw = p.cpu_f32(c.T, c.k, std::vector<float>(static_cast<size_t>(c.T * c.k), NAN));
  p.cpu().moe_route(cl, c.k, c.normalize, cids, cw);
  const GpuMat gl = p.gpu_mat(DType::F32, c.T, c.E, logits);
  const GpuMat gids = p.gpu_mat(DType::I32, c.T, c.k, {}, ids_pad, 1);
  const GpuMat gw = p.gpu_mat(DType::F32, c.T, c.k, {}, w_pad, 1);
  p.gpu().moe_route(gl.view, c.k, c.normalize, gids.view, gw.view);

  const std::vector<float> want_ids = MoePair::host(p.cpu(), cids);
  const std::vector<float> got_ids = MoePair::host(p.gpu(), gids.view);
  const std::vector<float> want_w = MoePair::host(p.cpu(), cw);
  const std::vector<float> got_w = MoePair::host(p.gpu(), gw.view);
  int bad_ids = 0;
  for (size_t i = 0; i < want_ids.size(); ++i) {
    if (got_ids[i] != want_ids[i] && bad_ids++ < 5)
      ADD_FAILURE() << "token " << i / c.k << " slot " << i % c.k << ": expert " << got_ids[i] << ", CPU "
                    << want_ids[i];
    // Same probabilities up to float rounding (expf vs exp, the order of the softmax sum).
    EXPECT_NEAR(got_w[i], want_w[i], 1e-5 * std::max(1.0f, std::fabs(want_w[i])))
        << "token " << i / c.k << " slot " << i % c.k;
  }
  EXPECT_EQ(bad_ids, 0);
  for (int j = 0; j < c.k; ++j) EXPECT_EQ(got_ids[static_cast<size_t>(j)], j) << "all-equal row";
  if (c.normalize) {
    for (int t = 0; t < c.T; ++t) {
      double s = 0;
      for (int j = 0; j < c.k; ++j) s += got_w[static_cast<size_t>(t * c.k + j)];
      EXPECT_NEAR(s, 1.0, 1e-5) << "token " << t;
    }
  }
  EXPECT_EQ(p.damaged(gids), 0);
  EXPECT_EQ(p.damaged(gw), 0);
}

TEST(GpuMoeRoute, MatchesCpuIncludingTies) {
  INFERDESK_REQUIRE_GPU();
  // Up to 256 experts one warp routes a token (lanes partly past E at 33 and 60), above that one
  // block; 37 tokens leave the last block of 4 warps partly empty.
  for (int E : {8, 33, 60, 128, 256, 300})
    for (int k : {1, 2, 8})
      for (bool normalize : {false, true}) {
        if (k > E) continue;
        run_route({37, E, k, normalize, 128}, 0, 0);  // mostly distinct values, some ties
        run_route({9, E, k, normalize, 3}, 0, 0);     // heavy ties: lower ids must win
      }
}

TEST(GpuMoeRoute, StridedOutputsAndEveryExpertChosen) {
  INFERDESK_REQUIRE_GPU();
  run_route({5, 8, 2, true, 128}, 3, 5);
  run_route({300, 60, 4, false, 128}, 1, 2);  // many tokens: one block each
  run_route({4, 8, 8, true, 128}, 0, 0);      // k == E: every expert, in probability order
}

TEST(GpuMoeRoute, RejectsTopKAboveExperts) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;
  const GpuMat l = p.gpu_mat(DType::F32, 2, 4, std::vector<float>(8, 0.0f));
  const GpuMat ids = p.gpu_mat(DType::I32, 2, 5), w = p.gpu_mat(DType::F32, 2, 5);
  EXPECT_THROW(p.gpu().moe_route(l.view, 5, true, ids.view, w.view), Error);
}

TEST(GpuMoeSharedExpertGate, SigmoidGateAddMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  const int T = 7;
  const int64_t H = 200;
  MoePair p;
  const std::vector<float> out0 = round_bf16(random_vector(static_cast<size_t>(T * H), 1, -2, 2));
  const std::vector<float> x = round_bf16(random_vector(static_cast<size_t>(T * H), 2, -2, 2));
  std::vector<float> gate = random_vector(static_cast<size_t>(T), 3, -6, 6);
  gate[0] = 0.0f;  // sigmoid 0.5
  const Tensor cout = p.cpu_f32(T, H, out0);
  p.cpu().sigmoid_gate_add(cout, p.cpu_f32(T, H, x), p.cpu_f32(T, 1, gate));
  const GpuMat gout = p.gpu_mat(DType::BF16, T, H, out0, 8, 1);
  const GpuMat gx = p.gpu_mat(DType::BF16, T, H, x);
  const GpuMat gg = p.gpu_mat(DType::F32, T, 1, gate);
  p.gpu().sigmoid_gate_add(gout.view, gx.view, gg.view);
  const std::vector<float> want = MoePair::host(p.cpu(), cout);
  EXPECT_LT(normalised_error(MoePair::host(p.gpu(), gout.view), round_bf16(want)), 5e-3);
  EXPECT_EQ(p.damaged(gout), 0);
}

}  // namespace
}  // namespace inferdesk::gputest
