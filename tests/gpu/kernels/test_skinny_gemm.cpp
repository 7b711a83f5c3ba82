// skinny_gemm (cuda/kernels/sm90a/skinny_gemm.cu, Hopper only) against the CPU backend's linear
// with the same BF16 operands: row counts 1..64, grids that leave blocks without work, split every
// tile over several blocks or give blocks whole tiles, every pipeline depth, strided x, poisoned y
// rows past M; launched twice (the tile arrival counters must be reset by the first launch) and
// once more with the TMA stages (bit for bit the same), the
// same bits for a row whatever M (batch invariance), and inside a CUDA graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/util/error.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

#define REQUIRE_SKINNY()                                                           \
  INFERDESK_REQUIRE_GPU();                                                         \
  if (!cuda::skinny_gemm_available()) GTEST_SKIP() << "skinny_gemm needs an sm_90 GPU"

struct SkinnyCase {
  int M;
  int64_t N, K;
  int grid;
  int stages = 8;
  int64_t x_pad = 8;
  int k_tile = 64;  // 128: used when K % 128 == 0 (stages 2, 3 or 4)
};

std::ostream& operator<<(std::ostream& os, const SkinnyCase& c) {
  return os << "M " << c.M << " N " << c.N << " K " << c.K << " grid " << c.grid << " stages "
            << c.stages << " x stride K+" << c.x_pad << " k tile " << c.k_tile;
}

class Workspace {
 public:
  explicit Workspace(int grid) : buf_(cuda::skinny_gemm_workspace_bytes(grid)) {
    if (cudaMemset(buf_.get(), 0, cuda::skinny_gemm_workspace_bytes(grid)) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      throw std::runtime_error("memset failed");
  }
  void* get() const { return buf_.get(); }

 private:
  DeviceBuffer<char> buf_;
};

// Runs the case twice on the same workspace; both outputs must match the CPU reference and each
// other bit for bit. Returns the output.
std::vector<float> run_skinny(const SkinnyCase& c, const std::vector<float>& x,
                              const std::vector<float>& w) {
  SCOPED_TRACE(testing::Message() << c);
  CpuRef cpu;
  const std::vector<float> want = round_bf16(cpu_linear(cpu, x, c.M, c.K, w, c.N, nullptr));
  DevMatrix dx(Dt::BF16, c.M, c.K, c.K + c.x_pad);
  dx.upload(x);
  DevWeight dw(w, 0);
  Workspace ws(c.grid);
  std::vector<float> first;
  // Runs 0 and 1: cp.async stages; run 2: TMA stages (the same MMAs in the same order: the same bits).
  for (int run = 0; run < 3; ++run) {
    DevMatrix y(Dt::BF16, cuda::kSkinnyMaxRows, c.N, c.N + 8);
    Mat ym = y.mat();
    ym.rows = c.M;
    EXPECT_TRUE(cuda::skinny_gemm_supported(dx.mat(), dw.get(), c.N, c.K, ym));
    cuda::skinny_gemm(dx.mat(), dw.get(), c.N, c.K, ym, ws.get(), c.grid, c.stages, c.k_tile, run == 2,
                      nullptr);
    sync_ok();
    const std::vector<float> got = y.download();
    const std::vector<float> rows(got.begin(), got.begin() + c.M * c.N);
    EXPECT_LT(normalised_error(rows, want), kTolBf16) << "run " << run;
    const auto written = std::count_if(got.begin() + c.M * c.N, got.end(),
                                       [](float v) { return !std::isnan(v); });
    EXPECT_EQ(written, 0) << "rows >= M were written";
    EXPECT_EQ(y.damaged_padding(), 0);
    if (run == 0)
      first = rows;
    else
      EXPECT_EQ(max_abs_diff(first, rows), 0.0) << "run " << run << " differs (counters not reset?)";
  }
  return first;
}

SkinnyCase with_m(SkinnyCase c, int m) {
  c.M = m;
  return c;
}

std::vector<float> x_for(const SkinnyCase& c) { return random_bf16(static_cast<size_t>(c.M * c.K), c.K + 7); }
std::vector<float> w_for(const SkinnyCase& c) { return random_bf16(static_cast<size_t>(c.N * c.K), c.N * 3 + c.K); }

TEST(GpuSkinnyGemm, EveryRowCount) {
  REQUIRE_SKINNY();
  // 3 tiles x 6 k steps over 7 blocks: every tile split, pieces of 2-3 steps, middle pieces.
  for (int M = 1; M <= cuda::kSkinnyMaxRows; M += (M < 10 ? 1 : 9)) {
    const SkinnyCase c{M, 384, 384, 7};
    run_skinny(c, x_for(c), w_for(c));
  }
  const SkinnyCase c{64, 384, 384, 7};
  run_skinny(c, x_for(c), w_for(c));
}

TEST(GpuSkinnyGemm, GridsAndStages) {
  REQUIRE_SKINNY();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  for (int stages : {4, 6, 8}) {
    run_skinny({33, 128, 64, 5, stages}, x_for({33, 128, 64, 5}), w_for({33, 128, 64, 5}));  // one iteration: 4 idle blocks
    const SkinnyCase whole{20, 512, 256, 2, stages};  // 4 tiles x 4 steps over 2 blocks: whole tiles only
    run_skinny(whole, x_for(whole), w_for(whole));
    const SkinnyCase one{64, 256, 1024, 1, stages};  // a single block: the ring across tile ends
    run_skinny(one, x_for(one), w_for(one));
    const SkinnyCase model{64, 4096, 4096, sms, stages};  // o-proj shape on the device's grid
    run_skinny(model, x_for(model), w_for(model));
  }
  // 128 k per stage: every depth, several blocks per tile, idle blocks, a K that is not a
  // multiple of 128 (falls back to 64 per stage).
  for (int stages : {2, 3, 4}) {
    for (const SkinnyCase& c : {SkinnyCase{64, 4096, 4096, sms, stages, 8, 128},
                                SkinnyCase{29, 640, 768, 7, stages, 8, 128},
                                SkinnyCase{40, 256, 128, sms, stages, 8, 128},
                                SkinnyCase{9, 384, 448, 5, stages, 24, 128}})
      run_skinny(c, x_for(c), w_for(c));
  }
  const SkinnyCase down{48, 1024, 14336, sms, 8, 0};  // long K, dense x rows
  run_skinny(down, x_for(down), w_for(down));
  const SkinnyCase odd{17, 640, 448, 3, 6, 24};  // 5 tiles x 7 steps over 3 blocks, padded x
  run_skinny(odd, x_for(odd), w_for(odd));
  // More blocks than steps: each tile's steps fall to blocks far apart, with empty ranges between
  // them (the engine's small models: 2 tiles x 2 steps over the device's SMs).
  for (int grid : {sms, 9}) {
    const SkinnyCase sparse{40, 256, 128, grid};
    run_skinny(sparse, x_for(sparse), w_for(sparse));
    const SkinnyCase sparse3{12, 384, 192, grid, 4};
    run_skinny(sparse3, x_for(sparse3), w_for(sparse3));
  }
}

TEST(GpuSkinnyGemm, RowsDoNotDependOnBatch) {
  REQUIRE_SKINNY();
  for (const SkinnyCase& big : {SkinnyCase{64, 640, 1216, 11}, SkinnyCase{64, 640, 1280, 11, 3, 8, 128}}) {
    const std::vector<float> x = x_for(big), w = w_for(big);
    const std::vector<float> all = run_skinny(big, x, w);
    for (int M : {1, 9, 40}) {
      const std::vector<float> xs(x.begin(), x.begin() + M * big.K);
      const std::vector<float> part = run_skinny(with_m(big, M), xs, w);
      const std::vector<float> ref(all.begin(), all.begin() + M * big.N);
      EXPECT_EQ(max_abs_diff(part, ref), 0.0) << "M " << M << " k tile " << big.k_tile;
    }
  }
}

TEST(GpuSkinnyGemm, InsideAGraph) {
  REQUIRE_SKINNY();
  const SkinnyCase c{24, 768, 512, 9};
  const std::vector<float> x = x_for(c), w = w_for(c);
  CpuRef cpu;
  const std::vector<float> want = round_bf16(cpu_linear(cpu, x, c.M, c.K, w, c.N, nullptr));
  DevMatrix dx(Dt::BF16, c.M, c.K);
  dx.upload(x);
  DevWeight dw(w, 0);
  Workspace ws(c.grid);
  DevMatrix y(Dt::BF16, c.M, c.N);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  CapturedGraph g(s, [&](cudaStream_t st) {
    for (int i = 0; i < 3; ++i)  // three launches per replay share the workspace
      cuda::skinny_gemm(dx.mat(), dw.get(), c.N, c.K, y.mat(), ws.get(), c.grid, 8, 64, false, st);
    for (int i = 0; i < 2; ++i)  // and the 128-k stages, by cp.async and by TMA
      cuda::skinny_gemm(dx.mat(), dw.get(), c.N, c.K, y.mat(), ws.get(), c.grid, 4, 128, i == 1, st);
  });
  for (int r = 0; r < 2; ++r) g.launch(s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_LT(normalised_error(y.download(), want), kTolBf16);
  cudaStreamDestroy(s);
}

TEST(GpuSkinnyGemm, RejectsUnsupportedShapes) {
  INFERDESK_REQUIRE_GPU();
  DevMatrix x(Dt::BF16, 65, 64), y(Dt::BF16, 65, 128);
  DeviceBuffer<bf16> w(128 * 64);
  EXPECT_FALSE(cuda::skinny_gemm_supported(x.mat(), w.get(), 128, 64, y.mat()));  // M > 64
  DevMatrix x1(Dt::BF16, 8, 64), y1(Dt::BF16, 8, 120);
  EXPECT_FALSE(cuda::skinny_gemm_supported(x1.mat(), w.get(), 120, 64, y1.mat()));  // N % 128
  DevMatrix x2(Dt::BF16, 8, 72), y2(Dt::BF16, 8, 128);
  EXPECT_FALSE(cuda::skinny_gemm_supported(x2.mat(), w.get(), 128, 72, y2.mat()));  // K % 64
  DevMatrix yf(Dt::F32, 8, 128);
  EXPECT_FALSE(cuda::skinny_gemm_supported(x1.mat(), w.get(), 128, 64, yf.mat()));  // F32 y
  EXPECT_THROW(cuda::skinny_gemm(x.mat(), w.get(), 128, 64, y.mat(), nullptr, 1, 8, 64, false, nullptr), Error);
}

}  // namespace
}  // namespace inferdesk::gputest
