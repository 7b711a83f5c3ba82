// Helpers of the FP8 linear tests: random FP8 weights with their scales on the host, the CPU
// backend's quant_linear (the reference) for them, and the same weight on the device as the
// kernels see it.
//
// Tolerances: both sides quantize the activations from the same BF16-representable values with
// the same F32 operations (bit for bit: GpuFp8Quant.MatchesCpuBitForBit), every product of two
// E4M3 values is exact in F32, and the sums differ only in their order (and, on the tensor cores,
// in the rounding of their internal accumulation). So a BF16 output is off by its own rounding
// (kTolBf16, kernel_test_util.h). An F32 output of our MMA.sync and CUDA-core kernels by a few
// 1e-6 (kTolFp8F32 leaves a wide margin); one of cuBLASLt's FP8 matmul (warpgroup FP8 MMAs, which
// keep only about 14 bits of their running sums between promotions, DeepSeek-V3 report 3.3.2) by
// about 2e-4 over K = 2048 (measured on the H200), hence kTolFp8MmaF32. A wrong scale, group or row
// moves the error far above all of them.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/quant.h"
#include "core/util/fp8.h"
#include "cuda/kernels/fp8_linear.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {

constexpr double kTolFp8F32 = 1e-4;
constexpr double kTolFp8MmaF32 = 1e-3;

struct Fp8Scheme {
  ScaleGranularity gran = ScaleGranularity::Channel;
  ActQuant act = ActQuant::DynamicToken;
  float input_scale = 0.01f;  // Static: some of x / s then exceed 448 and saturate
};

inline const char* scheme_name(const Fp8Scheme& s) {
  if (s.gran == ScaleGranularity::Block) return "block";
  if (s.act == ActQuant::Static) return s.gran == ScaleGranularity::Tensor ? "tensor static" : "channel static";
  return s.gran == ScaleGranularity::Tensor ? "tensor" : "channel";
}

// An FP8 weight on the host: E4M3 codes [n, k] spread over the whole range (subnormals to 448)
// and F32 scales of the scheme's shape.
struct HostFp8 {
  int64_t n = 0, k = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  QuantInfo q;
};

inline HostFp8 make_fp8_weight(int64_t n, int64_t k, const Fp8Scheme& s, uint64_t seed) {
  HostFp8 w;
  w.n = n;
  w.k = k;
  const std::vector<float> u = random_vector(static_cast<size_t>(n * k), seed);
  w.codes.resize(u.size());
  for (size_t i = 0; i < u.size(); ++i)
    w.codes[i] = f32_to_fp8_e4m3(std::copysign(std::exp2(-10.0f + 18.8f * std::fabs(u[i])), u[i]));
  w.q.scheme = QuantScheme::Fp8;
  w.q.granularity = s.gran;
  w.q.act = s.gran == ScaleGranularity::Block ? ActQuant::DynamicGroup : s.act;
  w.q.input_scale = s.input_scale;
  if (s.gran == ScaleGranularity::Block) {
    w.q.block_n = w.q.block_k = 128;
    w.q.scale_rows = (n + 127) / 128;
    w.q.scale_cols = (k + 127) / 128;
  } else {
    w.q.scale_rows = s.gran == ScaleGranularity::Channel ? n : 1;
    w.q.scale_cols = 1;
  }
  w.scales = random_vector(static_cast<size_t>(w.q.scale_rows * w.q.scale_cols), seed + 7, 1e-3f, 4e-3f);
  return w;
}

// x [m, k] of BF16-representable values whose rows differ in magnitude (so do their scales); row 2
// is all zeros (the smallest dynamic scale).
inline std::vector<float> make_fp8_x(int m, int64_t k, uint64_t seed) {
  std::vector<float> x = random_bf16(static_cast<size_t>(m * k), seed);
  for (int r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) {
      float& v = x[static_cast<size_t>(r * k + c)];
      v = r == 2 ? 0.0f : v * std::exp2(static_cast<float>(r % 5) - 2.0f);
    }
  return round_bf16(x);
}

// A backend's copy of w: the codes, the scales and the QuantInfo that ties them (CPU: a view of
// w.codes, which must outlive it).
inline Buffer load_fp8(Backend& b, const HostFp8& w) {
  HostTensor h;
  h.name = "fp8_weight";
  h.dtype = DType::F8E4M3;
  h.shape = {w.n, w.k};
  h.data = reinterpret_cast<const std::byte*>(w.codes.data());
  h.nbytes = w.codes.size();
  Buffer buf = b.load_weight(h, w.n, w.k);
  const Buffer scales = b.load_scales(w.scales.data(), w.q.scale_rows, w.q.scale_cols);
  buf.set_quant(w.q, scales);
  return buf;
}

// The CPU backend's y [m, n] = x @ w^T (+ bias), F32.
inline std::vector<float> cpu_fp8_linear(const HostFp8& w, const std::vector<float>& x, int m,
                                         const std::vector<float>* bias) {
  CpuRef cpu;
  const Buffer wb = load_fp8(*cpu, w);
  const Tensor out = cpu.zeros(m, w.n);
  Tensor b;
  if (bias) b = cpu.bf16_weight(1, w.n, *bias);
  cpu->linear(cpu.tensor(m, w.k, x), wb.tensor(), bias ? &b : nullptr, out);
  return cpu.host(out);
}

// silu(gate) * up of a stacked [2 I, K] weight, through the CPU backend's linear and silu_mul.
inline std::vector<float> cpu_fp8_swiglu(const HostFp8& w, const std::vector<float>& x, int m) {
  const int64_t inter = w.n / 2;
  const std::vector<float> gu = cpu_fp8_linear(w, x, m, nullptr);
  std::vector<float> gate(static_cast<size_t>(m * inter)), up(gate.size());
  for (int r = 0; r < m; ++r)
    for (int64_t i = 0; i < inter; ++i) {
      gate[static_cast<size_t>(r * inter + i)] = gu[static_cast<size_t>(r * w.n + i)];
      up[static_cast<size_t>(r * inter + i)] = gu[static_cast<size_t>(r * w.n + inter + i)];
    }
  CpuRef cpu;
  const Tensor out = cpu.zeros(m, inter);
  cpu->silu_mul(cpu.tensor(m, inter, gate), cpu.tensor(m, inter, up), out);
  return cpu.host(out);
}

// w on the device, as the kernels see it.
struct DevFp8 {
  DeviceBuffer<uint8_t> codes;
  DeviceBuffer<float> scales;
  cuda::Fp8Weight w;
  explicit DevFp8(const HostFp8& h) : codes(h.codes), scales(h.scales) {
    w.data = codes.get();
    w.n = h.n;
    w.k = h.k;
    w.scales = scales.get();
    w.input_scale = h.q.input_scale;
    switch (h.q.granularity) {
      case ScaleGranularity::Tensor: w.gran = cuda::Fp8Gran::Tensor; break;
      case ScaleGranularity::Channel: w.gran = cuda::Fp8Gran::Channel; break;
      case ScaleGranularity::Block:
        w.gran = cuda::Fp8Gran::Block;
        w.scale_cols = h.q.scale_cols;
        break;
    }
    w.act = h.q.act == ActQuant::Static         ? cuda::Fp8Act::Static
            : h.q.act == ActQuant::DynamicGroup ? cuda::Fp8Act::DynamicGroup
                                                : cuda::Fp8Act::DynamicToken;
  }
};

// x quantized on the device (fp8_quantize) into a buffer of its own.
struct DevFp8X {
  DeviceBuffer<uint8_t> buf;
  cuda::Fp8X x;
  DevFp8X(const Mat& xm, const cuda::Fp8Weight& w) : buf(static_cast<size_t>(cuda::fp8_x_bytes(xm.rows, xm.cols, w))) {
    x = cuda::fp8_x_at(buf.get(), xm.rows, xm.cols, w);
    cuda::fp8_quantize(xm, w, x, test_launch());
  }
};

// The first m rows of y against want (rounded to BF16 for a BF16 y); rows past m untouched.
// f32_tol: the tolerance of an F32 y.
inline void expect_close(const DevMatrix& y, int m, const std::vector<float>& want, double f32_tol = kTolFp8F32) {
  const std::vector<float> got = y.download();
  const std::vector<float> first(got.begin(), got.begin() + m * y.cols());
  const bool bf = y.dt() == Dt::BF16;
  EXPECT_LT(normalised_error(first, bf ? round_bf16(want) : want), bf ? kTolBf16 : f32_tol);
  for (size_t i = static_cast<size_t>(m * y.cols()); i < got.size(); ++i)
    ASSERT_TRUE(std::isnan(got[i])) << "row " << i / y.cols() << " >= M was written";
  EXPECT_EQ(y.damaged_padding(), 0);
}

}  // namespace inferdesk::gputest
