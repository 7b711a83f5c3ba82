// FP8 linear layers through the CUDA backend's ops (the kernel policy's choice of path for each row
// count: GEMV, wide, cuBLASLt, CUDA-core kernel) against the CPU backend with the same weights and
// QuantInfo; typed errors for the schemes the backend does not run; the FP8 random fill and
// stacked uploads. Tolerances: fp8_test_util.h.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/util/error.h"
#include "cuda/cuda_backend.h"
#include "tests/gpu/kernels/fp8_test_util.h"

namespace inferdesk::gputest {
namespace {

const Fp8Scheme kSchemes[] = {{ScaleGranularity::Channel, ActQuant::DynamicToken},
                              {ScaleGranularity::Tensor, ActQuant::DynamicToken},
                              {ScaleGranularity::Channel, ActQuant::Static, 0.004f},
                              {ScaleGranularity::Block, ActQuant::DynamicGroup}};

// The backend with the tensors of one comparison.
struct Gpu {
  std::unique_ptr<Backend> b;
  std::vector<Buffer> bufs;
  std::vector<std::vector<float>> host;
  Gpu() {
    CudaBackendOptions o;
    o.cuda_graphs = false;
    b = make_cuda_backend(o);
  }
  // F32 values (BF16-representable) as a BF16 tensor on the device.
  Tensor upload(int64_t rows, int64_t cols, const std::vector<float>& v) {
    host.push_back(v);
    HostTensor h;
    h.name = "values";
    h.dtype = DType::F32;
    h.shape = {rows, cols};
    h.data = reinterpret_cast<const std::byte*>(host.back().data());
    h.nbytes = v.size() * 4;
    bufs.push_back(b->load_weight(h, rows, cols));
    return bufs.back().tensor();
  }
  Tensor alloc(DType dt, int64_t rows, int64_t cols) {
    bufs.push_back(b->alloc(dt, rows, cols));
    return bufs.back().tensor();
  }
  std::vector<float> get(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.rows * t.cols));
    b->to_host(t, v.data());
    return v;
  }
};

double err_bf16(const std::vector<float>& got, const std::vector<float>& want) {
  return normalised_error(got, round_bf16(want));
}

void check_linear(int m, int64_t n, int64_t k, const Fp8Scheme& s, bool bias) {
  SCOPED_TRACE(testing::Message() << "linear M " << m << " N " << n << " K " << k << " " << scheme_name(s)
                                  << (bias ? " bias" : ""));
  const HostFp8 w = make_fp8_weight(n, k, s, n + k);
  const std::vector<float> x = make_fp8_x(m, k, m * 3 + k);
  const std::vector<float> bv = random_bf16(static_cast<size_t>(n), n, -2.f, 2.f);
  const std::vector<float> want = cpu_fp8_linear(w, x, m, bias ? &bv : nullptr);
  Gpu g;
  const Buffer wb = load_fp8(*g.b, w);
  const Tensor bt = g.upload(1, n, bv), out = g.alloc(DType::BF16, m, n);
  g.b->linear(g.upload(m, k, x), wb.tensor(), bias ? &bt : nullptr, out);
  EXPECT_LT(err_bf16(g.get(out), want), kTolBf16);
}

void check_swiglu(int m, int64_t inter, int64_t k, const Fp8Scheme& s) {
  SCOPED_TRACE(testing::Message() << "swiglu M " << m << " I " << inter << " K " << k << " " << scheme_name(s));
  const HostFp8 w = make_fp8_weight(2 * inter, k, s, inter + k + 1);
  const std::vector<float> x = make_fp8_x(m, k, m + k);
  const std::vector<float> want = cpu_fp8_swiglu(w, x, m);
  Gpu g;
  const Buffer wb = load_fp8(*g.b, w);
  const Tensor out = g.alloc(DType::BF16, m, inter), scratch = g.alloc(DType::BF16, m, 2 * inter);
  g.b->linear_swiglu(g.upload(m, k, x), wb.tensor(), scratch, out);
  EXPECT_LT(err_bf16(g.get(out), want), kTolBf16);
}

TEST(GpuFp8Backend, LinearEveryRowRange) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : kSchemes) {
    for (int m : {1, 8, 9, 40, 64, 65, 300}) check_linear(m, 1024, 1024, s, m % 2 == 1);
    check_linear(4, 96, 200, s, true);   // K % 16 != 0: no GEMV, the CUDA-core kernel
    check_linear(40, 96, 200, s, true);  // and no wide kernel either
  }
}

TEST(GpuFp8Backend, SwigluEveryRowRange) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : kSchemes)
    for (int m : {1, 8, 16, 64, 65, 200}) check_swiglu(m, 512, 1024, s);
}

// The composed projection + add_rms_norm (FP8 weights never take the fused-norm path). The GPU
// rounds the projection to BF16 before adding it to the residual (its scratch is BF16), the CPU
// does not: both outputs are off by about that rounding, hence kTolBf16.
TEST(GpuFp8Backend, LinearAddRmsNorm) {
  INFERDESK_REQUIRE_GPU();
  const int m = 40;
  const int64_t n = 512, k = 1024;
  const HostFp8 w = make_fp8_weight(n, k, kSchemes[0], 3);
  const std::vector<float> x = make_fp8_x(m, k, 4), resid = random_bf16(static_cast<size_t>(m * n), 5, -3.f, 3.f);
  const std::vector<float> gamma = random_bf16(static_cast<size_t>(n), 6, 0.5f, 1.5f);
  CpuRef cpu;
  const Buffer wc = load_fp8(*cpu, w);
  const Tensor rc = cpu.tensor(m, n, resid), oc = cpu.zeros(m, n), sc = cpu.zeros(m, n);
  cpu->linear_add_rms_norm(cpu.tensor(m, k, x), wc.tensor(), sc, rc, cpu.bf16_weight(1, n, gamma), 1e-5f, oc);
  Gpu g;
  const Buffer wg = load_fp8(*g.b, w);
  const Tensor rg = g.alloc(DType::F32, m, n);
  g.b->fill_random(rg, 1, 0.0f);        // zeros
  g.b->add(rg, g.upload(m, n, resid));  // the F32 residual (BF16-representable values)
  const Tensor og = g.alloc(DType::BF16, m, n), sg = g.alloc(DType::BF16, m, n);
  g.b->linear_add_rms_norm(g.upload(m, k, x), wg.tensor(), sg, rg, g.upload(1, n, gamma), 1e-5f, og);
  EXPECT_LT(normalised_error(g.get(rg), cpu.host(rc)), kTolBf16);
  EXPECT_LT(err_bf16(g.get(og), cpu.host(oc)), kTolBf16);
}

TEST(GpuFp8Backend, UnsupportedSchemesAreTyped) {
  INFERDESK_REQUIRE_GPU();
  Gpu g;
  QuantInfo ok;
  ok.scheme = QuantScheme::Fp8;
  ok.granularity = ScaleGranularity::Channel;
  ok.act = ActQuant::DynamicToken;
  EXPECT_TRUE(g.b->supports_quant(ok));
  QuantInfo blk = ok;
  blk.granularity = ScaleGranularity::Block;
  blk.act = ActQuant::DynamicGroup;
  blk.block_n = blk.block_k = 128;
  EXPECT_TRUE(g.b->supports_quant(blk));
  QuantInfo bad[4] = {ok, ok, blk, blk};
  bad[0].act = ActQuant::None;          // weight-only
  bad[1].act = ActQuant::DynamicGroup;  // group activations need block weights
  bad[2].block_n = bad[2].block_k = 64;
  bad[3].act = ActQuant::DynamicToken;
  for (const QuantInfo& q : bad) EXPECT_FALSE(g.b->supports_quant(q)) << describe(q);
  // A weight that claims such a scheme anyway: linear refuses it with a typed error naming it.
  HostFp8 w = make_fp8_weight(64, 256, kSchemes[3], 1);
  w.q.block_n = w.q.block_k = 64;
  w.q.scale_rows = 1;
  w.q.scale_cols = 4;
  w.scales.resize(4);
  const Buffer wb = load_fp8(*g.b, w);
  const Tensor out = g.alloc(DType::BF16, 2, 64);
  try {
    g.b->linear(g.upload(2, 256, make_fp8_x(2, 256, 1)), wb.tensor(), nullptr, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("block 64x64"), std::string::npos) << e.what();
  }
}

TEST(GpuFp8Backend, FillRandomMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  Gpu g;
  const Tensor t = g.alloc(DType::F8E4M3, 37, 129);
  g.b->fill_random(t, 42, 3.0f);
  g.b->synchronize();
  std::vector<uint8_t> got(37 * 129);
  CUDA_OK(cudaMemcpy(got.data(), t.data, got.size(), cudaMemcpyDeviceToHost));
  auto cpu = make_cpu_backend(1);
  Buffer c = cpu->alloc(DType::F8E4M3, 37, 129);
  cpu->fill_random(c.tensor(), 42, 3.0f);
  EXPECT_EQ(std::memcmp(got.data(), c.tensor().data, got.size()), 0);
  int nonzero = 0;
  for (uint8_t v : got) nonzero += (v & 0x7f) != 0;
  EXPECT_GT(nonzero, 37 * 129 / 2);
}

TEST(GpuFp8Backend, StackedUploadKeepsBytes) {
  INFERDESK_REQUIRE_GPU();
  Gpu g;
  std::vector<uint8_t> a(3 * 32), b(5 * 32);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 5 + 3);
  auto part = [](const std::vector<uint8_t>& v, int64_t rows, DType dt) {
    HostTensor h;
    h.name = "part";
    h.dtype = dt;
    h.shape = {rows, static_cast<int64_t>(v.size() / rows / dtype_size(dt))};
    h.data = reinterpret_cast<const std::byte*>(v.data());
    h.nbytes = v.size();
    return h;
  };
  const Buffer s = g.b->load_weight_rows({part(a, 3, DType::F8E4M3), part(b, 5, DType::F8E4M3)}, 32);
  ASSERT_EQ(s.tensor().dtype, DType::F8E4M3);
  ASSERT_EQ(s.tensor().rows, 8);
  std::vector<uint8_t> got(8 * 32);
  g.b->synchronize();
  CUDA_OK(cudaMemcpy(got.data(), s.tensor().data, got.size(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(got.data(), a.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(got.data() + a.size(), b.data(), b.size()), 0);
  std::vector<uint8_t> bf(2 * 32 * 2, 0);
  EXPECT_THROW(
      {
        try {
          g.b->load_weight_rows({part(a, 3, DType::F8E4M3), part(bf, 2, DType::BF16)}, 32);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::Unsupported);
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace inferdesk::gputest
