// CPU backend: memory, conversions and the row-wise ops against double-precision references.
#include "tests/unit/cpu_backend/cpu_test_util.h"

#include <algorithm>

#include "core/util/error.h"

namespace inferdesk::test {
namespace {

class CpuBasicTest : public CpuBackendTest {};

const DType kWeightTypes[] = {DType::F32, DType::F16, DType::BF16};

StepInput tokens_step(const std::vector<int32_t>& ids) {
  StepInput s;
  s.token_ids = ids;
  for (size_t i = 0; i < ids.size(); ++i) {
    s.positions.push_back(static_cast<int32_t>(i));
    s.slot_mapping.push_back(static_cast<int32_t>(i));
  }
  return s;
}

TEST_P(CpuBasicTest, AllocIsAlignedZeroedAndCounted) {
  const int64_t before = be->memory_info().activations;
  {
    Buffer b = be->alloc(DType::F32, 5, 67);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.tensor().data) % 64, 0u);
    EXPECT_EQ(b.tensor().stride, 67);
    EXPECT_EQ(be->memory_info().activations - before, 5 * 67 * 4);
    std::vector<double> v = get_f32(*be, b.tensor());
    for (double x : v) ASSERT_EQ(x, 0.0);
    Buffer i = be->alloc(DType::I32, 3, 3);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(i.tensor().data) % 64, 0u);
  }
  EXPECT_EQ(be->memory_info().activations, before);
  EXPECT_THROW(be->alloc(DType::F32, -1, 4), Error);
  EXPECT_THROW(be->alloc(DType::F32, int64_t{1} << 40, int64_t{1} << 20), Error);
}

TEST_P(CpuBasicTest, LoadWeightValidatesAndCountsBytes) {
  auto w = make_weight(*be, DType::BF16, 3, 5, random_values(rng, 15));
  EXPECT_EQ(be->memory_info().weights, 30);
  EXPECT_EQ(w->buf.tensor().data, static_cast<const void*>(w->bytes.data()));  // read in place
  HostTensor bad = w->host;
  bad.nbytes = 28;
  EXPECT_THROW(be->load_weight(bad, 3, 5), Error);
  EXPECT_THROW(be->load_weight(w->host, 4, 5), Error);
  HostTensor i64 = w->host;
  i64.dtype = DType::I64;
  EXPECT_THROW(be->load_weight(i64, 3, 5), Error);
  w->buf = Buffer();
  EXPECT_EQ(be->memory_info().weights, 0);
}

TEST_P(CpuBasicTest, FillRandomIsDeterministicBoundedAndSeedDependent) {
  for (DType dt : kWeightTypes) {
    Buffer a = be->alloc(dt, 7, 33), b = be->alloc(dt, 7, 33), c = be->alloc(dt, 7, 33);
    be->fill_random(a.tensor(), 42, 0.5f);
    be->fill_random(b.tensor(), 42, 0.5f);
    be->fill_random(c.tensor(), 43, 0.5f);
    std::vector<double> va = get_f32(*be, a.tensor()), vb = get_f32(*be, b.tensor()), vc = get_f32(*be, c.tensor());
    EXPECT_EQ(va, vb);
    EXPECT_NE(va, vc);
    double mean = 0;
    for (double x : va) {
      ASSERT_LE(std::fabs(x), 0.5 + 1e-3);
      mean += x;
    }
    EXPECT_LT(std::fabs(mean / va.size()), 0.1);
    EXPECT_GT(*std::max_element(va.begin(), va.end()), 0.3);
  }
}

TEST_P(CpuBasicTest, ToHostConvertsEveryDtypeAndHonoursStride) {
  for (DType dt : kWeightTypes) {
    std::vector<double> v = random_values(rng, 4 * 9);
    auto w = make_weight(*be, dt, 4, 9, v);
    Tensor t = w->buf.tensor().col_slice(2, 5);
    std::vector<double> got = get_f32(*be, t), want;
    for (int r = 0; r < 4; ++r)
      for (int c = 2; c < 7; ++c) want.push_back(w->values[r * 9 + c]);
    EXPECT_EQ(got, want);
  }
}

TEST_P(CpuBasicTest, EmbedGathersAndConvertsRows) {
  for (DType dt : kWeightTypes) {
    const int64_t V = 11, H = 67;
    auto table = make_weight(*be, dt, V, H, random_values(rng, V * H));
    std::vector<int32_t> ids = {3, 0, 10, 3, 7};
    be->begin_step(tokens_step(ids));
    Buffer out = be->alloc(DType::F32, 5, H);
    poison(out.tensor());
    be->embed(table->buf.tensor(), out.tensor());
    std::vector<double> got = get_f32(*be, out.tensor()), want;
    for (int32_t id : ids)
      for (int64_t c = 0; c < H; ++c) want.push_back(table->values[id * H + c]);
    EXPECT_EQ(got, want);
    be->begin_step(tokens_step({2, 11}));
    EXPECT_THROW(be->embed(table->buf.tensor(), out.tensor().row_slice(0, 2)), Error);
  }
}

std::vector<double> ref_rms(const std::vector<double>& x, const std::vector<double>& w, int64_t rows, int64_t n,
                            double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    double s = 1.0 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = x[r * n + i] * s * w[i];
  }
  return out;
}

TEST_P(CpuBasicTest, RmsNormMatchesReferenceForEveryWeightType) {
  for (DType dt : kWeightTypes) {
    for (int64_t n : {67, 128, 2048}) {
      const int64_t rows = 5;
      auto w = make_weight(*be, dt, 1, n, random_values(rng, n, 2.0));
      Buffer x = be->alloc(DType::F32, rows, n), out = be->alloc(DType::F32, rows, n);
      std::vector<double> xv = set_f32(x.tensor(), random_values(rng, rows * n, 3.0));
      poison(out.tensor());
      be->rms_norm(x.tensor(), w->buf.tensor(), 1e-5f, out.tensor());
      EXPECT_LT(nerr(get_f32(*be, out.tensor()), ref_rms(xv, w->values, rows, n, 1e-5)), 1e-6)
          << dtype_name(dt) << " n=" << n;
      // In place.
      be->rms_norm(x.tensor(), w->buf.tensor(), 1e-5f, x.tensor());
      EXPECT_LT(nerr(get_f32(*be, x.tensor()), ref_rms(xv, w->values, rows, n, 1e-5)), 1e-6);
    }
  }
}

TEST_P(CpuBasicTest, AddRmsNormUpdatesResidualAndNormalises) {
  const int64_t rows = 7, n = 99;
  auto w = make_weight(*be, DType::BF16, 1, n, random_values(rng, n, 2.0));
  Buffer res = be->alloc(DType::F32, rows, n), x = be->alloc(DType::F32, rows, n), out = be->alloc(DType::F32, rows, n);
  std::vector<double> rv = set_f32(res.tensor(), random_values(rng, rows * n));
  std::vector<double> xv = set_f32(x.tensor(), random_values(rng, rows * n));
  poison(out.tensor());
  be->add_rms_norm(res.tensor(), x.tensor(), w->buf.tensor(), 1e-6f, out.tensor());
  std::vector<double> sum(rv.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = rv[i] + xv[i];
  EXPECT_LT(nerr(get_f32(*be, res.tensor()), sum), 1e-7);
  EXPECT_LT(nerr(get_f32(*be, out.tensor()), ref_rms(sum, w->values, rows, n, 1e-6)), 1e-6);
}

TEST_P(CpuBasicTest, SiluMulAddAndSigmoidGate) {
  const int64_t rows = 5, n = 67;
  Buffer g = be->alloc(DType::F32, rows, n), u = be->alloc(DType::F32, rows, n), out = be->alloc(DType::F32, rows, n);
  std::vector<double> gv = set_f32(g.tensor(), random_values(rng, rows * n, 12.0));
  std::vector<double> uv = set_f32(u.tensor(), random_values(rng, rows * n, 2.0));
  poison(out.tensor());
  be->silu_mul(g.tensor(), u.tensor(), out.tensor());
  std::vector<double> want(gv.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = gv[i] / (1 + std::exp(-gv[i])) * uv[i];
  EXPECT_LT(nerr(get_f32(*be, out.tensor()), want), 1e-6);

  be->add(out.tensor(), u.tensor());
  for (size_t i = 0; i < want.size(); ++i) want[i] += uv[i];
  EXPECT_LT(nerr(get_f32(*be, out.tensor()), want), 1e-6);

  Buffer gate = be->alloc(DType::F32, rows, 1);
  std::vector<double> gatev = set_f32(gate.tensor(), random_values(rng, rows, 4.0));
  be->sigmoid_gate_add(out.tensor(), g.tensor(), gate.tensor());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) want[r * n + i] += gv[r * n + i] / (1 + std::exp(-gatev[r]));
  EXPECT_LT(nerr(get_f32(*be, out.tensor()), want), 1e-6);
}

TEST_P(CpuBasicTest, GatherRowsPicksLogitRowsInOrder) {
  const int64_t rows = 6, n = 19;
  Buffer x = be->alloc(DType::F32, rows, n), out = be->alloc(DType::F32, 3, n);
  std::vector<double> xv = set_f32(x.tensor(), random_values(rng, rows * n));
  StepInput s = tokens_step({1, 2, 3, 4, 5, 6});
  s.logit_rows = {5, 0, 3};
  be->begin_step(s);
  poison(out.tensor());
  be->gather_rows(x.tensor(), out.tensor());
  std::vector<double> want;
  for (int r : {5, 0, 3})
    for (int64_t i = 0; i < n; ++i) want.push_back(xv[r * n + i]);
  EXPECT_EQ(get_f32(*be, out.tensor()), want);
}

TEST_P(CpuBasicTest, KvCacheMemoryIsReported) {
  KvCacheShape s{2, 10, 16, 3, 64};
  EXPECT_EQ(be->kv_block_bytes(s), 2 * 2 * 16 * 3 * 64 * 4);
  be->init_kv_cache(s);
  EXPECT_EQ(be->memory_info().kv_cache, 10 * be->kv_block_bytes(s));
  EXPECT_THROW(be->init_kv_cache(KvCacheShape{2, 0, 16, 3, 64}), Error);
  EXPECT_NE(be->name().find("cpu"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuBasicTest, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace inferdesk::test
