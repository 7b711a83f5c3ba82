// gemv / gemv_swiglu (cuda/kernels/gemv.cu) against the CPU backend's linear with the same BF16
// weights: every row count 1..8, widths that are not multiples of the 16-row tiles or the 32-wide
// k steps, strided and misaligned x (vector and scalar x loads), misaligned W and K % 8 != 0 (the
// fallback kernel), bias on and off, F32 and BF16 outputs. y has 8 poisoned rows; only the first
// M may change.
#include <gtest/gtest.h>

#include "core/util/error.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/gemv_tuning.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

struct GemvCase {
  int M;
  int64_t N, K;
  bool bias;
  Dt ydt;
  int64_t x_pad = 8;     // x row stride K + x_pad (8: aligned rows; odd: scalar x loads)
  int64_t w_offset = 0;  // elements W is shifted by (1: misaligned, fallback kernel)
  int warps = 0;         // warps per block of the tensor-core kernel (0: gemv()'s choice)
};

std::ostream& operator<<(std::ostream& os, const GemvCase& c) {
  return os << "M " << c.M << " N " << c.N << " K " << c.K << (c.bias ? " bias" : "") << " y " << dt_name(c.ydt)
            << " x stride K+" << c.x_pad << " W offset " << c.w_offset << " warps " << c.warps;
}

// F32 output: products of bf16 values are exact in F32 and only the order (and, in the tensor
// cores, the rounding) of the F32 accumulation differs: ~1e-6 for these K, so 1e-4 (the
// project's bound for F32 paths with identical inputs) is safe. BF16 output: see kTolBf16.
constexpr double kTolGemvF32 = 1e-4;

void check_outputs(const DevMatrix& y, int M, const std::vector<float>& want, Dt ydt) {
  const std::vector<float> got = y.download();
  const std::vector<float> first(got.begin(), got.begin() + M * y.cols());
  EXPECT_LT(normalised_error(first, ydt == Dt::BF16 ? round_bf16(want) : want),
            ydt == Dt::F32 ? kTolGemvF32 : kTolBf16);
  for (size_t i = static_cast<size_t>(M * y.cols()); i < got.size(); ++i)
    ASSERT_TRUE(std::isnan(got[i])) << "row " << i / y.cols() << " >= M was written";
  EXPECT_EQ(y.damaged_padding(), 0);
}

void run_gemv(const GemvCase& c) {
  SCOPED_TRACE(testing::Message() << c);
  const std::vector<float> x = random_bf16(static_cast<size_t>(c.M * c.K), c.K + c.M);
  const std::vector<float> w = random_bf16(static_cast<size_t>(c.N * c.K), c.N * 3 + c.K);
  const std::vector<float> bias = random_bf16(static_cast<size_t>(c.N), c.N, -4.f, 4.f);
  CpuRef cpu;
  const std::vector<float> want = cpu_linear(cpu, x, c.M, c.K, w, c.N, c.bias ? &bias : nullptr);

  DevMatrix dx(Dt::BF16, c.M, c.K, c.K + c.x_pad);
  dx.upload(x);
  DevWeight dw(w, c.w_offset);
  DevMatrix dbias(Dt::BF16, 1, c.N);
  dbias.upload(bias);
  DevMatrix y(c.ydt, cuda::kGemvMaxRows, c.N, c.N + 3);
  Mat ym = y.mat();
  ym.rows = c.M;
  const bf16* b = c.bias ? static_cast<const bf16*>(dbias.data()) : nullptr;
  if (c.warps == 0)
    cuda::gemv(dx.mat(), dw.get(), c.N, c.K, b, ym, test_launch());
  else
    cuda::gemv_with_warps(c.warps, dx.mat(), dw.get(), c.N, c.K, b, ym, test_launch());
  sync_ok();
  check_outputs(y, c.M, want, c.ydt);
}

void run_swiglu(const GemvCase& c) {
  SCOPED_TRACE(testing::Message() << "swiglu " << c);
  const int64_t I = c.N;
  const std::vector<float> x = random_bf16(static_cast<size_t>(c.M * c.K), c.K + c.M + 1);
  const std::vector<float> w = random_bf16(static_cast<size_t>(2 * I * c.K), I * 5 + c.K, -2.f, 2.f);
  // Reference: both halves through the CPU linear, then the CPU silu_mul.
  CpuRef cpu;
  const std::vector<float> gu = cpu_linear(cpu, x, c.M, c.K, w, 2 * I, nullptr);
  std::vector<float> gate(static_cast<size_t>(c.M * I)), up(gate.size());
  for (int m = 0; m < c.M; ++m)
    for (int64_t i = 0; i < I; ++i) {
      gate[static_cast<size_t>(m * I + i)] = gu[static_cast<size_t>(m * 2 * I + i)];
      up[static_cast<size_t>(m * I + i)] = gu[static_cast<size_t>(m * 2 * I + I + i)];
    }
  const Tensor out = cpu.zeros(c.M, I);
  cpu->silu_mul(cpu.tensor(c.M, I, gate), cpu.tensor(c.M, I, up), out);
  const std::vector<float> want = cpu.host(out);

  DevMatrix dx(Dt::BF16, c.M, c.K, c.K + c.x_pad);
  dx.upload(x);
  DevWeight dw(w, c.w_offset);
  DevMatrix y(c.ydt, cuda::kGemvMaxRows, I, I + 3);
  Mat ym = y.mat();
  ym.rows = c.M;
  cuda::gemv_swiglu(dx.mat(), dw.get(), I, c.K, ym, test_launch());
  sync_ok();
  check_outputs(y, c.M, want, c.ydt);
}

TEST(GpuGemv, EveryRowCountOddShapes) {
  INFERDESK_REQUIRE_GPU();
  // N = 67: a partial 16-row tile; K = 296: 9 whole k steps of 32 plus one with a single chunk.
  for (int M = 1; M <= cuda::kGemvMaxRows; ++M) {
    run_gemv({M, 67, 296, M % 2 == 1, M % 3 == 0 ? Dt::BF16 : Dt::F32});
    run_gemv({M, 16, 32, false, Dt::F32});
  }
}

TEST(GpuGemv, ModelSizedShapes) {
  INFERDESK_REQUIRE_GPU();
  run_gemv({1, 4096 + 16, 4096, false, Dt::BF16});
  run_gemv({8, 1000, 14336, true, Dt::F32});  // long K: many batches per warp
  run_gemv({3, 129, 2048 + 8, true, Dt::BF16});
  run_gemv({2, 8191, 512, false, Dt::F32});
}

TEST(GpuGemv, StridedAndMisalignedInputs) {
  INFERDESK_REQUIRE_GPU();
  for (int M : {1, 4, 8}) {
    run_gemv({M, 67, 296, true, Dt::F32, 3});      // x rows misaligned: scalar x loads
    run_gemv({M, 67, 296, true, Dt::F32, 0});      // dense x
    run_gemv({M, 67, 296, true, Dt::BF16, 8, 1});  // W misaligned: fallback kernel
    run_gemv({M, 45, 301, false, Dt::F32, 0});     // K % 8 != 0: fallback kernel
  }
}

TEST(GpuGemv, EachBlockConfiguration) {
  INFERDESK_REQUIRE_GPU();
  // The 4- and 8-warp tensor-core kernels (gemv() picks one per shape): K split over 4 warps
  // changes every warp's steps and the epilogue's partial sums.
  for (int warps : {4, 8}) {
    for (int M = 1; M <= cuda::kGemvMaxRows; ++M) run_gemv({M, 67, 296, M % 2 == 0, Dt::F32, 8, 0, warps});
    run_gemv({1, 16, 32, false, Dt::BF16, 8, 0, warps});       // one step: tail only
    run_gemv({1, 4096, 4096, false, Dt::BF16, 8, 0, warps});   // o-proj shape
    run_gemv({8, 1000, 14336, true, Dt::F32, 8, 0, warps});    // many batches per warp
    run_gemv({3, 67, 296 + 512, true, Dt::F32, 3, 0, warps});  // scalar x loads
  }
  DevMatrix x(Dt::BF16, 1, 64), y(Dt::F32, 1, 16);
  DeviceBuffer<bf16> w(16 * 64);
  EXPECT_THROW(cuda::gemv_with_warps(6, x.mat(), w.get(), 16, 64, nullptr, y.mat(), test_launch()), Error);
}

TEST(GpuGemvSwiglu, MatchesLinearThenSiluMul) {
  INFERDESK_REQUIRE_GPU();
  for (int M : {1, 2, 5, 8}) {
    run_swiglu({M, 67, 296, false, Dt::BF16});
    run_swiglu({M, 300, 4096, false, M == 2 ? Dt::F32 : Dt::BF16});
    run_swiglu({M, 67, 296, false, Dt::BF16, 3});    // scalar x loads
    run_swiglu({M, 67, 296, false, Dt::F32, 8, 1});  // fallback kernel
  }
}

TEST(GpuGemv, RejectsUnsupportedShapes) {
  INFERDESK_REQUIRE_GPU();
  DevMatrix x(Dt::BF16, 9, 64), y(Dt::F32, 9, 16);
  DeviceBuffer<bf16> w(16 * 64);
  EXPECT_THROW(cuda::gemv(x.mat(), w.get(), 16, 64, nullptr, y.mat(), test_launch()), Error);  // M > 8
  DevMatrix xf(Dt::F32, 1, 64);
  EXPECT_THROW(cuda::gemv(xf.mat(), w.get(), 16, 64, nullptr, y.mat(), test_launch()), Error);  // F32 x
}

}  // namespace
}  // namespace inferdesk::gputest
