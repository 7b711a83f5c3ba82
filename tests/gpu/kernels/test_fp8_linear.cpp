// The FP8 linear kernels (cuda/kernels/fp8_linear.h, sm90a/fp8_wide_gemm.h, and cuBLASLt's FP8
// path in cuda/backend/fp8_gemm.h) against the CPU backend's linear with the same E4M3 weights,
// scales and QuantInfo (core/backend/cpu/cpu_quant_linear.cpp): every path over its row range,
// each scale granularity and activation mode, bias, SwiGLU, BF16 and F32 outputs, odd N and K
// where the path allows them. y has poisoned rows past M and padding that must stay untouched.
// Tolerances: fp8_test_util.h.
#include <gtest/gtest.h>

#include <cstring>

#include "core/util/error.h"
#include "cuda/backend/context.h"
#include "cuda/backend/fp8_gemm.h"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/sm90a/fp8_wide_gemm.h"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "tests/gpu/kernels/fp8_test_util.h"

namespace inferdesk::gputest {
namespace {

const Fp8Scheme kChannel{ScaleGranularity::Channel, ActQuant::DynamicToken};
const Fp8Scheme kTensor{ScaleGranularity::Tensor, ActQuant::DynamicToken};
const Fp8Scheme kStatic{ScaleGranularity::Channel, ActQuant::Static, 0.004f};
const Fp8Scheme kTensorStatic{ScaleGranularity::Tensor, ActQuant::Static, 0.02f};
const Fp8Scheme kBlock{ScaleGranularity::Block, ActQuant::DynamicGroup};
const Fp8Scheme kSchemes[] = {kChannel, kTensor, kStatic, kTensorStatic, kBlock};

enum class Path { Gemv, Wide, Cublas, Simple };
const char* path_name(Path p) {
  return p == Path::Gemv ? "gemv" : p == Path::Wide ? "wide" : p == Path::Cublas ? "cublaslt" : "simple";
}

struct Case {
  Path path;
  int m;
  int64_t n, k;
  Fp8Scheme scheme;
  bool bias = false;
  Dt ydt = Dt::BF16;
  int64_t x_pad = 8;  // x row stride k + x_pad (odd: unaligned rows)
  int32_t sms = 0;    // wide: the SMs it plans for (0: the device's)
  cuda::Fp8GemvConfig gemv{};  // gemv: the block shape (0: by shape)
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << path_name(c.path) << " M " << c.m << " N " << c.n << " K " << c.k << " " << scheme_name(c.scheme)
            << (c.bias ? " bias" : "") << " y " << dt_name(c.ydt) << " x stride K+" << c.x_pad << " sms " << c.sms
            << " gemv w" << c.gemv.warps << "u" << c.gemv.unroll;
}

int device_sms() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

// Runs the case's path; false when the path does not serve it on this device (cuBLASLt without an
// algorithm, or no Hopper).
bool run_path(const Case& c, const DevMatrix& dx, const DevFp8& dw, const bf16* bias, const Mat& ym, bool swiglu) {
  const Mat xm = dx.mat();
  const int32_t sms = c.sms ? c.sms : device_sms();
  switch (c.path) {
    case Path::Gemv:
      EXPECT_TRUE(cuda::fp8_gemv_supported(xm, dw.w, ym, swiglu));
      swiglu ? cuda::fp8_gemv_swiglu(xm, dw.w, ym, test_launch(), c.gemv)
             : cuda::fp8_gemv(xm, dw.w, bias, ym, test_launch(), c.gemv);
      return true;
    case Path::Wide: {
      const DevFp8X q(xm, dw.w);
      if (!cuda::fp8_wide_supported(q.x, dw.w, ym, swiglu, sms)) return false;
      const cuda::Fp8WideTile t = cuda::fp8_wide_tile(dw.w.n, dw.w.k, swiglu, dw.w.gran == cuda::Fp8Gran::Block, sms);
      SCOPED_TRACE(testing::Message() << "tile " << t.rows << " splits " << t.splits << " two " << t.two_per_sm);
      swiglu ? cuda::fp8_wide_swiglu(q.x, dw.w, ym, sms, test_launch())
             : cuda::fp8_wide_gemm(q.x, dw.w, bias, ym, sms, test_launch());
      sync_ok();
      return true;
    }
    case Path::Cublas: {
      CudaBackendOptions o;
      cuda::CudaContext ctx(o);
      cuda::Fp8Gemm gemm(ctx);
      // The context's stream: quantize there too.
      cuda::Fp8X qx;
      DeviceBuffer<uint8_t> buf(static_cast<size_t>(cuda::fp8_x_bytes(xm.rows, xm.cols, dw.w)));
      qx = cuda::fp8_x_at(buf.get(), xm.rows, xm.cols, dw.w);
      cuda::fp8_quantize(xm, dw.w, qx, ctx.launch);
      const bool ran = gemm.run(qx, dw.w, bias, ym);
      ctx.synchronize();
      return ran;
    }
    case Path::Simple: {
      const DevFp8X q(xm, dw.w);
      cuda::fp8_gemm_simple(q.x, dw.w, bias, ym, test_launch());
      sync_ok();
      return true;
    }
  }
  return false;
}

void run_case(const Case& c, bool swiglu = false) {
  SCOPED_TRACE(testing::Message() << (swiglu ? "swiglu " : "") << c);
  const HostFp8 w = make_fp8_weight(swiglu ? 2 * c.n : c.n, c.k, c.scheme, c.n * 7 + c.k);
  const std::vector<float> x = make_fp8_x(c.m, c.k, c.k + c.m);
  const std::vector<float> bias = random_bf16(static_cast<size_t>(c.n), c.n, -2.f, 2.f);
  const std::vector<float> want = swiglu ? cpu_fp8_swiglu(w, x, c.m)
                                         : cpu_fp8_linear(w, x, c.m, c.bias ? &bias : nullptr);

  DevMatrix dx(Dt::BF16, c.m, c.k, c.k + c.x_pad);
  dx.upload(x);
  const DevFp8 dw(w);
  DevMatrix dbias(Dt::BF16, 1, c.n);
  dbias.upload(bias);
  DevMatrix y(c.ydt, c.m + 3, c.n, c.n + 8);
  Mat ym = y.mat();
  ym.rows = c.m;
  const bf16* b = c.bias ? static_cast<const bf16*>(dbias.data()) : nullptr;
  if (!run_path(c, dx, dw, b, ym, swiglu)) {
    std::printf("  (%s does not serve this case on this device: skipped)\n", path_name(c.path));
    return;
  }
  sync_ok();
  expect_close(y, c.m, want, c.path == Path::Cublas ? kTolFp8MmaF32 : kTolFp8F32);
}

TEST(GpuFp8Gemv, EveryRowCountAndScheme) {
  INFERDESK_REQUIRE_GPU();
  // N = 67: a partial 16-row tile; K = 336: two whole 128-k steps and a partial one.
  for (const Fp8Scheme& s : kSchemes)
    for (int m = 1; m <= cuda::kFp8GemvMaxRows; ++m)
      run_case({Path::Gemv, m, 67, 336, s, m % 2 == 1, m % 3 == 0 ? Dt::F32 : Dt::BF16, m % 4 == 3 ? 3 : 8});
}

TEST(GpuFp8Gemv, ModelShapesAndSwiglu) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : kSchemes) {
    run_case({Path::Gemv, 1, 4096, 4096, s});
    run_case({Path::Gemv, 8, 1024, 14336, s, true, Dt::F32});
    run_case({Path::Gemv, 5, 200, 1040, s, true});  // block: partial scale rows and groups
    for (int m : {1, 3, 8}) run_case({Path::Gemv, m, 256, 1024, s}, /*swiglu=*/true);
  }
}

// Every block shape the benchmarks compare, on shapes where a warp has 0, 1, 2, 3 and many
// steps (a batch partly past the warp's steps) and a partial last step.
TEST(GpuFp8Gemv, EveryBlockShape) {
  INFERDESK_REQUIRE_GPU();
  for (const cuda::Fp8GemvConfig cfg : {cuda::Fp8GemvConfig{8, 1}, cuda::Fp8GemvConfig{8, 2},
                                        cuda::Fp8GemvConfig{4, 1}, cuda::Fp8GemvConfig{4, 2}})
    for (const Fp8Scheme& s : kSchemes)
      for (int64_t k : {int64_t{336}, int64_t{1024}, int64_t{2944}, int64_t{4096}}) {
        Case c{Path::Gemv, 3, 67, k, s, true};
        c.gemv = cfg;
        run_case(c);
        c.m = 1;
        c.n = 256;
        run_case(c, /*swiglu=*/true);
      }
}

TEST(GpuFp8Gemv, UnknownBlockShapeIsATypedError) {
  INFERDESK_REQUIRE_GPU();
  const HostFp8 w = make_fp8_weight(32, 256, kChannel, 3);
  const DevFp8 dw(w);
  DevMatrix dx(Dt::BF16, 1, 256);
  DevMatrix y(Dt::BF16, 1, 32);
  try {
    cuda::fp8_gemv(dx.mat(), dw.w, nullptr, y.mat(), test_launch(), cuda::Fp8GemvConfig{6, 1});
    ADD_FAILURE() << "6 warps accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal) << e.what();
  }
}

TEST(GpuFp8Quant, MatchesCpuBitForBit) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : {kChannel, kStatic, kBlock})
    for (int64_t k : {int64_t{8}, int64_t{300}, int64_t{4096}, int64_t{20000}}) {
      SCOPED_TRACE(testing::Message() << scheme_name(s) << " K " << k);
      const int m = 5;
      const std::vector<float> x = make_fp8_x(m, k, k);
      const HostFp8 w = make_fp8_weight(16, k, s, 1);
      const DevFp8 dw(w);
      DevMatrix dx(Dt::BF16, m, k, k + 3);
      dx.upload(x);
      const DevFp8X q(dx.mat(), dw.w);
      sync_ok();
      std::vector<uint8_t> codes(static_cast<size_t>(m * q.x.stride));
      std::vector<float> scales(static_cast<size_t>(m * q.x.groups));
      CUDA_OK(cudaMemcpy(codes.data(), q.x.q, codes.size(), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(scales.data(), q.x.scales, scales.size() * 4, cudaMemcpyDeviceToHost));
      const int64_t group = q.x.groups > 1 ? 128 : k;
      for (int r = 0; r < m; ++r)
        for (int64_t g = 0; g < q.x.groups; ++g) {
          float amax = 0.0f;
          for (int64_t c = g * group; c < std::min(k, (g + 1) * group); ++c)
            amax = std::max(amax, std::fabs(x[static_cast<size_t>(r * k + c)]));
          const float sc = s.act == ActQuant::Static ? s.input_scale : std::max(amax / 448.0f, kFp8MinActScale);
          ASSERT_EQ(scales[static_cast<size_t>(g * m + r)], sc) << "row " << r << " group " << g;
          const float inv = 1.0f / sc;
          for (int64_t c = g * group; c < std::min(k, (g + 1) * group); ++c)
            ASSERT_EQ(codes[static_cast<size_t>(r * q.x.stride + c)],
                      f32_to_fp8_e4m3(x[static_cast<size_t>(r * k + c)] * inv))
                << "row " << r << " col " << c;
        }
    }
}

TEST(GpuFp8Simple, AnyShape) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : kSchemes) {
    run_case({Path::Simple, 1, 37, 200, s, true});
    run_case({Path::Simple, 13, 130, 129, s, false, Dt::F32, 1});
    run_case({Path::Simple, 70, 64, 384, s, true});
  }
}

TEST(GpuFp8Wide, RowsAndSchemes) {
  INFERDESK_REQUIRE_GPU();
  if (!cuda::hopper_kernels_available()) GTEST_SKIP() << "skipped: the wide FP8 GEMMs need sm_90a (Hopper)";
  for (const Fp8Scheme& s : kSchemes)
    for (int m : {9, 33, 64}) {
      run_case({Path::Wide, m, 1024, 1024, s, m == 33});
      run_case({Path::Wide, m, 512, 384, s, false, Dt::BF16, 3}, /*swiglu=*/true);
    }
}

// Different SM counts steer the tile choice over the instantiations (widths, K splits, two
// blocks an SM), each checked on the same shapes.
TEST(GpuFp8Wide, EveryTileChoice) {
  INFERDESK_REQUIRE_GPU();
  if (!cuda::hopper_kernels_available()) GTEST_SKIP() << "skipped: the wide FP8 GEMMs need sm_90a (Hopper)";
  const int sms = device_sms();
  for (int32_t target : {sms, sms / 2, 40, 24, 12, 6, 3})
    for (const Fp8Scheme& s : {kChannel, kBlock}) {
      run_case({Path::Wide, 17, 6144, 1024, s, true, Dt::BF16, 8, target});
      run_case({Path::Wide, 64, 2304, 2048, s, false, Dt::BF16, 8, target});
      run_case({Path::Wide, 40, 1536, 512, s, false, Dt::BF16, 8, target}, /*swiglu=*/true);
    }
}

TEST(GpuFp8Cublas, LargeRows) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : kSchemes) {
    run_case({Path::Cublas, 65, 768, 1024, s, true});
    run_case({Path::Cublas, 300, 512, 2048, s, false, Dt::F32});
    run_case({Path::Cublas, 1000, 1024, 640, s});  // block: K / 128 = 5 groups (padded scales)
  }
}

// The decode paths as CUDA graphs replay them: the GEMV and the quantization + wide GEMM captured
// (PDL launches become programmatic edges) give the eager results bit for bit.
TEST(GpuFp8Graph, CapturedLaunchesMatchEager) {
  INFERDESK_REQUIRE_GPU();
  const bool wide = cuda::hopper_kernels_available();
  const int64_t n = 1024, k = 2048;
  const HostFp8 w = make_fp8_weight(n, k, kChannel, 9);
  const DevFp8 dw(w);
  const int rows = wide ? 48 : 4;
  DevMatrix x4(Dt::BF16, 4, k), xw(Dt::BF16, rows, k), y4(Dt::BF16, 4, n), yw(Dt::BF16, rows, n);
  x4.upload(make_fp8_x(4, k, 1));
  xw.upload(make_fp8_x(rows, k, 2));
  DeviceBuffer<uint8_t> qbuf(static_cast<size_t>(cuda::fp8_x_bytes(rows, k, dw.w)));
  const cuda::Fp8X q = cuda::fp8_x_at(qbuf.get(), rows, k, dw.w);
  Stream s;
  const int sms = device_sms();
  auto enqueue = [&](cudaStream_t st) {
    const cuda::Launch l = test_launch(st);
    cuda::fp8_gemv(x4.mat(), dw.w, nullptr, y4.mat(), l);
    cuda::fp8_quantize(xw.mat(), dw.w, q, l);
    if (wide)
      cuda::fp8_wide_gemm(q, dw.w, nullptr, yw.mat(), sms, l);
    else
      cuda::fp8_gemm_simple(q, dw.w, nullptr, yw.mat(), l);
  };
  enqueue(s.get());
  CUDA_OK(cudaStreamSynchronize(s.get()));
  const std::vector<uint8_t> e4 = y4.raw_download(), ew = yw.raw_download();
  expect_close(y4, 4, cpu_fp8_linear(w, make_fp8_x(4, k, 1), 4, nullptr));
  const CapturedGraph g(s.get(), enqueue);
  for (int i = 0; i < 2; ++i) {
    y4.upload(std::vector<float>(4 * n, 0.0f));
    yw.upload(std::vector<float>(static_cast<size_t>(rows * n), 0.0f));
    g.launch(s.get());
    CUDA_OK(cudaStreamSynchronize(s.get()));
    EXPECT_EQ(y4.raw_download(), e4);
    EXPECT_EQ(yw.raw_download(), ew);
  }
}

}  // namespace
}  // namespace inferdesk::gputest
