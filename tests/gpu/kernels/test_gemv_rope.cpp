// gemv_qkv_rope (cuda/kernels/gemv.cu: the q|k|v GEMV with rotary embedding and the KV-cache write
// in its epilogue) against the two kernels it replaces, gemv + qk_norm_rope_write_kv, on the same
// inputs: the rotated q, k and v rows, and the whole K and V caches bit for bit (padding tokens,
// slot -1, leave the poisoned cache untouched). And the two-kernel path against the CPU backend,
// so that the comparison is anchored to the reference. Row counts 1..8, head_dim 16..256, GQA,
// bias on and off, positions up to 100k with Llama-3.1 frequencies.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "core/layers/rope.h"
#include "core/model/config.h"
#include "core/util/error.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/rope_kv.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

struct QkvRopeCase {
  int M, Hq, Hk, D;
  int64_t K;
  bool bias;
};

std::ostream& operator<<(std::ostream& os, const QkvRopeCase& c) {
  return os << "M " << c.M << " Hq " << c.Hq << " Hk " << c.Hk << " D " << c.D << " K " << c.K
            << (c.bias ? " bias" : "");
}

std::vector<uint16_t> bits(const DeviceBuffer<bf16>& b) {
  const std::vector<bf16> h = b.download();
  std::vector<uint16_t> out(h.size());
  std::memcpy(out.data(), h.data(), h.size() * 2);
  return out;
}

void run_case(const QkvRopeCase& c) {
  SCOPED_TRACE(testing::Message() << c);
  const int M = c.M, Hq = c.Hq, Hk = c.Hk, D = c.D, bs = 16;
  const int64_t N = int64_t{Hq + 2 * Hk} * D, K = c.K;
  const std::vector<float> x = random_bf16(static_cast<size_t>(M * K), 3 * M + D, -1.f, 1.f);
  const std::vector<float> w = random_bf16(static_cast<size_t>(N * K), N + K, -0.1f, 0.1f);
  const std::vector<float> bias = random_bf16(static_cast<size_t>(N), N, -0.5f, 0.5f);
  const RopeConfig rope = llama3_rope(D, 1.0f);
  std::mt19937 g(static_cast<uint32_t>(M * 7 + D));
  std::vector<int32_t> positions(static_cast<size_t>(M));
  for (int32_t& p : positions) p = std::uniform_int_distribution<int32_t>(0, 100000)(g);
  positions[0] = 100000;
  const int32_t num_blocks = 4;
  std::vector<int32_t> all(static_cast<size_t>(num_blocks * bs));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), g);
  std::vector<int32_t> slots(all.begin(), all.begin() + M);
  if (M > 2) slots[2] = -1;  // a padding row: computed, never written to the cache

  DevMatrix dx(Dt::BF16, M, K, K + 8);
  dx.upload(x);
  DeviceBuffer<bf16> dw(to_bf16(w)), db(to_bf16(bias));
  DeviceBuffer<float> inv(rope.inv_freq);
  DeviceBuffer<int32_t> dpos(positions), dslots(slots);
  const size_t cache = static_cast<size_t>(num_blocks) * Hk * bs * D;

  // Two kernels: the GEMV, then rope + cache write over its output.
  DevMatrix y2(Dt::BF16, M, N, N + 8);
  DeviceBuffer<bf16> kc2(cache), vc2(cache);
  cuda::gemv(dx.mat(), dw.get(), N, K, c.bias ? db.get() : nullptr, y2.mat(), test_launch());
  const cuda::RopeKvArgs a = fused_rope_args(static_cast<bf16*>(y2.data()), y2.stride(), M, Hq, Hk, D,
                                             {inv.get(), dpos.get(), dslots.get(), kc2.get(), vc2.get(), bs});
  cuda::qk_norm_rope_write_kv(a, test_launch());
  sync_ok();

  // One kernel.
  DevMatrix y1(Dt::BF16, M, N, N + 8);
  DeviceBuffer<bf16> kc1(cache), vc1(cache);
  cuda::GemvRope r;
  r.inv_freq = inv.get();
  r.positions = dpos.get();
  r.slot_mapping = dslots.get();
  r.k_cache = kc1.get();
  r.v_cache = vc1.get();
  r.num_q_heads = Hq;
  r.num_kv_heads = Hk;
  r.head_dim = D;
  r.block_size = bs;
  ASSERT_TRUE(cuda::gemv_qkv_rope_supported(dx.mat(), dw.get(), K, y1.mat(), r));
  cuda::gemv_qkv_rope(dx.mat(), dw.get(), K, c.bias ? db.get() : nullptr, y1.mat(), r, test_launch());
  sync_ok();

  // Both round the GEMV's sum to BF16 and rotate it with the same cos/sin; only the compiler's
  // contraction of x1 c - x2 s into an FMA may differ: at most one BF16 ulp, rarely.
  const std::vector<float> got = y1.download(), want = y2.download();
  int64_t off_by_more = 0, differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    ++differ;
    if (std::fabs(got[i] - want[i]) > std::fabs(want[i]) * (1.0f / 128.0f) + 1e-30f) ++off_by_more;
  }
  EXPECT_EQ(off_by_more, 0) << "outputs further apart than one BF16 ulp";
  EXPECT_LE(differ, static_cast<int64_t>(got.size() / 50)) << "too many outputs differ";
  EXPECT_EQ(y1.damaged_padding(), 0);
  const std::vector<uint16_t> k1 = bits(kc1), k2 = bits(kc2), v1 = bits(vc1), v2 = bits(vc2);
  EXPECT_EQ(v1, v2) << "V cache";  // v is not rotated: identical bits
  int64_t k_differ = 0, written = 0;
  for (size_t i = 0; i < k1.size(); ++i) {
    k_differ += k1[i] != k2[i];
    written += k2[i] != 0xFFFF;
  }
  EXPECT_EQ(written, static_cast<int64_t>(M - (M > 2 ? 1 : 0)) * Hk * D) << "K cache entries written";
  EXPECT_LE(k_differ, written / 50) << "K cache";

  // Anchor: the two-kernel path against the CPU backend's linear + rope.
  CpuRef cpu;
  StepInput step;
  step.positions = positions;
  step.token_ids.assign(static_cast<size_t>(M), 0);
  cpu->begin_step(step);
  Tensor out = cpu.zeros(M, N);
  Tensor tb = cpu.bf16_weight(1, N, bias);
  cpu->linear(cpu.tensor(M, K, x), cpu.bf16_weight(N, K, w), c.bias ? &tb : nullptr, out);
  Tensor q = out.col_slice(0, int64_t{Hq} * D), k = out.col_slice(int64_t{Hq} * D, int64_t{Hk} * D);
  cpu->rope(q, k, Hq, Hk, D, rope);
  EXPECT_LT(normalised_error(got, cpu.host(out)), kTolBf16);
}

TEST(GpuGemvQkvRope, MatchesTheTwoKernelsItReplaces) {
  INFERDESK_REQUIRE_GPU();
  for (int M : {1, 3, 8}) {
    run_case({M, 8, 2, 128, 512, false});  // Llama-like GQA
    run_case({M, 4, 4, 64, 264, true});    // bias (Qwen2), K not a multiple of 32
    run_case({M, 6, 2, 256, 128, false});
    run_case({M, 2, 1, 16, 96, true});  // the smallest head: one block per head of q|k
  }
}

TEST(GpuGemvQkvRope, RejectsWhatItDoesNotServe) {
  INFERDESK_REQUIRE_GPU();
  DevMatrix x(Dt::BF16, 9, 64, 72), y(Dt::BF16, 9, 3 * 32, 3 * 32);
  DeviceBuffer<bf16> w(static_cast<size_t>(3 * 32 * 64)), kc(64), vc(64);
  DeviceBuffer<float> inv(16);
  cuda::GemvRope r;
  r.inv_freq = inv.get();
  r.k_cache = kc.get();
  r.v_cache = vc.get();
  r.num_q_heads = r.num_kv_heads = 1;
  r.head_dim = 32;
  EXPECT_FALSE(cuda::gemv_qkv_rope_supported(x.mat(), w.get(), 64, y.mat(), r)) << "9 rows";
  EXPECT_THROW(cuda::gemv_qkv_rope(x.mat(), w.get(), 64, nullptr, y.mat(), r, test_launch()), Error);
  DevMatrix x8(Dt::BF16, 8, 64, 72);
  r.head_dim = 24;  // not a multiple of 16
  DevMatrix y24(Dt::BF16, 8, 3 * 24, 3 * 24);
  EXPECT_FALSE(cuda::gemv_qkv_rope_supported(x8.mat(), w.get(), 64, y24.mat(), r));
}

}  // namespace
}  // namespace inferdesk::gputest
