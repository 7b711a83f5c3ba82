// Elementwise kernels (cuda/kernels/elementwise.cu) against the CPU backend on random inputs, odd
// widths (vector and scalar paths), strided and aliased tensors, with poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/util/dtype.h"
#include "core/util/error.h"
#include "cuda/kernels/elementwise.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

namespace k = inferdesk::cuda;

constexpr Dt kDts[] = {Dt::F32, Dt::BF16};

// Row strides to try for a width: dense, padded by 8 (rows stay 16-byte aligned: vector path for
// whole chunks) and padded by 3 (misaligned rows: scalar path).
std::vector<int64_t> strides_for(int64_t cols) { return {cols, cols + 8, cols + 3}; }

std::vector<float> maybe_round(std::vector<float> v, Dt dt) { return dt == Dt::BF16 ? round_bf16(std::move(v)) : v; }

TEST(GpuElementwise, EmbedRowsCopiesTableRows) {
  INFERDESK_REQUIRE_GPU();
  const int64_t V = 101;
  for (int64_t H : {296, 300, 8}) {
    const std::vector<float> table_v = random_bf16(static_cast<size_t>(V * H), 11 + H);
    DevMatrix table(Dt::BF16, V, H);
    table.upload(table_v);
    const std::vector<int32_t> ids = {0, 100, 7, 7, 55, 3, 99, 1, 64};
    DeviceBuffer<int32_t> d_ids(ids);
    CpuRef cpu;
    StepInput step;
    step.token_ids = ids;
    cpu->begin_step(step);
    const Tensor cpu_out = cpu.zeros(9, H);
    cpu->embed(cpu.bf16_weight(V, H, table_v), cpu_out);
    const std::vector<float> want = cpu.host(cpu_out);
    for (Dt dt : kDts)
      for (int64_t stride : strides_for(H)) {
        SCOPED_TRACE(testing::Message() << "H " << H << " out " << dt_name(dt) << " stride " << stride);
        DevMatrix out(dt, 9, H, stride);
        k::embed_rows(table.mat(), d_ids.get(), out.mat(), test_launch());
        sync_ok();
        EXPECT_EQ(max_abs_diff(out.download(), want), 0.0);  // a copy: exact
        EXPECT_EQ(out.damaged_padding(), 0);
      }
  }
}

void check_rms_norm(int64_t rows, int64_t cols, Dt xdt, Dt odt, int64_t xstride, bool alias) {
  SCOPED_TRACE(testing::Message() << rows << "x" << cols << " x " << dt_name(xdt) << " out " << dt_name(odt)
                                  << " stride " << xstride << (alias ? " aliased" : ""));
  const std::vector<float> x = maybe_round(random_vector(static_cast<size_t>(rows * cols), cols * 7 + rows, -2.f, 2.f),
                                           xdt);
  const std::vector<float> w = random_bf16(static_cast<size_t>(cols), cols, 0.5f, 1.5f);
  const float eps = 1e-5f;
  CpuRef cpu;
  const Tensor cx = cpu.tensor(rows, cols, x), cout = cpu.zeros(rows, cols);
  cpu->rms_norm(cx, cpu.bf16_weight(1, cols, w), eps, cout);
  const std::vector<float> want = maybe_round(cpu.host(cout), odt);

  DevMatrix dx(xdt, rows, cols, xstride), dw(Dt::BF16, 1, cols);
  dx.upload(x);
  dw.upload(w);
  DevMatrix dout(odt, rows, cols, cols + 8);
  const Mat out = alias ? dx.mat() : dout.mat();
  k::rms_norm(dx.mat(), static_cast<const bf16*>(dw.data()), eps, out, test_launch());
  sync_ok();
  const std::vector<float> got = alias ? dx.download() : dout.download();
  EXPECT_LT(normalised_error(got, want), odt == Dt::F32 ? kTolF32 : kTolBf16);
  EXPECT_EQ(alias ? dx.damaged_padding() : dout.damaged_padding(), 0);
}

TEST(GpuElementwise, RmsNormMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  // Widths on both sides of the warp-per-row / block-per-row switch (1024), multiples of 8 and not.
  // 1024 (warp per row) and 20000 (block per row) have more chunks per thread than stay in registers.
  for (int64_t cols : {8, 128, 296, 300, 1024, 1030, 4096, 5000, 20000})
    for (int64_t rows : {1, 9})
      for (Dt xdt : kDts)
        for (Dt odt : kDts)
          for (int64_t stride : strides_for(cols)) check_rms_norm(rows, cols, xdt, odt, stride, false);
  // q/k norm shape: many short rows (rows not a multiple of the 4 rows per block).
  check_rms_norm(37 * 8, 128, Dt::BF16, Dt::BF16, 128, false);
}

TEST(GpuElementwise, RmsNormInPlace) {
  INFERDESK_REQUIRE_GPU();
  for (int64_t cols : {128, 300, 1024, 4096, 5000, 20000})
    for (Dt dt : kDts)
      for (int64_t stride : strides_for(cols)) check_rms_norm(7, cols, dt, dt, stride, true);
}

void check_add_rms_norm(int64_t rows, int64_t cols, Dt xdt, Dt odt, int64_t stride, bool alias) {
  SCOPED_TRACE(testing::Message() << rows << "x" << cols << " x " << dt_name(xdt) << " out " << dt_name(odt)
                                  << " stride " << stride << (alias ? " out=x" : ""));
  const size_t n = static_cast<size_t>(rows * cols);
  const std::vector<float> res = random_vector(n, 3 * cols + rows, -3.f, 3.f);
  const std::vector<float> x = maybe_round(random_vector(n, 5 * cols + rows), xdt);
  const std::vector<float> w = random_bf16(static_cast<size_t>(cols), 2 * cols, 0.5f, 1.5f);
  const float eps = 1e-6f;
  CpuRef cpu;
  const Tensor cres = cpu.tensor(rows, cols, res), cx = cpu.tensor(rows, cols, x);
  const Tensor cout = cpu.zeros(rows, cols);
  cpu->add_rms_norm(cres, cx, cpu.bf16_weight(1, cols, w), eps, cout);
  const std::vector<float> want_res = cpu.host(cres);
  const std::vector<float> want = maybe_round(cpu.host(cout), odt);

  DevMatrix dres(Dt::F32, rows, cols, stride), dx(xdt, rows, cols, stride), dw(Dt::BF16, 1, cols);
  dres.upload(res);
  dx.upload(x);
  dw.upload(w);
  DevMatrix dout(odt, rows, cols, stride);
  const bool same = alias && xdt == odt;
  k::add_rms_norm(dres.mat(), dx.mat(), static_cast<const bf16*>(dw.data()), eps, same ? dx.mat() : dout.mat(),
                  test_launch());
  sync_ok();
  EXPECT_EQ(max_abs_diff(dres.download(), want_res), 0.0);  // the same F32 additions
  EXPECT_LT(normalised_error(same ? dx.download() : dout.download(), want), odt == Dt::F32 ? kTolF32 : kTolBf16);
  EXPECT_EQ(dres.damaged_padding(), 0);
  EXPECT_EQ(same ? dx.damaged_padding() : dout.damaged_padding(), 0);
}

TEST(GpuElementwise, AddRmsNormMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  for (int64_t cols : {296, 300, 1024, 4096, 5000, 20000})
    for (Dt xdt : kDts)
      for (Dt odt : kDts)
        for (int64_t stride : strides_for(cols)) check_add_rms_norm(5, cols, xdt, odt, stride, false);
  for (Dt dt : kDts) check_add_rms_norm(3, 4096, dt, dt, 4096, true);
}

TEST(GpuElementwise, SiluMulOnSlicesOfAFusedTensor) {
  INFERDESK_REQUIRE_GPU();
  const int64_t T = 9;
  // I = 299: the up slice starts at an odd element (scalar path); 296 and 4096: vector path.
  for (int64_t I : {296, 299, 4096})
    for (Dt odt : kDts) {
      SCOPED_TRACE(testing::Message() << "I " << I << " out " << dt_name(odt));
      const int64_t width = 2 * I + 8;
      const std::vector<float> fused = random_bf16(static_cast<size_t>(T * width), I, -4.f, 4.f);
      std::vector<float> gate(static_cast<size_t>(T * I)), up(gate.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < I; ++i) {
          gate[static_cast<size_t>(t * I + i)] = fused[static_cast<size_t>(t * width + i)];
          up[static_cast<size_t>(t * I + i)] = fused[static_cast<size_t>(t * width + I + i)];
        }
      CpuRef cpu;
      const Tensor cout = cpu.zeros(T, I);
      cpu->silu_mul(cpu.tensor(T, I, gate), cpu.tensor(T, I, up), cout);
      const std::vector<float> want = maybe_round(cpu.host(cout), odt);

      DevMatrix d(Dt::BF16, T, width);
      d.upload(fused);
      DevMatrix out(odt, T, I, I + 5);
      k::silu_mul(d.cols_mat(0, I), d.cols_mat(I, I), out.mat(), test_launch());
      sync_ok();
      EXPECT_LT(normalised_error(out.download(), want), odt == Dt::F32 ? kTolF32 : kTolBf16);
      EXPECT_EQ(out.damaged_padding(), 0);
      EXPECT_EQ(max_abs_diff(d.download(), fused), 0.0);  // inputs untouched
    }
}

TEST(GpuElementwise, AddInplaceEveryTypeCombination) {
  INFERDESK_REQUIRE_GPU();
  for (int64_t cols : {296, 301})
    for (Dt idt : kDts)
      for (Dt xdt : kDts)
        for (int64_t stride : strides_for(cols)) {
          SCOPED_TRACE(testing::Message()
                       << cols << " inout " << dt_name(idt) << " x " << dt_name(xdt) << " stride " << stride);
          const int64_t rows = 6;
          const size_t n = static_cast<size_t>(rows * cols);
          const std::vector<float> a = maybe_round(random_vector(n, cols + 1), idt);
          const std::vector<float> x = maybe_round(random_vector(n, cols + 2), xdt);
          CpuRef cpu;
          const Tensor ca = cpu.tensor(rows, cols, a);
          cpu->add(ca, cpu.tensor(rows, cols, x));
          // F32 sum of the same values, rounded once for a BF16 destination: exact either way.
          const std::vector<float> want = maybe_round(cpu.host(ca), idt);
          DevMatrix da(idt, rows, cols, stride), dx(xdt, rows, cols, stride + 8);
          da.upload(a);
          dx.upload(x);
          k::add_inplace(da.mat(), dx.mat(), test_launch());
          sync_ok();
          EXPECT_EQ(max_abs_diff(da.download(), want), 0.0);
          EXPECT_EQ(da.damaged_padding(), 0);
        }
}

TEST(GpuElementwise, GatherRowsPicksTheListedRows) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<int32_t> idx = {8, 0, 3, 3, 7};
  for (int64_t cols : {296, 300})
    for (Dt xdt : kDts)
      for (Dt odt : kDts) {
        SCOPED_TRACE(testing::Message() << cols << " x " << dt_name(xdt) << " out " << dt_name(odt));
        const std::vector<float> x = maybe_round(random_vector(static_cast<size_t>(9 * cols), cols), xdt);
        CpuRef cpu;
        StepInput step;
        step.logit_rows = idx;
        cpu->begin_step(step);
        const Tensor cout = cpu.zeros(5, cols);
        cpu->gather_rows(cpu.tensor(9, cols, x), cout);
        const std::vector<float> want = maybe_round(cpu.host(cout), odt);
        DevMatrix dx(xdt, 9, cols, cols + 8), dout(odt, 5, cols, cols + 3);
        dx.upload(x);
        DeviceBuffer<int32_t> d_idx(idx);
        k::gather_rows(dx.mat(), d_idx.get(), dout.mat(), test_launch());
        sync_ok();
        EXPECT_EQ(max_abs_diff(dout.download(), want), 0.0);
        EXPECT_EQ(dout.damaged_padding(), 0);
      }
}

TEST(GpuElementwise, IndicesOutsideTheSourceGiveZeroRows) {
  INFERDESK_REQUIRE_GPU();
  // The caller validates ids; a bad one must not read outside the table (it yields zeros).
  DevMatrix table(Dt::BF16, 10, 24), out(Dt::F32, 3, 24);
  table.upload(random_bf16(240, 4));
  DeviceBuffer<int32_t> ids(std::vector<int32_t>{-1, 10, 2});
  cuda::embed_rows(table.mat(), ids.get(), out.mat(), test_launch());
  sync_ok();
  const std::vector<float> got = out.download(), src = table.download();
  for (int c = 0; c < 24; ++c) {
    EXPECT_EQ(got[static_cast<size_t>(c)], 0.0f);
    EXPECT_EQ(got[static_cast<size_t>(24 + c)], 0.0f);
    EXPECT_EQ(got[static_cast<size_t>(48 + c)], src[static_cast<size_t>(48 + c)]);
  }
}

TEST(GpuElementwise, FillRandomIsTheCpuBackendsGenerator) {
  INFERDESK_REQUIRE_GPU();
  const int64_t rows = 37, cols = 300;
  const uint64_t seed = 1234;
  const float scale = 0.02f;
  for (Dt dt : kDts) {
    SCOPED_TRACE(dt_name(dt));
    CpuRef cpu;
    Buffer cb = cpu->alloc(dt == Dt::F32 ? DType::F32 : DType::BF16, rows, cols);
    cpu->fill_random(cb.tensor(), seed, scale);
    const size_t esz = dt == Dt::F32 ? 4 : 2;
    std::vector<uint8_t> want(static_cast<size_t>(rows * cols) * esz);
    std::memcpy(want.data(), cb.tensor().data, want.size());

    DevMatrix dense(dt, rows, cols), strided(dt, rows, cols, cols + 5);
    k::fill_random(dense.mat(), seed, scale, test_launch());
    k::fill_random(strided.mat(), seed, scale, test_launch());
    sync_ok();
    EXPECT_EQ(dense.raw_download(), want);                               // bit-identical to the CPU backend
    EXPECT_EQ(max_abs_diff(strided.download(), dense.download()), 0.0);  // index is logical
    EXPECT_EQ(strided.damaged_padding(), 0);
  }
}

TEST(GpuElementwise, FillRandomDeterministicInRangeCentred) {
  INFERDESK_REQUIRE_GPU();
  const int64_t rows = 1000, cols = 4096;
  const float scale = 0.5f;
  DevMatrix a(Dt::F32, rows, cols), b(Dt::F32, rows, cols), c(Dt::F32, rows, cols);
  k::fill_random(a.mat(), 7, scale, test_launch());
  k::fill_random(b.mat(), 7, scale, test_launch());
  k::fill_random(c.mat(), 8, scale, test_launch());
  sync_ok();
  const std::vector<float> va = a.download(), vb = b.download(), vc = c.download();
  EXPECT_EQ(max_abs_diff(va, vb), 0.0);
  size_t same = 0;
  for (size_t i = 0; i < va.size(); ++i) same += va[i] == vc[i];
  EXPECT_LT(same, va.size() / 1000) << "another seed should give other values";
  double sum = 0;
  float lo = INFINITY, hi = -INFINITY;
  for (float v : va) {
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -scale);
  EXPECT_LE(hi, scale);
  EXPECT_LT(lo, -0.99f * scale);
  EXPECT_GT(hi, 0.99f * scale);
  // Uniform on [-s, s]: sd s / sqrt(3); the mean of n values is within 5 sd / sqrt(n) of 0.
  const double n = static_cast<double>(va.size());
  EXPECT_LT(std::fabs(sum / n), 5.0 * scale / std::sqrt(3.0) / std::sqrt(n));
}

TEST(GpuElementwise, ConvertToBf16FromEachKind) {
  INFERDESK_REQUIRE_GPU();
  const int64_t n = 1001;
  const std::vector<float> v = random_vector(static_cast<size_t>(n), 99, -300.f, 300.f);
  std::vector<uint16_t> f16(v.size()), b16(v.size());
  std::vector<float> want_f32(v.size()), want_f16(v.size()), want_b16(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    f16[i] = f32_to_f16(v[i]);
    b16[i] = f32_to_bf16(v[i]);
    want_f32[i] = bf16_to_float(float_to_bf16(v[i]));
    want_f16[i] = bf16_to_float(float_to_bf16(f16_to_f32(f16[i])));
    want_b16[i] = bf16_to_f32(b16[i]);
  }
  struct Case {
    int32_t kind;
    const void* host;
    size_t esz;
    const std::vector<float>* want;
  } cases[] = {{0, v.data(), 4, &want_f32}, {2, f16.data(), 2, &want_f16}, {1, b16.data(), 2, &want_b16}};
  for (const Case& c : cases)
    for (int64_t off : {0, 1}) {  // off 1: both pointers misaligned, scalar path
      SCOPED_TRACE(testing::Message() << "kind " << c.kind << " offset " << off);
      DeviceBuffer<uint8_t> src(static_cast<size_t>(n + 1) * c.esz);
      CUDA_OK(cudaMemcpy(src.get() + off * c.esz, c.host, n * c.esz, cudaMemcpyHostToDevice));
      DevMatrix dst(Dt::BF16, 1, n, n, off);
      k::convert_to_bf16(src.get() + off * c.esz, c.kind, static_cast<bf16*>(dst.data()), n, test_launch());
      sync_ok();
      EXPECT_EQ(max_abs_diff(dst.download(), *c.want), 0.0);
      EXPECT_EQ(dst.damaged_padding(), 0);
    }
  EXPECT_THROW(k::convert_to_bf16(nullptr, 5, nullptr, 8, test_launch()), Error);
}

}  // namespace
}  // namespace inferdesk::gputest
