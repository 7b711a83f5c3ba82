// CPU backend: rope, write_kv and paged attention against double-precision references, over
// shuffled block tables, chunked prefill, several sequences per step, GQA and sliding windows.
#include "tests/unit/cpu_backend/cpu_test_util.h"

#include <algorithm>
#include <numeric>

#include "core/util/error.h"

namespace inferdesk::test {
namespace {

class CpuAttentionTest : public CpuBackendTest {};

struct SeqSpec {
  int cached;  // tokens already in the cache before this step
  int query;   // tokens of this step
};

struct AttnCase {
  std::vector<SeqSpec> seqs;
  int heads, kv_heads, head_dim, block_size, window;
};

// softmax(scale * q k^T) v in double for every query row of the step, straight from the
// per-sequence K/V arrays ([ctx][kv_heads * head_dim]).
std::vector<double> reference(const AttnCase& c, const StepInput& step, const std::vector<double>& qv,
                              const std::vector<std::vector<double>>& K, const std::vector<std::vector<double>>& Vv,
                              double scale) {
  const int D = c.head_dim, Hq = c.heads, kv_row = c.kv_heads * D, q_cols = Hq * D;
  const int group = Hq / c.kv_heads;
  std::vector<double> want(qv.size());
  for (size_t si = 0; si < c.seqs.size(); ++si) {
    const StepSeq& sq = step.seqs[si];
    for (int t = sq.query_start; t < sq.query_start + sq.query_len; ++t) {
      const int pos = sq.context_len - sq.query_len + (t - sq.query_start);
      const int lo = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
      for (int h = 0; h < Hq; ++h) {
        const int hk = h / group;
        std::vector<double> sc;
        double mx = -1e300;
        for (int j = lo; j <= pos; ++j) {
          double d = 0;
          for (int i = 0; i < D; ++i) d += qv[t * q_cols + h * D + i] * K[si][j * kv_row + hk * D + i];
          sc.push_back(d * scale);
          mx = std::max(mx, sc.back());
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int i = 0; i < D; ++i) {
          double acc = 0;
          for (int j = lo; j <= pos; ++j) acc += sc[j - lo] * Vv[si][j * kv_row + hk * D + i];
          want[t * q_cols + h * D + i] = acc / sum;
        }
      }
    }
  }
  return want;
}

// Builds the cache over two steps (history, then this step), runs attention on layer 1 and
// returns the normalised error against a double reference.
double run_case(Backend& be, std::mt19937_64& rng, const AttnCase& c) {
  const int D = c.head_dim, Hk = c.kv_heads, Hq = c.heads, bs = c.block_size;
  const int kv_row = Hk * D;
  int total_blocks = 0;
  for (const SeqSpec& s : c.seqs) total_blocks += (s.cached + s.query + bs - 1) / bs;
  const int num_blocks = total_blocks + 5;  // some blocks stay unused
  be.init_kv_cache(KvCacheShape{2, num_blocks, bs, Hk, D});
  std::vector<int32_t> perm(num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);

  StepInput hist, step;
  hist.block_size = step.block_size = bs;
  std::vector<std::vector<double>> K(c.seqs.size()), Vv(c.seqs.size());
  std::vector<double> hist_k, hist_v, new_k, new_v;
  int next_block = 0, row = 0;
  for (size_t si = 0; si < c.seqs.size(); ++si) {
    const SeqSpec& s = c.seqs[si];
    const int ctx = s.cached + s.query;
    const int nb = (ctx + bs - 1) / bs;
    StepSeq q;
    q.query_start = row;
    q.query_len = s.query;
    q.context_len = ctx;
    q.block_table_start = static_cast<int32_t>(step.block_tables.size());
    q.num_blocks = nb;
    for (int b = 0; b < nb; ++b) step.block_tables.push_back(perm[next_block++]);
    step.seqs.push_back(q);
    K[si] = random_values(rng, static_cast<size_t>(ctx) * kv_row);
    Vv[si] = random_values(rng, static_cast<size_t>(ctx) * kv_row);
    for (int j = 0; j < ctx; ++j) {
      const int32_t slot = step.block_tables[q.block_table_start + j / bs] * bs + j % bs;
      StepInput& target = j < s.cached ? hist : step;
      std::vector<double>& tk = j < s.cached ? hist_k : new_k;
      std::vector<double>& tv = j < s.cached ? hist_v : new_v;
      target.token_ids.push_back(1);
      target.positions.push_back(j);
      target.slot_mapping.push_back(slot);
      tk.insert(tk.end(), K[si].begin() + j * kv_row, K[si].begin() + (j + 1) * kv_row);
      tv.insert(tv.end(), Vv[si].begin() + j * kv_row, Vv[si].begin() + (j + 1) * kv_row);
    }
    row += s.query;
  }
  const int T = row;
  auto write = [&](int layer, const std::vector<double>& k, const std::vector<double>& v, int n) {
    if (n == 0) return;
    Buffer kb = be.alloc(DType::F32, n, kv_row), vb = be.alloc(DType::F32, n, kv_row);
    set_f32(kb.tensor(), k);
    set_f32(vb.tensor(), v);
    be.write_kv(layer, kb.tensor(), vb.tensor());
  };
  const int n_hist = static_cast<int>(hist.slot_mapping.size());
  be.begin_step(hist);
  write(1, hist_k, hist_v, n_hist);
  // Different data in layer 0 at the same slots: layers must not mix.
  write(0, random_values(rng, hist_k.size()), random_values(rng, hist_v.size()), n_hist);
  be.begin_step(step);
  write(1, new_k, new_v, T);
  write(0, random_values(rng, new_k.size()), random_values(rng, new_v.size()), T);

  // q is a column slice of a fused qkv tensor; out is strided too.
  const int q_cols = Hq * D;
  Buffer qkv = be.alloc(DType::F32, T, q_cols + 2 * kv_row), ob = be.alloc(DType::F32, T, q_cols + 8);
  Tensor q = qkv.tensor().col_slice(0, q_cols), out = ob.tensor().col_slice(0, q_cols);
  std::vector<double> qv = set_f32(q, random_values(rng, static_cast<size_t>(T) * q_cols));
  poison(ob.tensor());
  AttentionParams p{Hq, Hk, D, 1.0f / std::sqrt(static_cast<float>(D)), c.window};
  be.attention(1, q, p, out);

  std::vector<double> want = reference(c, step, qv, K, Vv, p.scale);
  std::vector<double> full = get_f32(be, ob.tensor()), got;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < q_cols + 8; ++i) {
      if (i < q_cols) {
        got.push_back(full[t * (q_cols + 8) + i]);
      } else if (!std::isnan(full[t * (q_cols + 8) + i])) {
        ADD_FAILURE() << "attention wrote outside its output view";
      }
    }
  return nerr(got, want);
}

TEST_P(CpuAttentionTest, SinglePrefillFullHeads) { EXPECT_LT(run_case(*be, rng, {{{0, 37}}, 4, 4, 64, 16, 0}), 1e-5); }

TEST_P(CpuAttentionTest, ChunkedPrefillWithGqaAndHeadDim128) {
  EXPECT_LT(run_case(*be, rng, {{{40, 23}}, 6, 2, 128, 16, 0}), 1e-5);
}

TEST_P(CpuAttentionTest, DecodeOfSeveralSequencesOddHeadCounts) {
  EXPECT_LT(run_case(*be, rng, {{{5, 1}, {100, 1}, {33, 1}}, 3, 1, 64, 8, 0}), 1e-5);
}

TEST_P(CpuAttentionTest, MixedStepDecodeChunkAndFreshPrefill) {
  EXPECT_LT(run_case(*be, rng, {{{70, 1}, {17, 9}, {0, 20}, {3, 6}}, 8, 2, 64, 16, 0}), 1e-5);
}

TEST_P(CpuAttentionTest, SlidingWindowMasksOldKeys) {
  EXPECT_LT(run_case(*be, rng, {{{70, 1}, {17, 9}, {0, 20}}, 8, 2, 64, 16, 7}), 1e-5);
  EXPECT_LT(run_case(*be, rng, {{{30, 5}}, 5, 5, 128, 4, 16}), 1e-5);
  EXPECT_LT(run_case(*be, rng, {{{40, 7}, {2, 3}}, 12, 1, 64, 16, 5}), 1e-5);  // 12 heads per kv head
}

// head_dim 36 is no multiple of the vector width (16 or 8): exercises the scalar tails and the
// per-head scatter of write_kv into the [block, kv_head, slot, dim] cache with odd strides.
TEST_P(CpuAttentionTest, HeadDimNotAMultipleOfTheVectorWidth) {
  EXPECT_LT(run_case(*be, rng, {{{20, 3}, {0, 5}, {9, 1}}, 6, 3, 36, 4, 0}), 1e-5);
}

TEST_P(CpuAttentionTest, BlockSizeOneAndLongContext) {
  EXPECT_LT(run_case(*be, rng, {{{9, 2}}, 2, 1, 64, 1, 0}), 1e-5);
  EXPECT_LT(run_case(*be, rng, {{{1500, 3}}, 4, 2, 64, 16, 0}), 1e-5);
}

TEST_P(CpuAttentionTest, BadSlotsAndBlockIdsAreReported) {
  be->init_kv_cache(KvCacheShape{1, 4, 16, 1, 64});
  StepInput s;
  s.token_ids = {1};
  s.positions = {0};
  s.slot_mapping = {64};  // one past the end
  be->begin_step(s);
  Buffer k = be->alloc(DType::F32, 1, 64);
  EXPECT_THROW(be->write_kv(0, k.tensor(), k.tensor()), Error);
  s.slot_mapping = {0};
  s.seqs = {StepSeq{0, 1, 1, 0, 1}};
  s.block_tables = {9};
  be->begin_step(s);
  be->write_kv(0, k.tensor(), k.tensor());
  EXPECT_THROW(be->attention(0, k.tensor(), AttentionParams{1, 1, 64, 1.0f, 0}, k.tensor()), Error);
}

TEST_P(CpuAttentionTest, RopeRotatesHalvesWithScaling) {
  const int T = 5, Hq = 3, Hk = 1, D = 64, rot = 48;  // partial rotary: last 16 dims untouched
  RopeConfig rc;
  rc.rotary_dim = rot;
  rc.attention_scaling = 1.25f;
  for (int d = 0; d < rot / 2; ++d) rc.inv_freq.push_back(static_cast<float>(std::pow(10000.0, -2.0 * d / rot)));
  StepInput s;
  s.token_ids.assign(T, 1);
  s.positions = {0, 1, 7, 300, 5000};
  be->begin_step(s);
  Buffer q = be->alloc(DType::F32, T, Hq * D), k = be->alloc(DType::F32, T, Hk * D);
  std::vector<double> qv = set_f32(q.tensor(), random_values(rng, T * Hq * D));
  std::vector<double> kv = set_f32(k.tensor(), random_values(rng, T * Hk * D));
  be->rope(q.tensor(), k.tensor(), Hq, Hk, D, rc);
  auto ref = [&](std::vector<double> x, int heads) {
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h) {
        double* xh = x.data() + (t * heads + h) * D;
        for (int d = 0; d < rot / 2; ++d) {
          // HF forms the angle as a float32 product.
          const double a = static_cast<float>(rc.inv_freq[d] * static_cast<float>(s.positions[t]));
          const double c = std::cos(a) * 1.25, sn = std::sin(a) * 1.25;
          const double x1 = xh[d], x2 = xh[d + rot / 2];
          xh[d] = x1 * c - x2 * sn;
          xh[d + rot / 2] = x2 * c + x1 * sn;
        }
      }
    return x;
  };
  EXPECT_LT(nerr(get_f32(*be, q.tensor()), ref(qv, Hq)), 1e-6);
  EXPECT_LT(nerr(get_f32(*be, k.tensor()), ref(kv, Hk)), 1e-6);
  // The untouched tail really is untouched.
  std::vector<double> got = get_f32(*be, q.tensor());
  for (int i = rot; i < D; ++i) EXPECT_EQ(got[D + i], qv[D + i]);
}

// Backend::qkv_rope_write_kv's default (the fused q|k|v projection, then qk_norm_rope_write_kv on
// its q | k | v column slices) gives what the decoder computed with the two calls before: the same
// qkv values and the same K/V in the cache (read back through attention), bit for bit.
TEST_P(CpuAttentionTest, FusedQkvRopeWriteKvComposesTheOps) {
  const int T = 4, K = 40, Hq = 4, Hk = 2, D = 16, bs = 16;
  const int N = (Hq + 2 * Hk) * D;
  RopeConfig rc;
  rc.rotary_dim = D;
  for (int d = 0; d < D / 2; ++d) rc.inv_freq.push_back(static_cast<float>(std::pow(10000.0, -2.0 * d / D)));
  be->init_kv_cache(KvCacheShape{2, 2, bs, Hk, D});
  StepInput s;
  s.block_size = bs;
  s.token_ids.assign(T, 1);
  s.positions = {0, 1, 2, 3};
  s.slot_mapping = {bs + 0, bs + 1, bs + 2, bs + 3};  // block 1
  StepSeq q;
  q.query_start = 0;
  q.query_len = T;
  q.context_len = T;
  q.block_table_start = 0;
  q.num_blocks = 1;
  s.seqs.push_back(q);
  s.block_tables = {1};
  be->begin_step(s);
  auto w = make_weight(*be, DType::BF16, N, K, random_values(rng, static_cast<size_t>(N) * K, 0.3));
  auto bias = make_weight(*be, DType::BF16, 1, N, random_values(rng, N));
  Buffer x = be->alloc(DType::F32, T, K);
  set_f32(x.tensor(), random_values(rng, static_cast<size_t>(T) * K));
  Buffer qkv_a = be->alloc(DType::F32, T, N), qkv_b = be->alloc(DType::F32, T, N);
  const Tensor b = bias->buf.tensor();
  // Layer 0: the fused call; layer 1: the two calls.
  be->qkv_rope_write_kv(0, x.tensor(), w->buf.tensor(), &b, qkv_a.tensor(), nullptr, nullptr, 1e-6f, Hq, Hk, D, rc);
  be->linear(x.tensor(), w->buf.tensor(), &b, qkv_b.tensor());
  Tensor tb = qkv_b.tensor();
  be->qk_norm_rope_write_kv(1, tb.col_slice(0, Hq * D), tb.col_slice(Hq * D, Hk * D),
                            tb.col_slice((Hq + Hk) * D, Hk * D), nullptr, nullptr, 1e-6f, Hq, Hk, D, rc);
  EXPECT_EQ(get_f32(*be, qkv_a.tensor()), get_f32(*be, qkv_b.tensor()));
  Buffer out_a = be->alloc(DType::F32, T, Hq * D), out_b = be->alloc(DType::F32, T, Hq * D);
  const AttentionParams p{Hq, Hk, D, 0.25f, 0};
  be->attention(0, qkv_a.tensor().col_slice(0, Hq * D), p, out_a.tensor());
  be->attention(1, qkv_b.tensor().col_slice(0, Hq * D), p, out_b.tensor());
  const std::vector<double> ga = get_f32(*be, out_a.tensor());
  EXPECT_EQ(ga, get_f32(*be, out_b.tensor()));
  for (double v : ga) ASSERT_TRUE(std::isfinite(v));
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuAttentionTest, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace inferdesk::test
