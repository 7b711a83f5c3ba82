// qk_norm_rope_write_kv (cuda/kernels/rope_kv.cu) against the CPU backend's rms_norm (per head) +
// rope, and the values it leaves in the paged cache: q/k/v are column slices of one fused qkv
// tensor, positions reach 100k with llama3-scaled frequencies, some tokens are padding (slot -1).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/layers/rope.h"
#include "core/model/config.h"
#include "cuda/kernels/rope_kv.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

struct RopeCase {
  int32_t tokens, q_heads, kv_heads, head_dim, rotary_dim;
  bool qk_norm;
  float attention_scaling;
  int32_t max_position;
  int64_t stride_pad = 8;  // qkv row stride = width + stride_pad (8: 16-byte rows; odd: unaligned)
};

std::ostream& operator<<(std::ostream& os, const RopeCase& c) {
  return os << "T " << c.tokens << " Hq " << c.q_heads << " Hk " << c.kv_heads << " D " << c.head_dim << " rot "
            << c.rotary_dim << (c.qk_norm ? " qk-norm" : "") << " scaling " << c.attention_scaling << " max pos "
            << c.max_position << " stride +" << c.stride_pad;
}

// Columns [c0, c0 + n) of a dense [rows, width] matrix.
std::vector<float> columns(const std::vector<float>& m, int64_t rows, int64_t width, int64_t c0, int64_t n) {
  std::vector<float> out(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(m.begin() + r * width + c0, n, out.begin() + r * n);
  return out;
}

void run_case(const RopeCase& c) {
  SCOPED_TRACE(testing::Message() << c);
  const int32_t T = c.tokens, Hq = c.q_heads, Hk = c.kv_heads, D = c.head_dim, bs = 16;
  const int64_t qw = int64_t{Hq} * D, kw = int64_t{Hk} * D, width = qw + 2 * kw;
  const int64_t stride = width + c.stride_pad;
  const std::vector<float> qkv = random_bf16(static_cast<size_t>(T * width), 17 * T + D, -2.f, 2.f);
  const std::vector<float> qn = random_bf16(static_cast<size_t>(D), D + 1, 0.5f, 1.5f);
  const std::vector<float> kn = random_bf16(static_cast<size_t>(D), D + 2, 0.5f, 1.5f);
  const RopeConfig rope = llama3_rope(c.rotary_dim, c.attention_scaling);

  std::mt19937 g(static_cast<uint32_t>(T * 31 + D));
  std::vector<int32_t> positions(static_cast<size_t>(T));
  for (int32_t& p : positions) p = std::uniform_int_distribution<int32_t>(0, c.max_position)(g);
  positions[0] = c.max_position;
  if (T > 1) positions[1] = 0;
  // Distinct slots spread over a pool bigger than needed; every 5th token is padding.
  const int32_t num_blocks = 2 * ((T + bs - 1) / bs) + 3;
  std::vector<int32_t> all(static_cast<size_t>(num_blocks * bs));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), g);
  std::vector<int32_t> slots(all.begin(), all.begin() + T);
  for (int32_t t = 3; t < T; t += 5) slots[static_cast<size_t>(t)] = -1;

  // CPU reference: per-head rms_norm (as the decoder does it) then rope, on F32 copies.
  CpuRef cpu;
  StepInput step;
  step.positions = positions;
  step.token_ids.assign(static_cast<size_t>(T), 0);
  cpu->begin_step(step);
  Tensor cq = cpu.tensor(T, qw, columns(qkv, T, width, 0, qw));
  Tensor ck = cpu.tensor(T, kw, columns(qkv, T, width, qw, kw));
  if (c.qk_norm) {
    Tensor qh = cq.reshaped(D), kh = ck.reshaped(D);
    cpu->rms_norm(qh, cpu.tensor(1, D, qn), 1e-6f, qh);
    cpu->rms_norm(kh, cpu.tensor(1, D, kn), 1e-6f, kh);
  }
  cpu->rope(cq, ck, Hq, Hk, D, rope);
  const std::vector<float> want_q = cpu.host(cq), want_k = cpu.host(ck);

  DevMatrix dqkv(Dt::BF16, T, width, stride), dqn(Dt::BF16, 1, D), dkn(Dt::BF16, 1, D);
  dqkv.upload(qkv);
  dqn.upload(qn);
  dkn.upload(kn);
  DeviceBuffer<float> d_inv(rope.inv_freq);
  DeviceBuffer<int32_t> d_pos(positions), d_slots(slots);
  const size_t cache_elems = static_cast<size_t>(num_blocks) * Hk * bs * D;
  DeviceBuffer<bf16> kc(cache_elems), vc(cache_elems);  // poisoned

  cuda::RopeKvArgs a = fused_rope_args(static_cast<bf16*>(dqkv.data()), stride, T, Hq, Hk, D,
                                       {d_inv.get(), d_pos.get(), d_slots.get(), kc.get(), vc.get(), bs});
  a.q_norm = c.qk_norm ? static_cast<const bf16*>(dqn.data()) : nullptr;
  a.k_norm = c.qk_norm ? static_cast<const bf16*>(dkn.data()) : nullptr;
  a.eps = 1e-6f;
  a.rotary_dim = c.rotary_dim;
  a.attention_scaling = c.attention_scaling;
  cuda::qk_norm_rope_write_kv(a, test_launch());
  sync_ok();

  const std::vector<float> got = dqkv.download();
  const std::vector<float> got_q = columns(got, T, width, 0, qw), got_k = columns(got, T, width, qw, kw);
  EXPECT_LT(normalised_error(got_q, want_q), kTolBf16);
  EXPECT_LT(normalised_error(got_k, want_k), kTolBf16);
  // Per token too, so one bad position (large angles) cannot hide in the total.
  for (int32_t t = 0; t < T; ++t) {
    const auto row = [&](const std::vector<float>& m, int64_t w) {
      return std::vector<float>(m.begin() + t * w, m.begin() + (t + 1) * w);
    };
    EXPECT_LT(normalised_error(row(got_q, qw), row(want_q, qw)), 2 * kTolBf16)
        << "q, token " << t << " pos " << positions[t];
    EXPECT_LT(normalised_error(row(got_k, kw), row(want_k, kw)), 2 * kTolBf16)
        << "k, token " << t << " pos " << positions[t];
  }
  const std::vector<float> want_v = columns(qkv, T, width, qw + kw, kw);
  EXPECT_EQ(max_abs_diff(columns(got, T, width, qw + kw, kw), want_v), 0.0) << "v must not change";
  EXPECT_EQ(dqkv.damaged_padding(), 0);

  // Cache: [block][kv_head][slot in block][dim]. Written slots hold the rotated k (the very bf16
  // values left in the k slice) and v; every other element keeps the poison.
  const std::vector<float> kcache = to_float(kc.download()), vcache = to_float(vc.download());
  const std::vector<bf16> kraw = kc.download(), vraw = vc.download();
  std::vector<bool> written(cache_elems, false);
  for (int32_t t = 0; t < T; ++t) {
    const int32_t s = slots[static_cast<size_t>(t)];
    if (s < 0) continue;
    for (int32_t h = 0; h < Hk; ++h)
      for (int32_t d = 0; d < D; ++d) {
        const size_t at = ((static_cast<size_t>(s / bs) * Hk + h) * bs + s % bs) * D + d;
        written[at] = true;
        const size_t src = static_cast<size_t>(t * kw + h * D + d);
        ASSERT_EQ(kcache[at], got_k[src]) << "k cache, token " << t << " head " << h << " dim " << d;
        ASSERT_EQ(vcache[at], want_v[src]) << "v cache, token " << t << " head " << h << " dim " << d;
      }
  }
  size_t stray = 0;
  for (size_t i = 0; i < cache_elems; ++i) {
    uint16_t kb, vb;
    std::memcpy(&kb, &kraw[i], 2);
    std::memcpy(&vb, &vraw[i], 2);
    if (!written[i]) stray += (kb != 0xFFFF) + (vb != 0xFFFF);
  }
  EXPECT_EQ(stray, 0u) << "cache elements written outside the token slots (slot -1 must write nothing)";
}

TEST(GpuRopeKv, MatchesCpuNormRopeAndWritesTheCache) {
  INFERDESK_REQUIRE_GPU();
  const RopeCase cases[] = {
      {9, 8, 2, 128, 128, false, 1.0f, 100000},   // Llama GQA
      {37, 4, 4, 64, 64, true, 1.0f, 100000},     // q/k norm, MHA
      {5, 6, 2, 128, 64, true, 1.2f, 100000},     // partial rotary, yarn-style scaling
      {3, 2, 1, 256, 256, false, 1.0f, 131071},   // head_dim 256
      {11, 3, 1, 96, 96, true, 1.0f, 4096},       // half = 48: pairs across lanes
      {300, 8, 2, 128, 128, true, 1.0f, 100000},  // many items
      // 16-byte path (head_dim 32..256, full rotary, aligned rows), one lane per 8 elements:
      {1, 32, 8, 128, 128, false, 1.0f, 100000},   // Llama-3.1-8B decode, 5 full blocks
      {2, 16, 8, 128, 128, true, 1.0f, 40000},     // Qwen3-like, with qk-norm
      {6, 5, 3, 32, 32, true, 1.0f, 100000},       // 4 lanes per head, one partial block
      {4, 3, 1, 256, 256, true, 1.0f, 100000},     // 32 lanes per head
      {7, 8, 2, 128, 128, true, 1.0f, 100000, 3},  // unaligned rows: scalar path, same result
  };
  for (const RopeCase& c : cases) run_case(c);
}

TEST(GpuRopeKv, WithoutCacheOnlyRotates) {
  INFERDESK_REQUIRE_GPU();
  // k_cache null: the launcher must rotate q and k and write nothing else (no crash on slots).
  const int32_t T = 4, D = 64;
  const std::vector<float> q = random_bf16(static_cast<size_t>(T * D), 5);
  DevMatrix dq(Dt::BF16, T, D), dk(Dt::BF16, T, D);
  dq.upload(q);
  dk.upload(q);
  const RopeConfig rope = llama3_rope(D, 1.0f);
  DeviceBuffer<float> d_inv(rope.inv_freq);
  DeviceBuffer<int32_t> d_pos(std::vector<int32_t>{0, 1, 2, 3}), d_slots(std::vector<int32_t>{0, 1, 2, 3});
  // One q head and one k head: k is a separate matrix here, no v and no cache.
  cuda::RopeKvArgs a = fused_rope_args(static_cast<bf16*>(dq.data()), D, T, 1, 1, D,
                                       {d_inv.get(), d_pos.get(), d_slots.get(), nullptr, nullptr, 16});
  a.k = static_cast<bf16*>(dk.data());
  a.v = nullptr;
  cuda::qk_norm_rope_write_kv(a, test_launch());
  sync_ok();
  const std::vector<float> gq = dq.download();
  EXPECT_EQ(max_abs_diff(gq, dk.download()), 0.0);  // same input, same rotation
  EXPECT_EQ(max_abs_diff(std::vector<float>(gq.begin(), gq.begin() + D), std::vector<float>(q.begin(), q.begin() + D)),
            0.0);                       // position 0: identity
  EXPECT_GT(max_abs_diff(gq, q), 0.0);  // later positions rotate
}

}  // namespace
}  // namespace inferdesk::gputest
