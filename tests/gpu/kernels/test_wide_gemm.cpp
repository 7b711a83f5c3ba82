// The wide GEMMs (cuda/kernels/sm90a/wide_gemm.cu, Hopper only) against the CPU backend's
// linear_swiglu and linear on the same BF16 operands: the SwiGLU form with every instantiated tile
// width (chosen through the SM count the launcher is given) and the k-split form, row counts
// 1..64, K shorter and longer than the stage ring, strided x and y, poisoned y rows past M and
// column padding; the same bits for a row whatever M, inside a CUDA graph, and WideNorm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/util/error.h"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "cuda/kernels/wide_norm.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

namespace k = inferdesk::cuda;

#define REQUIRE_WIDE()     \
  INFERDESK_REQUIRE_GPU(); \
  if (!k::hopper_kernels_available()) GTEST_SKIP() << "wide_gemm needs an sm_90 GPU"

// The SwiGLU form on W [N, K] (gate and up stacked): y [M, N / 2].
struct WideCase {
  int M;
  int64_t N, K;
  int sms;           // the launcher sizes its grid (and so its tile width) for this many SMs
  int expect_h = 0;  // the tile half width the case is meant to exercise
};

std::ostream& operator<<(std::ostream& os, const WideCase& c) {
  return os << "M " << c.M << " N " << c.N << " K " << c.K << " sms " << c.sms;
}

std::vector<float> x_for(const WideCase& c) { return random_bf16(static_cast<size_t>(c.M * c.K), c.K + 7); }
std::vector<float> w_for(const WideCase& c) {
  return random_bf16(static_cast<size_t>(c.N * c.K), c.N * 3 + c.K, -0.25f, 0.25f);
}

// CPU reference of the SwiGLU form, rounded to BF16.
std::vector<float> cpu_swiglu(CpuRef& cpu, const std::vector<float>& x, int M, int64_t K, const std::vector<float>& w,
                              int64_t N) {
  const Tensor out = cpu.zeros(M, N / 2);
  cpu->linear_swiglu(cpu.tensor(M, K, x), cpu.bf16_weight(N, K, w), cpu.zeros(M, N), out);
  return round_bf16(cpu.host(out));
}

// Runs the case on the GPU against the CPU reference; returns the output rows.
std::vector<float> run_wide(const WideCase& c, const std::vector<float>& x, const std::vector<float>& w) {
  SCOPED_TRACE(testing::Message() << c);
  const int64_t cols = c.N / 2;
  CpuRef cpu;
  const std::vector<float> want = cpu_swiglu(cpu, x, c.M, c.K, w, c.N);
  EXPECT_EQ(k::wide_gemm_swiglu_half(c.N, c.sms), c.expect_h);
  DevMatrix dx(Dt::BF16, c.M, c.K, c.K + 8);
  dx.upload(x);
  DevWeight dw(w, 0);
  DevMatrix y(Dt::BF16, k::kWideGemmMaxRows, cols, cols + 6);
  Mat ym = y.mat();
  ym.rows = c.M;
  EXPECT_TRUE(k::wide_gemm_swiglu_supported(dx.mat(), dw.get(), c.N, c.K, ym, c.sms));
  k::wide_gemm_swiglu(dx.mat(), dw.get(), c.N, c.K, ym, c.sms, test_launch());
  sync_ok();
  const std::vector<float> got = y.download();
  const std::vector<float> rows(got.begin(), got.begin() + c.M * cols);
  EXPECT_LT(normalised_error(rows, want), kTolBf16);
  const auto written = std::count_if(got.begin() + c.M * cols, got.end(), [](float v) { return !std::isnan(v); });
  EXPECT_EQ(written, 0) << "rows >= M were written";
  EXPECT_EQ(y.damaged_padding(), 0);
  return rows;
}

void run_case(const WideCase& c) { run_wide(c, x_for(c), w_for(c)); }

// The k-split form: tiles of 2 H rows whose K halves run on the two blocks of a cluster.
void run_ksplit(int M, int64_t N, int64_t K, int sms, int expect_h) {
  SCOPED_TRACE(testing::Message() << "k-split M " << M << " N " << N << " K " << K << " sms " << sms);
  const std::vector<float> x = random_bf16(static_cast<size_t>(M * K), K + 5);
  const std::vector<float> w = random_bf16(static_cast<size_t>(N * K), N + K, -0.25f, 0.25f);
  CpuRef cpu;
  const std::vector<float> want = round_bf16(cpu_linear(cpu, x, M, K, w, N, nullptr));
  EXPECT_EQ(k::wide_gemm_ksplit_half(N, sms), expect_h);
  DevMatrix dx(Dt::BF16, M, K, K + 8);
  dx.upload(x);
  DevWeight dw(w, 0);
  DevMatrix y(Dt::BF16, k::kWideGemmMaxRows, N, N + 6);
  Mat ym = y.mat();
  ym.rows = M;
  ASSERT_TRUE(k::wide_gemm_ksplit_supported(dx.mat(), dw.get(), N, K, ym, sms));
  k::wide_gemm_ksplit(dx.mat(), dw.get(), N, K, ym, sms, test_launch());
  sync_ok();
  const std::vector<float> got = y.download();
  EXPECT_LT(normalised_error(std::vector<float>(got.begin(), got.begin() + M * N), want), kTolBf16);
  EXPECT_EQ(std::count_if(got.begin() + M * N, got.end(), [](float v) { return !std::isnan(v); }), 0);
  EXPECT_EQ(y.damaged_padding(), 0);
}

TEST(GpuWideGemm, KSplitMatchesCpu) {
  REQUIRE_WIDE();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  for (int M : {1, 17, 64}) run_ksplit(M, 256, 1024, 8, 32);  // 4 tiles of 64 rows x 2 halves
  run_ksplit(40, 384, 512, 8, 48);                            // 4 tiles of 96 rows; 2 stages per half
  if (sms >= 128) {
    run_ksplit(64, 4096, 4096, sms, 32);   // Llama-8B o
    run_ksplit(64, 6144, 4096, sms, 48);   // qkv
    run_ksplit(33, 4096, 14336, sms, 32);  // down
  }
  DevMatrix x(Dt::BF16, 8, 320), y(Dt::BF16, 8, 256);
  DeviceBuffer<bf16> w(256 * 320);
  EXPECT_FALSE(k::wide_gemm_ksplit_supported(x.mat(), w.get(), 256, 320, y.mat(), 8));  // K % 256
  EXPECT_EQ(k::wide_gemm_ksplit_half(200, 8), 0);
}

TEST(GpuWideGemm, SwigluMatchesCpu) {
  REQUIRE_WIDE();
  for (int M : {1, 12, 64}) run_case({M, 2 * 224, 4096, 2, 112});  // gate/up rows 112 apart per block
  run_case({40, 2 * 128, 320, 2, 64});  // 5 k panels: one per stage (the others two, adjacent)
  run_case({64, 2 * 48, 512, 2, 24});
  run_case({7, 2 * 96, 768, 6, 16});
}

TEST(GpuWideGemm, RowsDoNotDependOnBatch) {
  REQUIRE_WIDE();
  const WideCase big{64, 448, 1024, 2, 112};
  const std::vector<float> x = x_for(big), w = w_for(big);
  const std::vector<float> all = run_wide(big, x, w);
  const int64_t cols = big.N / 2;
  for (int M : {1, 9, 40}) {
    WideCase c = big;
    c.M = M;
    const std::vector<float> part = run_wide(c, std::vector<float>(x.begin(), x.begin() + M * big.K), w);
    EXPECT_EQ(max_abs_diff(part, std::vector<float>(all.begin(), all.begin() + M * cols)), 0.0) << "M " << M;
  }
}

TEST(GpuWideGemm, InsideAGraph) {
  REQUIRE_WIDE();
  const int M = 24;
  const int64_t K = 512, N1 = 256, N2 = 448;  // the k-split form on 8 SMs, the SwiGLU form on 2
  const std::vector<float> x = random_bf16(static_cast<size_t>(M * K), K + 7);
  const std::vector<float> w1 = random_bf16(static_cast<size_t>(N1 * K), N1 * 3 + K, -0.25f, 0.25f);
  const std::vector<float> w2 = random_bf16(static_cast<size_t>(N2 * K), N2 * 3 + K, -0.25f, 0.25f);
  CpuRef cpu;
  const std::vector<float> want1 = round_bf16(cpu_linear(cpu, x, M, K, w1, N1, nullptr));
  const std::vector<float> want2 = cpu_swiglu(cpu, x, M, K, w2, N2);
  DevMatrix dx(Dt::BF16, M, K);
  dx.upload(x);
  DevWeight dw1(w1, 0), dw2(w2, 0);
  DevMatrix y1(Dt::BF16, M, N1), y2(Dt::BF16, M, N2 / 2);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  {
    CapturedGraph g(s, [&](cudaStream_t st) {
      k::wide_gemm_ksplit(dx.mat(), dw1.get(), N1, K, y1.mat(), 8, test_launch(st));
      k::wide_gemm_swiglu(dx.mat(), dw2.get(), N2, K, y2.mat(), 2, test_launch(st));
    });
    for (int r = 0; r < 2; ++r) g.launch(s);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  EXPECT_LT(normalised_error(y1.download(), want1), kTolBf16);
  EXPECT_LT(normalised_error(y2.download(), want2), kTolBf16);
  cudaStreamDestroy(s);
}

// WideNorm (wide_norm.h): a k-split producer adds its projection to an F32 residual and leaves
// bf16(resid * gamma) with per-tile sums of squares; a k-split and a SwiGLU consumer apply the row
// scale in their epilogues, and wide_norm_scale_rows applies it alone. Against the CPU backend's
// add_rms_norm, linear and linear_swiglu on the same values.
TEST(GpuWideGemm, NormSplitAcrossProducerAndConsumers) {
  REQUIRE_WIDE();
  const int64_t K = 1024, N = 256, N2 = 256, N3 = 2 * 224;  // N3: SwiGLU rows (H 112 on 2 SMs)
  const int sms = 8;                                        // the producer's grid: 4 tiles of 64 columns x 2 halves
  const float eps = 1e-5f;
  for (int M : {1, 33, 64}) {
    SCOPED_TRACE(testing::Message() << "M " << M);
    const std::vector<float> x = random_bf16(static_cast<size_t>(M * K), 21 + M);
    const std::vector<float> w1 = random_bf16(static_cast<size_t>(N * K), 22, -0.1f, 0.1f);
    const std::vector<float> w2 = random_bf16(static_cast<size_t>(N2 * N), 23, -0.25f, 0.25f);
    const std::vector<float> w3 = random_bf16(static_cast<size_t>(N3 * N), 24, -0.25f, 0.25f);
    const std::vector<float> gamma = random_bf16(static_cast<size_t>(N), 25, 0.5f, 1.5f);
    std::vector<float> resid = random_bf16(static_cast<size_t>(M * N), 26, -4.0f, 4.0f);
    // CPU: residual += bf16(x W1^T); h = rmsnorm(residual) * gamma; h W2^T; swiglu(h W3^T).
    CpuRef cpu;
    const std::vector<float> proj = round_bf16(cpu_linear(cpu, x, M, K, w1, N, nullptr));
    Tensor cres = cpu.tensor(M, N, resid);
    Tensor ch = cpu.zeros(M, N);
    cpu->add_rms_norm(cres, cpu.tensor(M, N, proj), cpu.bf16_weight(1, N, gamma), eps, ch);
    const std::vector<float> want_resid = cpu.host(cres), want_h = cpu.host(ch);
    const std::vector<float> want2 = cpu_linear(cpu, want_h, M, N, w2, N2, nullptr);
    const Tensor c3 = cpu.zeros(M, N3 / 2);
    cpu->linear_swiglu(cpu.tensor(M, N, want_h), cpu.bf16_weight(N3, N, w3), cpu.zeros(M, N3), c3);
    const std::vector<float> want3 = cpu.host(c3);

    DevMatrix dx(Dt::BF16, M, K), dres(Dt::F32, M, N, N + 2), dh(Dt::BF16, M, N), d2(Dt::BF16, M, N2),
        d3(Dt::BF16, M, N3 / 2), dh2(Dt::BF16, M, N);
    dx.upload(x);
    dres.upload(resid);
    DevWeight dw1(w1, 0), dw2(w2, 0), dw3(w3, 0), dg(gamma, 0);
    DeviceBuffer<float> ss(static_cast<size_t>(sms) * k::kWideNormRows);
    k::WideNorm prod;
    prod.resid = static_cast<float*>(dres.data());
    prod.ld_resid = dres.stride();
    prod.gamma = dg.get();
    prod.ss_out = ss.get();
    ASSERT_EQ(k::wide_gemm_ksplit_tiles(N, sms), 4);
    k::wide_gemm_ksplit(dx.mat(), dw1.get(), N, K, dh.mat(), sms, test_launch(), &prod);
    sync_ok();
    EXPECT_LT(normalised_error(dres.download(), want_resid), 1e-3) << "residual";
    EXPECT_EQ(dres.damaged_padding(), 0);
    k::WideNorm cons;
    cons.ss_in = ss.get();
    cons.ss_tiles = 4;
    cons.norm_k = static_cast<int32_t>(N);
    cons.eps = eps;
    k::wide_gemm_ksplit(dh.mat(), dw2.get(), N2, N, d2.mat(), 8, test_launch(), &cons);
    k::wide_gemm_swiglu(dh.mat(), dw3.get(), N3, N, d3.mat(), 2, test_launch(), &cons);
    sync_ok();
    EXPECT_LT(normalised_error(d2.download(), round_bf16(want2)), kTolBf16) << "k-split consumer";
    EXPECT_LT(normalised_error(d3.download(), round_bf16(want3)), kTolBf16) << "SwiGLU consumer";
    // The scale alone, in place.
    dh2.upload(dh.download());
    k::wide_norm_scale_rows(dh2.mat(), ss.get(), 4, static_cast<int32_t>(N), eps, test_launch());
    sync_ok();
    EXPECT_LT(normalised_error(dh2.download(), round_bf16(want_h)), kTolBf16) << "wide_norm_scale_rows";
  }
}

TEST(GpuWideGemm, TileWidthsAndRejects) {
  INFERDESK_REQUIRE_GPU();
  // Llama-8B and Llama-3.2-1B gate/up on 132 SMs.
  EXPECT_EQ(k::wide_gemm_swiglu_half(28672, 132), 112);
  EXPECT_EQ(k::wide_gemm_swiglu_half(16384, 132), 64);
  EXPECT_EQ(k::wide_gemm_swiglu_half(200, 132), 0);         // 100 columns: not a multiple of any tile
  EXPECT_EQ(k::wide_gemm_swiglu_half(4096 * 128, 132), 0);  // more than one wave at every width
  EXPECT_EQ(k::wide_gemm_swiglu_half(257, 132), 0);         // gate and up of unequal heights
  DevMatrix x(Dt::BF16, 65, 64), y(Dt::BF16, 65, 128);
  DeviceBuffer<bf16> w(256 * 96);
  EXPECT_FALSE(k::wide_gemm_swiglu_supported(x.mat(), w.get(), 256, 64, y.mat(), 8));  // M > 64
  DevMatrix x1(Dt::BF16, 8, 96), y1(Dt::BF16, 8, 128);
  EXPECT_FALSE(k::wide_gemm_swiglu_supported(x1.mat(), w.get(), 256, 96, y1.mat(), 8));  // K % 64
  DevMatrix x2(Dt::BF16, 8, 64), yw(Dt::BF16, 8, 256), yh(Dt::BF16, 8, 128);
  EXPECT_EQ(k::wide_gemm_swiglu_supported(x2.mat(), w.get(), 256, 64, yh.mat(), 8), k::hopper_kernels_available());
  EXPECT_FALSE(k::wide_gemm_swiglu_supported(x2.mat(), w.get(), 256, 64, yw.mat(), 8));  // y is N / 2 wide
  DevMatrix yf(Dt::F32, 8, 128);
  EXPECT_FALSE(k::wide_gemm_swiglu_supported(x2.mat(), w.get(), 256, 64, yf.mat(), 8));  // F32 y
  EXPECT_THROW(k::wide_gemm_swiglu(x.mat(), w.get(), 256, 64, y.mat(), 8, test_launch()), Error);
  const k::WideNorm no_consumer;  // neither ss_in nor a producer's residual
  EXPECT_THROW(k::wide_gemm_swiglu(x2.mat(), w.get(), 256, 64, yh.mat(), 8, test_launch(), &no_consumer), Error);
}

}  // namespace
}  // namespace inferdesk::gputest
