// The device math the kernels share (cuda/kernels/device_math.cuh), evaluated on the GPU over
// ranges of inputs against a double-precision reference on the host. Each bound is what the
// function's roundings allow (CUDA's documented 2 ulps for expf and sincosf, half an ulp per
// IEEE operation, a factor of up to 2 between relative error and ulps of the result): SiLU and the
// sigmoid within 6 ulps, the RMSNorm row scale within 3, rope_cos_sin within 5, rotate_half within
// its two roundings; WideNorm's partial sums in exactly their documented order; the BF16
// conversions bit for bit (round to nearest even, as gpu_test.h's float_to_bf16).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/wide_norm.h"
#include "tests/gpu/gpu_test.h"

namespace inferdesk::gputest {
namespace {

namespace k = inferdesk::cuda;
using k::bf16;

// ------------------------------------------------------------------------------ device side

// out[i] = f(in[i]) for i < n.
template <class F>
__global__ void map_kernel(const float* in, float* out, int n, F f) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = f(in[i]);
}
struct SiluF {
  __device__ float operator()(float g) const { return k::silu(g); }
};
struct SigmoidF {
  __device__ float operator()(float g) const { return k::sigmoid(g); }
};
struct RoundBf16F {
  __device__ float operator()(float v) const { return k::round_bf16(v); }
};

// One thread per case i: rms_scale(sum[i], n[i], eps[i]).
__global__ void rms_scale_kernel(const float* sum, const float* n, const float* eps, float* out, int cases) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < cases) out[i] = k::rms_scale(sum[i], n[i], eps[i]);
}
// Row r of kWideNormRows: wide_norm_row_sum(ss, tiles, r).
__global__ void row_sum_kernel(const float* ss, int tiles, float* out) {
  out[threadIdx.x] = k::wide_norm_row_sum(ss, tiles, static_cast<int>(threadIdx.x));
}
// Case i: rope_cos_sin(in[3 i], in[3 i + 1], in[3 i + 2]) into out[2 i] (cos), out[2 i + 1] (sin).
__global__ void cos_sin_kernel(const float* in, float* out, int cases) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < cases) k::rope_cos_sin(in[3 * i], in[3 * i + 1], in[3 * i + 2], out[2 * i], out[2 * i + 1]);
}
// Case i: rotate_half(x, partner, c, s, first) of in[4 i ..], first for even i.
__global__ void rotate_kernel(const float* in, float* out, int cases) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < cases) out[i] = k::rotate_half(in[4 * i], in[4 * i + 1], in[4 * i + 2], in[4 * i + 3], i % 2 == 0);
}
// Chunk i of 8 values: pack_bf16x8 into packed[i], pack_bf16x2 pairs into pairs[4 i ..], and
// unpack_bf16x8 of bits[i] into unpacked[8 i ..]; from_float<bf16> of each value into single.
__global__ void pack_kernel(const float* in, uint4* packed, uint32_t* pairs, bf16* single, const uint4* bits,
                            float* unpacked, int chunks) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= chunks) return;
  float v[8], u[8];
  for (int e = 0; e < 8; ++e) v[e] = in[8 * i + e];
  packed[i] = k::pack_bf16x8(v);
  for (int e = 0; e < 4; ++e) pairs[4 * i + e] = k::pack_bf16x2(v[2 * e], v[2 * e + 1]);
  for (int e = 0; e < 8; ++e) single[8 * i + e] = k::from_float<bf16>(v[e]);
  k::unpack_bf16x8(bits[i], u);
  for (int e = 0; e < 8; ++e) unpacked[8 * i + e] = u[e];
}
// to_float of every BF16 and F16 bit pattern (i < 65536), and load_as_float / store_from_float.
__global__ void widen_kernel(const bf16* b, const __half* h, float* from_b, float* from_h, float* loaded,
                             bf16* stored) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= 65536) return;
  from_b[i] = k::to_float(b[i]);
  from_h[i] = k::to_float(h[i]);
  loaded[i] = k::load_as_float(b, k::Dt::BF16, i);
  k::store_from_float(stored, k::Dt::BF16, i, k::load_as_float(from_h, k::Dt::F32, i));
}

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + 255) / 256); }

// -------------------------------------------------------------------------------- host side

// The spacing of floats at |v| (normal or subnormal), and |got - want| in those units.
double ulp_of(double v) {
  int e = 0;
  std::frexp(v == 0.0 ? 1e-40 : v, &e);  // |v| in [2^(e-1), 2^e)
  return std::ldexp(1.0, std::max(e - 24, -149));
}
double ulps(float got, double want) { return std::fabs(static_cast<double>(got) - want) / ulp_of(want); }

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
uint16_t bits_of(bf16 v) { return static_cast<__nv_bfloat16_raw>(v).x; }

std::vector<float> linspace(double lo, double hi, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(lo + (hi - lo) * i / (n - 1));
  return v;
}

template <class F>
std::vector<float> map_on_device(const std::vector<float>& in, F f) {
  DeviceBuffer<float> din(in), dout(in.size());
  map_kernel<<<blocks_for(in.size()), 256>>>(din.get(), dout.get(), static_cast<int>(in.size()), f);
  if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("map_kernel failed");
  return dout.download();
}

// Activations over [-87, 87] (both ends keep e^-g and its reciprocal normal floats) and near 0.
std::vector<float> activation_inputs() {
  std::vector<float> v = linspace(-87.0, 87.0, 20001);
  for (float x : {0.0f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 0.5f, -0.5f, 1.0f, -1.0f}) v.push_back(x);
  return v;
}

TEST(GpuDeviceMath, SiluAndSigmoidWithinSixUlps) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<float> g = activation_inputs();
  const std::vector<float> silu = map_on_device(g, SiluF{}), sig = map_on_device(g, SigmoidF{});
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i], s = 1.0 / (1.0 + std::exp(-x));
    // expf (2 ulps, under 2^-22 relative), the sum and the division (2^-24 each): 6 * 2^-24.
    ASSERT_LE(ulps(silu[i], x * s), 6.0) << "silu(" << g[i] << ") = " << silu[i];
    ASSERT_LE(ulps(sig[i], s), 6.0) << "sigmoid(" << g[i] << ") = " << sig[i];
  }
}

TEST(GpuDeviceMath, RmsScaleWithinThreeUlps) {
  INFERDESK_REQUIRE_GPU();
  std::vector<float> sum, n, eps;
  for (float cols : {3.0f, 64.0f, 128.0f, 4096.0f, 5120.0f})
    for (float e : {1e-5f, 1e-6f})
      for (double mean = 1e-7; mean < 1e7; mean *= 1.37) {
        sum.push_back(static_cast<float>(mean * cols));
        n.push_back(cols);
        eps.push_back(e);
      }
  DeviceBuffer<float> ds(sum), dn(n), de(eps), dout(sum.size());
  rms_scale_kernel<<<blocks_for(sum.size()), 256>>>(ds.get(), dn.get(), de.get(), dout.get(),
                                                    static_cast<int>(sum.size()));
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> got = dout.download();
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = 1.0 / std::sqrt(static_cast<double>(sum[i]) / n[i] + eps[i]);
    // The division and the sum (halved by the root), the root, the reciprocal: 3 * 2^-24.
    ASSERT_LE(ulps(got[i], want), 3.0) << "rms_scale(" << sum[i] << ", " << n[i] << ", " << eps[i] << ")";
  }
}

TEST(GpuDeviceMath, WideNormRowSumKeepsItsOrder) {
  INFERDESK_REQUIRE_GPU();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(0.0f, 1000.0f);
  for (int tiles : {1, 2, 3, 4, 5, 7, 9, 33, 132}) {
    std::vector<float> ss(static_cast<size_t>(tiles) * k::kWideNormRows);
    for (float& v : ss) v = dist(rng);
    DeviceBuffer<float> dss(ss), dout(k::kWideNormRows);
    row_sum_kernel<<<1, k::kWideNormRows>>>(dss.get(), tiles, dout.get());
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<float> got = dout.download();
    for (int r = 0; r < k::kWideNormRows; ++r) {
      // The documented order in F32 on the host (four running sums over t % 4, then
      // (0 + 1) + (2 + 3)): the same bits. And the exact sum within its roundings: positive terms,
      // at most ceil(tiles / 4) + 2 additions on any path, 2^-24 relative each.
      float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      double exact = 0;
      for (int t = 0; t < tiles; ++t) {
        p[t % 4] += ss[static_cast<size_t>(t * k::kWideNormRows + r)];
        exact += ss[static_cast<size_t>(t * k::kWideNormRows + r)];
      }
      const float ordered = (p[0] + p[1]) + (p[2] + p[3]);
      ASSERT_EQ(bits_of(got[static_cast<size_t>(r)]), bits_of(ordered)) << tiles << " tiles, row " << r;
      ASSERT_LE(ulps(got[static_cast<size_t>(r)], exact), 2.0 * ((tiles + 3) / 4 + 2)) << tiles << " tiles, row " << r;
    }
  }
}

TEST(GpuDeviceMath, RopeCosSinOfTheF32Angle) {
  INFERDESK_REQUIRE_GPU();
  std::vector<float> in;
  for (double theta : {10000.0, 500000.0})
    for (int i = 0; i < 64; ++i)
      for (float pos : {0.0f, 1.0f, 7.0f, 1000.0f, 4095.0f, 32767.0f, 131071.0f, 1000000.0f})
        for (float scaling : {1.0f, 0.8f, 1.1f}) {
          in.push_back(static_cast<float>(std::pow(theta, -i / 64.0)));
          in.push_back(pos);
          in.push_back(scaling);
        }
  const int cases = static_cast<int>(in.size() / 3);
  DeviceBuffer<float> din(in), dout(static_cast<size_t>(2 * cases));
  cos_sin_kernel<<<blocks_for(static_cast<size_t>(cases)), 256>>>(din.get(), dout.get(), cases);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> got = dout.download();
  for (int i = 0; i < cases; ++i) {
    const float inv_freq = in[static_cast<size_t>(3 * i)], pos = in[static_cast<size_t>(3 * i + 1)];
    const double scaling = in[static_cast<size_t>(3 * i + 2)];
    const double angle = inv_freq * pos;  // the F32 product the kernels form, exact in double
    const double want[2] = {std::cos(angle) * scaling, std::sin(angle) * scaling};
    for (int j = 0; j < 2; ++j) {
      const float g = got[static_cast<size_t>(2 * i + j)];
      // sincosf's 2 ulps (2^-22 relative) and the scaling's rounding: 5 * 2^-24; or, near a zero
      // of cos or sin, within an eighth of an ulp of 1.0.
      EXPECT_TRUE(ulps(g, want[j]) <= 5.0 || std::fabs(g - want[j]) <= 0x1p-26)
          << (j ? "sin" : "cos") << "(" << inv_freq << " * " << pos << ") * " << scaling << " = " << g << ", want "
          << want[j];
    }
  }
}

TEST(GpuDeviceMath, RotateHalfRoundsTwice) {
  INFERDESK_REQUIRE_GPU();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> val(-8.0f, 8.0f), ang(-3.2f, 3.2f);
  std::vector<float> in;
  for (int i = 0; i < 20000; ++i) {
    const float a = ang(rng);
    in.insert(in.end(), {val(rng), val(rng), std::cos(a), std::sin(a)});
  }
  const int cases = static_cast<int>(in.size() / 4);
  DeviceBuffer<float> din(in), dout(static_cast<size_t>(cases));
  rotate_kernel<<<blocks_for(static_cast<size_t>(cases)), 256>>>(din.get(), dout.get(), cases);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> got = dout.download();
  for (int i = 0; i < cases; ++i) {
    const double x = in[static_cast<size_t>(4 * i)], p = in[static_cast<size_t>(4 * i + 1)];
    const double c = in[static_cast<size_t>(4 * i + 2)], s = in[static_cast<size_t>(4 * i + 3)];
    const double want = i % 2 == 0 ? x * c - p * s : x * c + p * s;
    // partner * s rounded once (half an ulp of it), the fused multiply-add once (half of the result's).
    const float g = got[static_cast<size_t>(i)];
    const double bound = 0.5 * ulp_of(p * s) + 0.5 * std::max(ulp_of(want), ulp_of(g)) + 1e-45;
    ASSERT_LE(std::fabs(g - want), bound) << "case " << i;
  }
}

TEST(GpuDeviceMath, Bf16RoundingAndPackingMatchRoundToNearestEven) {
  INFERDESK_REQUIRE_GPU();
  // Every BF16 value's neighbourhood: exactly representable, just below and above a tie, the tie
  // itself (low half 0x8000: to even), and random low bits; NaNs left out (payloads may differ).
  std::mt19937 rng(3);
  std::vector<float> in;
  for (uint32_t hi = 0; hi < 65536; hi += 3) {
    for (uint32_t lo : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, static_cast<uint32_t>(rng() & 0xFFFFu)}) {
      const float f = std::bit_cast<float>(hi << 16 | lo);
      if (!std::isnan(f)) in.push_back(f);
    }
  }
  while (in.size() % 8 != 0) in.push_back(1.0f);
  const int chunks = static_cast<int>(in.size() / 8);
  std::vector<uint32_t> raw(in.size() / 2);  // 8 BF16 bit patterns per chunk for the unpack
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint32_t>(rng());
  DeviceBuffer<float> din(in), dunpacked(in.size());
  DeviceBuffer<uint4> dpacked(static_cast<size_t>(chunks)), dbits(static_cast<size_t>(chunks));
  DeviceBuffer<uint32_t> dpairs(in.size() / 2);
  DeviceBuffer<bf16> dsingle(in.size());
  CUDA_OK(cudaMemcpy(dbits.get(), raw.data(), raw.size() * 4, cudaMemcpyHostToDevice));
  pack_kernel<<<blocks_for(static_cast<size_t>(chunks)), 256>>>(din.get(), dpacked.get(), dpairs.get(), dsingle.get(),
                                                                dbits.get(), dunpacked.get(), chunks);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> rounded = map_on_device(in, RoundBf16F{});
  const std::vector<uint4> packed = dpacked.download();
  const std::vector<uint32_t> pairs = dpairs.download();
  const std::vector<bf16> single = dsingle.download();
  const std::vector<float> unpacked = dunpacked.download();
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = bits_of(float_to_bf16(in[i]));
    const uint32_t word = i % 8 < 2   ? packed[i / 8].x
                          : i % 8 < 4 ? packed[i / 8].y
                          : i % 8 < 6 ? packed[i / 8].z
                                      : packed[i / 8].w;
    ASSERT_EQ(bits_of(single[i]), want) << "from_float<bf16>(" << in[i] << ")";
    ASSERT_EQ(bits_of(rounded[i]), static_cast<uint32_t>(want) << 16) << "round_bf16(" << in[i] << ")";
    ASSERT_EQ(static_cast<uint16_t>(word >> (16 * (i % 2))), want) << "pack_bf16x8, element " << i;
    ASSERT_EQ(static_cast<uint16_t>(pairs[i / 2] >> (16 * (i % 2))), want) << "pack_bf16x2, element " << i;
    const uint16_t b = static_cast<uint16_t>(raw[i / 2] >> (16 * (i % 2)));
    ASSERT_EQ(bits_of(unpacked[i]), static_cast<uint32_t>(b) << 16) << "unpack_bf16x8, element " << i;
  }
}

TEST(GpuDeviceMath, WideningIsExact) {
  INFERDESK_REQUIRE_GPU();
  std::vector<bf16> b(65536);
  std::vector<__half> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    __nv_bfloat16_raw rb;
    rb.x = static_cast<uint16_t>(i);
    b[i] = bf16(rb);
    __half_raw rh;
    rh.x = static_cast<uint16_t>(i);
    h[i] = __half(rh);
  }
  DeviceBuffer<bf16> db(b), dstored(65536);
  DeviceBuffer<__half> dh(h);
  DeviceBuffer<float> dfb(65536), dfh(65536), dloaded(65536);
  widen_kernel<<<256, 256>>>(db.get(), dh.get(), dfb.get(), dfh.get(), dloaded.get(), dstored.get());
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> fb = dfb.download(), fh = dfh.download(), loaded = dloaded.download();
  const std::vector<bf16> stored = dstored.download();
  for (uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(bits_of(fb[i]), i << 16) << "to_float(bf16 " << i << ")";
    ASSERT_EQ(bits_of(loaded[i]), i << 16) << "load_as_float(bf16 " << i << ")";
    const float want = __half2float(h[i]);  // the host conversion (exact)
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(fh[i])) << "to_float(half " << i << ")";
      continue;
    }
    ASSERT_EQ(bits_of(fh[i]), bits_of(want)) << "to_float(half " << i << ")";
    ASSERT_EQ(bits_of(stored[i]), bits_of(float_to_bf16(want))) << "store_from_float(" << want << ")";
  }
}

}  // namespace
}  // namespace inferdesk::gputest
