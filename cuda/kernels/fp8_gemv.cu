// FP8 small-batch GEMV (decode, M <= 8): y[M, N] = x[M, K] @ W[N, K]^T with E4M3 weights,
// the activation quantization fused. Memory-bound: the goal is to stream W once at full DRAM
// bandwidth, one byte per weight.
//
// Layout (as gemv.cu, with E4M3 MMAs m16n8k32): a block owns 16 output rows (32 for SwiGLU: 16
// gate + 16 up); W rows are the 16-row A operand, the (up to 8) tokens the 8 B columns. A warp
// step covers 128 k: lane (g = lane / 4, t = lane % 4) loads 16 bytes of W rows g and g + 8 at
// k0 + 16 t and at k0 + 64 + 16 t, and the BF16 activations of token g at the same k's, which it
// quantizes itself; the 16 bytes of a chunk feed two MMAs in the same order for A and B. The kW
// warps take steps in turn and are reduced through shared memory. A warp loads the W of kU steps
// as a batch and issues the next batch before consuming the current one, so up to 2 kU steps of
// W are in flight per warp; its activations are read (from L1) only when a step is consumed, so
// the registers go to W.
// Scales: per token (dynamic: the amax of the whole row, computed by every block in a pre-pass
// over x, which is small and in L2; static: one scale), applied with the weight scale in the
// epilogue; per 128-k group (block weights): a step is one group, so the four lanes of a token
// hold its 128 values: two shuffles give the group's amax, and each step's products are scaled
// into the sums as the CPU reference does.
// Programmatic dependent launch: the block issues its first step's W loads (immutable) before
// waiting for the kernel that wrote x.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/fp8_common.cuh"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {
namespace {

constexpr int kRows = 16;    // output rows per block (per stacked matrix)
constexpr int kStepK = 128;  // k per warp step
constexpr int kMaxWarps = 8;

struct GemvArgs {
  const bf16* x;
  int64_t x_stride;
  int m;
  const uint8_t* w;
  int64_t mat_rows, k;
  const float* scales;
  int64_t scale_cols;
  int32_t gran;  // Fp8Gran
  bool dynamic;  // per-token dynamic (else static) activations; block weights: per group
  float input_scale;
  const bf16* bias;
  void* y;
  int64_t y_stride;
  bool y_f32;
};

// One warp step of kMats matrices: W chunks [matrix][row g / g + 8][k half], the token's BF16
// activations [k half][8 values each], and (block weights) the step's weight scale per matrix.
template <int kMats>
struct Step {
  uint4 a[kMats][2][2];
  uint4 x[2][2];
  float sw[kMats];
};

// kLimit: the step may reach past K (the last one): chunks past K load as zeros (K % 16 == 0, so
// a chunk is whole or absent).
template <int kMats, bool kXVec, bool kBlock, bool kLimit = false, bool kPinned = false>
__device__ __forceinline__ void load_w(Step<kMats>& s, const uint8_t* const (&wp)[kMats][2], const GemvArgs& a,
                                       int64_t step, int64_t col0, const int64_t (&sw_row)[kMats]) {
  const int64_t k0 = step * kStepK;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool in = !kLimit || col0 + k0 + 64 * h < a.k;
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        s.a[m][r][h] = in ? load_fp8_stream<kPinned>(wp[m][r] + k0 + 64 * h) : make_uint4(0, 0, 0, 0);
  }
  if constexpr (kBlock) {
#pragma unroll
    for (int m = 0; m < kMats; ++m) s.sw[m] = __ldg(a.scales + sw_row[m] * a.scale_cols + step);
  }
}
template <int kMats, bool kXVec, bool kLimit = false>
__device__ __forceinline__ void load_x(Step<kMats>& s, const bf16* xp, const GemvArgs& a, int64_t step, int64_t col0) {
  const int64_t k0 = step * kStepK;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool in = !kLimit || col0 + k0 + 64 * h < a.k;
#pragma unroll
    for (int q = 0; q < 2; ++q) s.x[h][q] = in ? load_bf16x8<kXVec>(xp + k0 + 64 * h + 8 * q) : make_uint4(0, 0, 0, 0);
  }
}

// The step's MMAs into c (block weights: into fresh sums, scaled into c). inv: 1 / s_x of the
// lane's token (ignored for block weights).
template <int kMats, bool kBlock>
__device__ __forceinline__ void consume(float (&c)[kMats][4], const Step<kMats>& s, float inv, int t) {
  if constexpr (kBlock) {
    float amax = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int q = 0; q < 2; ++q) amax = fmaxf(amax, bf16x8_amax(s.x[h][q]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float sg = fp8_dynamic_scale(amax);  // the group's scale for token g
    inv = 1.0f / sg;
    // The C columns of this lane are tokens 2t and 2t + 1, whose scales lanes 8t and 8t + 4 hold.
    const float s0 = __shfl_sync(0xffffffffu, sg, 8 * t), s1 = __shfl_sync(0xffffffffu, sg, 8 * t + 4);
    uint4 b[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint2 lo = fp8_quant_bf16x8(s.x[h][0], inv), hi = fp8_quant_bf16x8(s.x[h][1], inv);
      b[h] = make_uint4(lo.x, lo.y, hi.x, hi.y);
    }
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
      float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int h = 0; h < 2; ++h) mma_e4m3_chunk(p, s.a[m][0][h], s.a[m][1][h], b[h]);
      const float f0 = s0 * s.sw[m], f1 = s1 * s.sw[m];
      c[m][0] += p[0] * f0;
      c[m][1] += p[1] * f1;
      c[m][2] += p[2] * f0;
      c[m][3] += p[3] * f1;
    }
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint2 lo = fp8_quant_bf16x8(s.x[h][0], inv), hi = fp8_quant_bf16x8(s.x[h][1], inv);
      const uint4 b = make_uint4(lo.x, lo.y, hi.x, hi.y);
#pragma unroll
      for (int m = 0; m < kMats; ++m) mma_e4m3_chunk(c[m], s.a[m][0][h], s.a[m][1][h], b);
    }
  }
}

// Per-token dynamic scales: the amax of each of the M rows over the whole K (every block reads x;
// it is at most 8 x K BF16, in L2), then s_x and 1 / s_x in shared memory.
template <int kW, bool kXVec>
__device__ void token_scales(const GemvArgs& a, float (&red)[kW][kFp8GemvMaxRows], float* s_x, float* s_inv) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t chunks = a.k / 8;
#pragma unroll
  for (int r = 0; r < kFp8GemvMaxRows; ++r) {
    if (r >= a.m) break;
    const bf16* row = a.x + r * a.x_stride;
    float mx = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
      mx = fmaxf(mx, bf16x8_amax(load_bf16x8<kXVec>(row + 8 * c)));
    mx = warp_max(mx);
    if (lane == 0) red[warp][r] = mx;
  }
  __syncthreads();
  if (threadIdx.x < a.m) {
    float mx = 0.0f;
#pragma unroll
    for (int w = 0; w < kW; ++w) mx = fmaxf(mx, red[w][threadIdx.x]);
    const float s = fp8_dynamic_scale(mx);
    s_x[threadIdx.x] = s;
    s_inv[threadIdx.x] = 1.0f / s;
  }
  __syncthreads();
}

template <typename TY>
__device__ __forceinline__ void store_out(void* y, int64_t i, float v) {
  if constexpr (sizeof(TY) == 4)
    static_cast<float*>(y)[i] = v;
  else
    static_cast<bf16*>(y)[i] = __float2bfloat16(v);
}

// The block's sums reduced over its warps, scaled and stored. Thread j < 128 finishes
// accumulator entry i = j / 32 of lane l = j % 32: C row g (+8 for i >= 2), C column (token)
// 2 (l % 4) + (i & 1).
template <int kW, int kMats, bool kBlock, typename TY>
__device__ __forceinline__ void finish(const GemvArgs& a, const float (&red)[kW][kMats * 4][32], const float* s_x,
                                       int64_t r0) {
  if (threadIdx.x >= 128) return;
  const int i = threadIdx.x >> 5, l = threadIdx.x & 31;
  const int64_t row = r0 + (l >> 2) + (i >= 2 ? 8 : 0);
  const int tok = 2 * (l & 3) + (i & 1);
  if (row >= a.mat_rows || tok >= a.m) return;
  const float sx = kBlock ? 1.0f : a.dynamic ? s_x[tok] : a.input_scale;
  float v[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kW; ++w) sum += red[w][m * 4 + i][l];
    if constexpr (!kBlock) {
      const float sw = a.scales[a.gran == static_cast<int32_t>(Fp8Gran::Tensor) ? 0 : m * a.mat_rows + row];
      sum *= sx * sw;
    }
    v[m] = sum;
  }
  float out;
  if constexpr (kMats == 1)
    out = v[0] + (a.bias ? __bfloat162float(a.bias[row]) : 0.0f);
  else
    out = silu(v[0]) * v[1];
  store_out<TY>(a.y, tok * a.y_stride + row, out);
}

// The W of kU consecutive steps of one warp (its steps j0 .. j0 + kU - 1, those below n).
template <int kMats, int kU>
struct Batch {
  Step<kMats> s[kU];
};

// kMats 1: y = x W^T (+ bias). kMats 2: W stacks gate over up (mat_rows each), y = silu(g) * u.
// Registers: 128 a thread for kMats 1 (two 8-warp or four 4-warp blocks an SM), more for SwiGLU.
template <int kMats, bool kXVec, bool kBlock, typename TY, int kW, int kU>
__global__ void __launch_bounds__(kW * 32, (kMats == 1 ? 2 : 1) * (kMaxWarps / kW)) fp8_gemv_kernel(const GemvArgs a) {
  __shared__ float red[kW][kMats * 4][32];
  __shared__ float red_max[kW][kFp8GemvMaxRows];
  __shared__ float s_x[kFp8GemvMaxRows], s_inv[kFp8GemvMaxRows];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t steps = (a.k + kStepK - 1) / kStepK, full = a.k / kStepK;
  const int64_t col0 = 16 * t;
  // Rows past the end and tokens past M are clamped to valid ones and computed anyway (their
  // results are never stored), so the main loop has no predicates.
  const uint8_t* wp[kMats][2];
  int64_t sw_row[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
#pragma unroll
    for (int r = 0; r < 2; ++r) wp[m][r] = a.w + (m * a.mat_rows + min(r0 + g + 8 * r, a.mat_rows - 1)) * a.k + col0;
    sw_row[m] = (m * a.mat_rows + r0) / kFp8Block;  // block weights: 16 | 128, one scale row per block
  }
  const bf16* xp = a.x + min(g, a.m - 1) * a.x_stride + col0;
  float c[kMats][4];
#pragma unroll
  for (int m = 0; m < kMats; ++m) c[m][0] = c[m][1] = c[m][2] = c[m][3] = 0.0f;

  // This warp's whole steps: j = 0 .. n - 1 is step warp + j kW (below `full`).
  const int64_t n = full > warp ? (full - warp + kW - 1) / kW : 0;
  auto load_batch = [&](Batch<kMats, kU>& b, int64_t j0, auto pinned) {
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (j0 + u < n)
        load_w<kMats, kXVec, kBlock, false, decltype(pinned)::value>(b.s[u], wp, a, warp + (j0 + u) * kW, col0, sw_row);
  };
  float inv = 1.0f / a.input_scale;
  auto consume_batch = [&](Batch<kMats, kU>& b, int64_t j0) {
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (j0 + u < n) {
        load_x<kMats, kXVec>(b.s[u], xp, a, warp + (j0 + u) * kW, col0);
        consume<kMats, kBlock>(c, b.s[u], inv, t);
      }
  };
  Batch<kMats, kU> p, q;
  load_batch(p, 0, std::true_type{});
  pdl_launch_dependents();
  pdl_wait();
  if constexpr (!kBlock) {
    if (a.dynamic) {
      token_scales<kW, kXVec>(a, red_max, s_x, s_inv);
      inv = s_inv[min(g, a.m - 1)];
    }
  }
  for (int64_t j = 0; j < n; j += 2 * kU) {
    load_batch(q, j + kU, std::false_type{});
    consume_batch(p, j);
    if (j + kU >= n) break;
    load_batch(p, j + 2 * kU, std::false_type{});
    consume_batch(q, j + kU);
  }
  // The partial last step (K % 128 != 0), on the warp whose turn it is.
  if (full < steps && full % kW == warp) {
    load_w<kMats, kXVec, kBlock, true>(p.s[0], wp, a, full, col0, sw_row);
    load_x<kMats, kXVec, true>(p.s[0], xp, a, full, col0);
    consume<kMats, kBlock>(c, p.s[0], inv, t);
  }

#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[warp][m * 4 + i][lane] = c[m][i];
  __syncthreads();
  finish<kW, kMats, kBlock, TY>(a, red, s_x, r0);
}

// Unset fields: 8 warps, one step a batch.
Fp8GemvConfig pick_config(Fp8GemvConfig cfg) {
  if (cfg.warps == 0) cfg.warps = 8;
  if (cfg.unroll == 0) cfg.unroll = 1;
  return cfg;
}

template <int kMats, bool kXVec, bool kBlock, typename TY>
void launch_shaped(const GemvArgs& a, unsigned blocks, Fp8GemvConfig cfg, const Launch& launch) {
  const dim3 grid(blocks), block(cfg.warps * 32);
  if (cfg.warps == 8 && cfg.unroll == 1)
    launch_kernel("fp8_gemv", fp8_gemv_kernel<kMats, kXVec, kBlock, TY, 8, 1>, grid, block, 0, launch, a);
  else if (cfg.warps == 8 && cfg.unroll == 2)
    launch_kernel("fp8_gemv", fp8_gemv_kernel<kMats, kXVec, kBlock, TY, 8, 2>, grid, block, 0, launch, a);
  else if (cfg.warps == 4 && cfg.unroll == 1)
    launch_kernel("fp8_gemv", fp8_gemv_kernel<kMats, kXVec, kBlock, TY, 4, 1>, grid, block, 0, launch, a);
  else if (cfg.warps == 4 && cfg.unroll == 2)
    launch_kernel("fp8_gemv", fp8_gemv_kernel<kMats, kXVec, kBlock, TY, 4, 2>, grid, block, 0, launch, a);
  else
    unsupported_config("fp8_gemv: " + std::to_string(cfg.warps) + " warps, " + std::to_string(cfg.unroll) +
                       " steps a batch (4 or 8 warps, 1 or 2 steps)");
}

template <int kMats, bool kXVec, bool kBlock>
void launch_typed(const GemvArgs& a, unsigned blocks, Fp8GemvConfig cfg, const Launch& launch) {
  if constexpr (kMats == 1) {
    if (a.y_f32) return launch_shaped<kMats, kXVec, kBlock, float>(a, blocks, cfg, launch);
  }
  launch_shaped<kMats, kXVec, kBlock, bf16>(a, blocks, cfg, launch);  // SwiGLU: BF16 out only
}

template <int kMats>
void launch_gemv(const Mat& x, const Fp8Weight& w, const bf16* bias, const Mat& y, Fp8GemvConfig cfg,
                 const Launch& launch) {
  GemvArgs a;
  a.x = static_cast<const bf16*>(x.data);
  a.x_stride = x.stride;
  a.m = static_cast<int>(x.rows);
  a.w = w.data;
  a.mat_rows = w.n / kMats;
  a.k = w.k;
  a.scales = w.scales;
  a.scale_cols = w.scale_cols;
  a.gran = static_cast<int32_t>(w.gran);
  a.dynamic = w.act != Fp8Act::Static;
  a.input_scale = w.input_scale;
  a.bias = bias;
  a.y = y.data;
  a.y_stride = y.stride;
  a.y_f32 = y.dt == Dt::F32;
  const bool x_vec = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && (x.rows == 1 || x.stride % 8 == 0);
  const auto blocks = static_cast<unsigned>((a.mat_rows + kRows - 1) / kRows);
  const bool block = w.gran == Fp8Gran::Block;
  cfg = pick_config(cfg);
  if (x_vec)
    block ? launch_typed<kMats, true, true>(a, blocks, cfg, launch)
          : launch_typed<kMats, true, false>(a, blocks, cfg, launch);
  else
    block ? launch_typed<kMats, false, true>(a, blocks, cfg, launch)
          : launch_typed<kMats, false, false>(a, blocks, cfg, launch);
}

}  // namespace

Fp8GemvConfig fp8_gemv_config(const Fp8Weight& w, bool swiglu, int sms) {
  if (swiglu) return {4, 1};
  // Two steps a batch put twice the weight bytes in flight; block weights keep one (two spill).
  const int unroll = w.gran == Fp8Gran::Block ? 1 : 2;
  const int64_t blocks = (w.n + kRows - 1) / kRows;
  return {blocks > 2 * int64_t{std::max(sms, 1)} ? 4 : 8, unroll};
}

bool fp8_gemv_supported(const Mat& x, const Fp8Weight& w, const Mat& y, bool swiglu) {
  const int64_t rows = swiglu ? w.n / 2 : w.n;
  const bool block = w.gran == Fp8Gran::Block;
  const bool act_ok = block ? w.act == Fp8Act::DynamicGroup : w.act != Fp8Act::DynamicGroup;
  return x.dt == Dt::BF16 && x.rows >= 1 && x.rows <= kFp8GemvMaxRows && x.cols == w.k && y.rows >= x.rows &&
         y.cols == rows && (!swiglu || (w.n % 2 == 0 && y.dt == Dt::BF16)) && w.k > 0 && w.k % 16 == 0 &&
         reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && act_ok &&
         (!block || ((!swiglu || rows % kFp8Block == 0) && w.scale_cols == (w.k + kFp8Block - 1) / kFp8Block));
}

void fp8_gemv(const Mat& x, const Fp8Weight& w, const bf16* bias, Mat y, const Launch& launch, Fp8GemvConfig cfg) {
  if (!fp8_gemv_supported(x, w, y, false)) unsupported_config("fp8_gemv: shape, alignment or scheme not supported");
  launch_gemv<1>(x, w, bias, y, cfg, launch);
}

void fp8_gemv_swiglu(const Mat& x, const Fp8Weight& w, Mat out, const Launch& launch, Fp8GemvConfig cfg) {
  if (!fp8_gemv_supported(x, w, out, true))
    unsupported_config("fp8_gemv_swiglu: shape, alignment or scheme not supported");
  launch_gemv<2>(x, w, nullptr, out, cfg, launch);
}

}  // namespace inferdesk::cuda
