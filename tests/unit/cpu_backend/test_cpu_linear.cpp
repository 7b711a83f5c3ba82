// CPU backend linear(): every weight dtype, odd shapes, every register-tile remainder, blocking,
// bias, strided views, against a double-precision reference.
#include "tests/unit/cpu_backend/cpu_test_util.h"

namespace inferdesk::test {
namespace {

class CpuLinearTest : public CpuBackendTest {
 protected:
  // Runs linear on `backend` and returns the normalised error against the reference.
  double check(Backend& backend, DType dt, int64_t T, int64_t K, int64_t O, bool with_bias, bool strided) {
    auto w = make_weight(backend, dt, O + 3, K, random_values(rng, (O + 3) * K));
    auto b = make_weight(backend, DType::BF16, 1, O, random_values(rng, O));
    // Strided views: x is a column slice of a wider tensor, out writes into the middle of a wider
    // one, w is a row slice (as when q/k/v share one fused weight).
    const int64_t pad = strided ? 5 : 0;
    Buffer xb = backend.alloc(DType::F32, T, K + pad), ob = backend.alloc(DType::F32, T, O + 2 * pad);
    Tensor x = xb.tensor().col_slice(pad, K), out = ob.tensor().col_slice(pad, O);
    Tensor wt = w->buf.tensor().row_slice(strided ? 3 : 0, O);
    const int64_t w0 = strided ? 3 : 0;
    std::vector<double> xv = set_f32(x, random_values(rng, T * K));
    poison(ob.tensor());
    Tensor bias = b->buf.tensor();
    backend.linear(x, wt, with_bias ? &bias : nullptr, out);
    std::vector<double> want(static_cast<size_t>(T * O));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double s = with_bias ? b->values[o] : 0.0;
        for (int64_t k = 0; k < K; ++k) s += xv[t * K + k] * w->values[(w0 + o) * K + k];
        want[t * O + o] = s;
      }
    std::vector<double> full = get_f32(backend, ob.tensor()), got;
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; c < O + 2 * pad; ++c) {
        const double v = full[t * (O + 2 * pad) + c];
        if (c >= pad && c < pad + O) {
          got.push_back(v);
        } else if (!std::isnan(v)) {
          ADD_FAILURE() << "linear wrote outside its output view at row " << t << " col " << c;
        }
      }
    }
    return nerr(got, want);
  }
};

TEST_P(CpuLinearTest, MatchesReferenceAcrossDtypesAndShapes) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 33, 40}) {
      for (auto [K, O] : {std::pair<int64_t, int64_t>{67, 13}, {128, 5}, {256, 67}}) {
        EXPECT_LT(check(*be, dt, T, K, O, T % 2 == 1, T % 3 == 0), 2e-6)
            << dtype_name(dt) << " T=" << T << " K=" << K << " O=" << O;
      }
    }
  }
}

TEST_P(CpuLinearTest, BlockedPathForManyRows) {
  // More than 64 rows and more than 32 outputs: the kernel walks row x token blocks, with
  // partial blocks and partial register tiles at both ends.
  for (int64_t T : {65, 70, 131}) {
    EXPECT_LT(check(*be, DType::BF16, T, 130, 75, true, T % 2 == 0), 2e-6) << "T=" << T;
  }
  EXPECT_LT(check(*be, DType::F16, 200, 67, 100, false, true), 2e-6);
}

TEST_P(CpuLinearTest, LargeShapesStayAccurate) {
  EXPECT_LT(check(*be, DType::BF16, 2, 2048, 96, false, false), 5e-6);
  EXPECT_LT(check(*be, DType::F16, 37, 1024, 50, true, true), 5e-6);
}

TEST_P(CpuLinearTest, MisalignedWeightsFromAFileAreRead) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const int64_t T = 3, K = 67, O = 9;
    auto w = make_weight(*be, dt, O, K, random_values(rng, O * K), 1);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(w->buf.tensor().data) % 2, 1u);
    Buffer x = be->alloc(DType::F32, T, K), out = be->alloc(DType::F32, T, O);
    std::vector<double> xv = set_f32(x.tensor(), random_values(rng, T * K));
    poison(out.tensor());
    be->linear(x.tensor(), w->buf.tensor(), nullptr, out.tensor());
    std::vector<double> want(T * O, 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t k = 0; k < K; ++k) want[t * O + o] += xv[t * K + k] * w->values[o * K + k];
    EXPECT_LT(nerr(get_f32(*be, out.tensor()), want), 2e-6) << dtype_name(dt);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuLinearTest, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace inferdesk::test
