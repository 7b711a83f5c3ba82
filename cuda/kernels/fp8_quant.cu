// FP8 activation quantization (for the wide, cuBLASLt and simple paths; the GEMV quantizes by
// itself), the CUDA-core FP8 GEMM that serves any shape, and the FP8 random fill of dummy weights.
#include <cstdint>
#include <string>

#include "core/util/splitmix.h"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/fp8_common.cuh"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kSimpleTokens = 8;  // x rows per warp of the simple GEMM

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t groups_of(int64_t cols, const Fp8Weight& w) {
  return w.act == Fp8Act::DynamicGroup ? ceil_div(cols, kFp8Block) : 1;
}

// The 8 values x[c0 .. c0 + 8) as floats; past `cols` zeros (vec: whole, aligned chunk).
__device__ __forceinline__ void load8(const bf16* row, int64_t c0, int64_t cols, bool vec, float (&v)[8]) {
  if (vec && c0 + 8 <= cols) {
    const uint4 u = *reinterpret_cast<const uint4*>(row + c0);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = __uint_as_float(w[i] << 16);
      v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = c0 + i < cols ? __bfloat162float(row[c0 + i]) : 0.0f;
}

// Per token (dynamic or static): one block per row of up to kRowThreads threads, as few as hold
// the row in registers at kRegChunks chunks of 8 a thread (rows up to 16,384 wide are read once;
// later chunks are read again).
constexpr int kRowThreads = 1024, kRegChunks = 2;
unsigned row_threads(int64_t cols) {
  const int64_t t = (ceil_div(cols, 8 * kRegChunks) + 31) / 32 * 32;
  return static_cast<unsigned>(t < 32 ? 32 : t > kRowThreads ? kRowThreads : t);
}

__device__ __forceinline__ void store_q8(uint8_t* qr, int64_t c0, int64_t cols, const float (&v)[8], float inv) {
  const uint2 q = make_uint2(fp8_quant4(v[0], v[1], v[2], v[3], inv), fp8_quant4(v[4], v[5], v[6], v[7], inv));
  if (c0 + 8 <= cols) {
    *reinterpret_cast<uint2*>(qr + c0) = q;  // the stride is a multiple of 16
  } else {
    const uint32_t w[2] = {q.x, q.y};
    for (int i = 0; c0 + i < cols; ++i) qr[c0 + i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
}

__global__ void __launch_bounds__(kRowThreads)
    quantize_rows_kernel(const bf16* x, int64_t x_stride, int64_t cols, bool vec, bool dynamic, float input_scale,
                         Fp8X out) {
  __shared__ float red[kRowThreads / 32];
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * x_stride;
  uint8_t* qr = out.q + row * out.stride;
  const int64_t kSpan = 8 * int64_t{blockDim.x};  // columns a pass over the threads covers
  pdl_launch_dependents();
  pdl_wait();
  float v[kRegChunks][8];
  float mx = 0.0f;
#pragma unroll
  for (int i = 0; i < kRegChunks; ++i) {
    load8(xr, 8 * threadIdx.x + i * kSpan, cols, vec, v[i]);  // zeros past cols
#pragma unroll
    for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(v[i][e]));
  }
  float s = input_scale;
  if (dynamic) {
    for (int64_t c0 = 8 * threadIdx.x + kRegChunks * kSpan; c0 < cols; c0 += kSpan) {
      float w[8];
      load8(xr, c0, cols, vec, w);
#pragma unroll
      for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(w[e]));
    }
    mx = warp_max(mx);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) mx = fmaxf(mx, red[w]);
    s = fp8_dynamic_scale(mx);
  }
  if (threadIdx.x == 0) out.scales[row] = s;
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < kRegChunks; ++i) {
    const int64_t c0 = 8 * threadIdx.x + i * kSpan;
    if (c0 < cols) store_q8(qr, c0, cols, v[i], inv);
  }
  for (int64_t c0 = 8 * threadIdx.x + kRegChunks * kSpan; c0 < cols; c0 += kSpan) {
    float w[8];
    load8(xr, c0, cols, vec, w);
    store_q8(qr, c0, cols, w, inv);
  }
}

// Per token and 128-wide group: one warp per group, 4 values a lane.
__global__ void __launch_bounds__(kThreads)
    quantize_groups_kernel(const bf16* x, int64_t x_stride, int64_t cols, Fp8X out) {
  const int lane = threadIdx.x & 31;
  const int64_t row = blockIdx.y, group = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  pdl_launch_dependents();
  pdl_wait();
  if (group >= out.groups) return;
  const int64_t c0 = group * kFp8Block + 4 * lane;
  const bf16* xr = x + row * x_stride;
  float v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = c0 + i < cols ? __bfloat162float(xr[c0 + i]) : 0.0f;
  float mx = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
  mx = warp_max(mx);
  const float s = fp8_dynamic_scale(mx);
  if (lane == 0) out.scales[group * out.rows + row] = s;
  const uint32_t q = fp8_quant4(v[0], v[1], v[2], v[3], 1.0f / s);
  uint8_t* qr = out.q + row * out.stride;
  if (c0 + 4 <= cols) {
    *reinterpret_cast<uint32_t*>(qr + c0) = q;
  } else {
    for (int i = 0; c0 + i < cols; ++i) qr[c0 + i] = static_cast<uint8_t>(q >> (8 * i));
  }
}

// One warp per output row n and kSimpleTokens rows of x: lanes take k in turn, products summed in
// F32 per lane (and per 128-k group, scaled there, for block weights), then over the warp.
template <bool kBlock, typename TY>
__global__ void __launch_bounds__(kThreads)
    fp8_simple_kernel(const Fp8X x, const Fp8Weight w, const bf16* bias, TY* y, int64_t ldy) {
  const int lane = threadIdx.x & 31;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kSimpleTokens;
  pdl_launch_dependents();
  pdl_wait();
  if (n >= w.n) return;
  const uint8_t* wr = w.data + n * w.k;
  float acc[kSimpleTokens] = {};
  const int64_t span = kBlock ? kFp8Block : w.k;
  for (int64_t g0 = 0; g0 < w.k; g0 += span) {
    float part[kSimpleTokens] = {};
    const int64_t g1 = g0 + span < w.k ? g0 + span : w.k;
    for (int64_t k = g0 + lane; k < g1; k += 32) {
      const float wv = fp8_to_float(wr[k]);
#pragma unroll
      for (int t = 0; t < kSimpleTokens; ++t)
        if (t0 + t < x.rows) part[t] += wv * fp8_to_float(x.q[(t0 + t) * x.stride + k]);
    }
    const int64_t g = g0 / kFp8Block;
#pragma unroll
    for (int t = 0; t < kSimpleTokens; ++t) {
      if (!kBlock) {
        acc[t] = part[t];
      } else if (t0 + t < x.rows) {
        const float sw = w.scales[(n / kFp8Block) * w.scale_cols + g];
        acc[t] += part[t] * (x.scales[g * x.rows + t0 + t] * sw);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kSimpleTokens; ++t) {
    const float sum = warp_sum(acc[t]);
    if (lane != 0 || t0 + t >= x.rows) continue;
    float v = sum;
    if (!kBlock) v *= x.scales[t0 + t] * w.scales[w.gran == Fp8Gran::Tensor ? 0 : n];
    if (bias) v += __bfloat162float(bias[n]);
    if constexpr (sizeof(TY) == 4)
      y[(t0 + t) * ldy + n] = v;
    else
      y[(t0 + t) * ldy + n] = __float2bfloat16(v);
  }
}

// The CPU backend's generator (cpu_backend.cpp, fill_random), rounded to E4M3 as f32_to_fp8_e4m3.
__global__ void fill_fp8_kernel(uint8_t* data, int64_t rows, int64_t cols, int64_t stride, uint64_t base, float scale) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    const uint64_t bits = splitmix64(base ^ static_cast<uint64_t>(r * cols + c));
    const float u = __fsub_rn(__fmul_rn(static_cast<float>(bits >> 40), 2.0f / 16777216.0f), 1.0f);
    const float v = __fmul_rn(u, scale);
    data[r * stride + c] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
  }
}

__global__ void broadcast_kernel(const float* src, float* dst, int64_t n) {
  pdl_launch_dependents();
  pdl_wait();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = *src;
}

unsigned grid_for(int64_t n) {
  const int64_t b = ceil_div(n, kThreads);
  return static_cast<unsigned>(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

}  // namespace

int64_t fp8_x_bytes(int64_t rows, int64_t cols, const Fp8Weight& w) {
  const int64_t q = rows * ceil_div(cols, 16) * 16;
  return ceil_div(q, 256) * 256 + rows * groups_of(cols, w) * 4;
}

Fp8X fp8_x_at(void* base, int64_t rows, int64_t cols, const Fp8Weight& w) {
  Fp8X x;
  x.q = static_cast<uint8_t*>(base);
  x.rows = rows;
  x.cols = cols;
  x.stride = ceil_div(cols, 16) * 16;
  x.groups = groups_of(cols, w);
  x.scales = reinterpret_cast<float*>(x.q + ceil_div(rows * x.stride, 256) * 256);
  return x;
}

void fp8_quantize(const Mat& x, const Fp8Weight& w, const Fp8X& out, const Launch& launch) {
  if (x.dt != Dt::BF16 || out.rows != x.rows || out.cols != x.cols || out.stride % 16 != 0 ||
      out.groups != groups_of(x.cols, w))
    unsupported_config("fp8_quantize: x must be BF16 and match the quantized buffer");
  if (x.rows <= 0 || x.cols <= 0) return;
  const auto* xp = static_cast<const bf16*>(x.data);
  if (w.act == Fp8Act::DynamicGroup) {
    const dim3 grid(static_cast<unsigned>(ceil_div(out.groups, kThreads / 32)), static_cast<unsigned>(x.rows));
    launch_kernel("fp8_quantize", quantize_groups_kernel, grid, dim3(kThreads), 0, launch, xp, x.stride, x.cols, out);
    return;
  }
  const bool vec = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && (x.rows == 1 || x.stride % 8 == 0);
  launch_kernel("fp8_quantize", quantize_rows_kernel, dim3(static_cast<unsigned>(x.rows)), dim3(row_threads(x.cols)), 0,
                launch, xp, x.stride, x.cols, vec, w.act == Fp8Act::DynamicToken, w.input_scale, out);
}

void fp8_gemm_simple(const Fp8X& x, const Fp8Weight& w, const bf16* bias, Mat y, const Launch& launch) {
  const bool block = w.gran == Fp8Gran::Block;
  if (x.cols != w.k || y.cols != w.n || y.rows < x.rows || block != (w.act == Fp8Act::DynamicGroup) ||
      x.groups != groups_of(w.k, w) || (block && w.scale_cols != ceil_div(w.k, kFp8Block)))
    unsupported_config("fp8_gemm_simple: shapes or scheme do not match");
  if (x.rows <= 0 || w.n <= 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(w.n, kThreads / 32)),
                  static_cast<unsigned>(ceil_div(x.rows, kSimpleTokens)));
  if (y.dt == Dt::F32) {
    auto* yp = static_cast<float*>(y.data);
    launch_kernel("fp8_gemm_simple", block ? fp8_simple_kernel<true, float> : fp8_simple_kernel<false, float>, grid,
                  dim3(kThreads), 0, launch, x, w, bias, yp, y.stride);
  } else {
    auto* yp = static_cast<bf16*>(y.data);
    launch_kernel("fp8_gemm_simple", block ? fp8_simple_kernel<true, bf16> : fp8_simple_kernel<false, bf16>, grid,
                  dim3(kThreads), 0, launch, x, w, bias, yp, y.stride);
  }
}

void fill_random_fp8(uint8_t* data, int64_t rows, int64_t cols, int64_t stride, uint64_t seed, float scale,
                     const Launch& launch) {
  if (rows <= 0 || cols <= 0) return;
  launch_kernel("fill_random_fp8", fill_fp8_kernel, dim3(grid_for(rows * cols)), dim3(kThreads), 0, launch, data, rows,
                cols, stride, splitmix64(seed), scale);
}

void fp8_broadcast_scale(const float* src, float* dst, int64_t n, const Launch& launch) {
  if (n <= 0) return;
  launch_kernel("fp8_broadcast_scale", broadcast_kernel, dim3(grid_for(n)), dim3(kThreads), 0, launch, src, dst, n);
}

}  // namespace inferdesk::cuda
