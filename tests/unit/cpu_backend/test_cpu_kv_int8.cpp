// The 8-bit KV cache (KvCacheShape's Int8 definition): each token's K and V row of each KV head
// reads back as (q - z) * s with s and z from that row's range. Attention over it equals attention
// over an ordinary cache holding the same rows rounded by a double-precision implementation of
// the definition written here.
#include <algorithm>
#include <cmath>
#include <random>

#include "tests/unit/cpu_backend/cpu_test_util.h"

namespace inferdesk::test {
namespace {

constexpr int32_t kHeads = 2, kDim = 64, kTokens = 20;

// Rows of kDim values rounded through 8 bits with their own scale and zero point, in double.
void round_rows(std::vector<double>& x) {
  for (size_t r = 0; r < x.size(); r += kDim) {
    const auto first = x.begin() + static_cast<std::ptrdiff_t>(r), last = first + kDim;
    const double lo = *std::min_element(first, last), hi = *std::max_element(first, last);
    const double s = std::max((hi - lo) / 255.0, double{kKvInt8MinScale}), z = -lo / s;
    for (auto it = first; it != last; ++it) *it = (std::clamp(std::floor(*it / s + z + 0.5), 0.0, 255.0) - z) * s;
  }
}

std::vector<double> attention_over(KvCacheDtype dt, std::vector<double> k, std::vector<double> v, bool pre_round) {
  auto b = make_cpu_backend(1);
  b->init_kv_cache(KvCacheShape{1, 4, 16, kHeads, kDim, dt, {}, {}});
  StepInput step;
  for (int32_t i = 0; i < kTokens; ++i) {
    step.token_ids.push_back(0);
    step.positions.push_back(i);
    step.slot_mapping.push_back(i);
  }
  step.seqs.push_back({0, kTokens, kTokens, 0, 2});
  step.block_tables = {0, 1};
  b->begin_step(step);
  const int64_t n = int64_t{kHeads} * kDim;
  Buffer q = b->alloc(DType::F32, kTokens, n), kb = b->alloc(DType::F32, kTokens, n),
         vb = b->alloc(DType::F32, kTokens, n);
  if (pre_round) round_rows(k), round_rows(v);
  std::mt19937_64 r(11);
  set_f32(q.tensor(), random_values(r, static_cast<size_t>(kTokens * n)));
  set_f32(kb.tensor(), k);
  set_f32(vb.tensor(), v);
  b->write_kv(0, kb.tensor(), vb.tensor());
  Buffer out = b->alloc(DType::F32, kTokens, n);
  b->attention(0, q.tensor(), AttentionParams{kHeads, kHeads, kDim, 0.125f, 0}, out.tensor());
  return get_f32(*b, out.tensor());
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

TEST(CpuKvInt8, AttentionReadsEachRowThroughItsOwnScaleAndZeroPoint) {
  std::mt19937_64 r(5);
  const size_t n = static_cast<size_t>(kTokens) * kHeads * kDim;
  std::vector<double> k = random_values(r, n, 2.0), v = random_values(r, n, 2.0);
  for (size_t i = 0; i < n; i += 7) k[i] += 3.0;  // rows whose range is not centred on zero
  const auto int8 = attention_over(KvCacheDtype::Int8, k, v, false);
  const auto rounded = attention_over(KvCacheDtype::Auto, k, v, true);
  const auto exact = attention_over(KvCacheDtype::Auto, k, v, false);
  // float32 against double scale arithmetic can move a code at an exact half step: tiny.
  EXPECT_LT(max_abs_diff(int8, rounded), 1e-5);
  EXPECT_GT(max_abs_diff(int8, exact), 1e-4);  // the rounding is really there
  EXPECT_LT(max_abs_diff(int8, exact), 0.05);
}

TEST(CpuKvInt8, AConstantRowReadsBackAsItself) {
  const size_t n = static_cast<size_t>(kTokens) * kHeads * kDim;
  std::vector<double> k(n, 0.75), v(n, -1.25);
  const auto int8 = attention_over(KvCacheDtype::Int8, k, v, false);
  for (double x : int8) EXPECT_NEAR(x, -1.25, 1e-6);  // attention over equal values is that value
}

}  // namespace
}  // namespace inferdesk::test
