// FP8 experts, the small-batch path (moe_fp8.h: moe_fp8_experts_small), for decode steps of at
// most 8 tokens: the layout of fp8_gemv.cu (E4M3 mma.m16n8k32, 16 weight rows as the A operand,
// the tokens as the 8 B columns, warp steps of 128 k taken by the 8 warps in turn and reduced
// through shared memory), with the expert indirection:
// - Block (16-row tile, pair p): p's expert e. When an earlier pair also chose e the block exits,
//   otherwise it multiplies e with every token that chose it (column g = token g; a token without
//   e gives an unused column), so a chosen expert's weights are read once per step whatever the
//   number of its tokens (one block per tile and expert does work).
// - The activations are quantized in registers: per token (the amax of each used column's row over
//   the whole K, in a pre-pass over rows that are small and in L2), or per 128-k group for block
//   weights (a step is one group: the four lanes of a token hold its 128 values).
// - Gate/up: both matrices per block, the epilogue writes silu(gate) * up in F32 (the CPU's
//   rounding point); down reads those F32 rows. A token routed twice to e gets both slots written.
// Programmatic dependent launch: which expert a block reads is only known from the routing kernel's
// ids, so nothing is loaded before pdl_wait().
#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/fp8_common.cuh"
#include "cuda/kernels/moe_fp8.cuh"
#include "cuda/kernels/moe_fp8.h"

namespace inferdesk::cuda {
namespace {

constexpr int kRows = 16;    // output rows per block and matrix
constexpr int kStepK = 128;  // k per warp step
constexpr int kWarps = 8;
constexpr int kCols = kMoeSmallMaxTokens;  // the MMA's 8 columns: one per token
static_assert(kCols == 8, "one MMA column per token");

struct SmallK {
  const void* in;  // gate/up: x [T, H] BF16; down: act [pairs, I] F32
  int64_t in_stride;
  bool in_by_pair;  // the input row of a column is its pair's (down) or its token's (gate/up)
  const int32_t* ids;
  int64_t ids_stride;
  int32_t top_k, tokens;
  MoeFp8Table tbl;
  int32_t mat0;  // first matrix: 0 (gate, up) or 2 (down)
  int64_t rows, k, scale_cols;
  float* out;  // [pairs, rows]
};

template <int kMats>
struct Step {
  uint4 a[kMats][2][2];  // [matrix][row g / g + 8][k half]
  float x[2][16];        // [k half][16 values]
  float sw[kMats];       // block weights: the step's scale per matrix
};

__device__ __forceinline__ int32_t pair_id(const SmallK& a, int64_t p) {
  return a.ids[(p / a.top_k) * a.ids_stride + p % a.top_k];
}

// kLimit: the step may reach past K (chunks past it load as zeros; K % 16 == 0).
template <int kMats, bool kBlock, bool kLimit, typename TX>
__device__ __forceinline__ void load_step(Step<kMats>& s, const uint8_t* const (&wp)[kMats][2], const TX* xp,
                                          const float* const (&sp)[kMats], const SmallK& a, int64_t step, int64_t col0,
                                          int64_t sw_row) {
  const int64_t k0 = step * kStepK;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool in = !kLimit || col0 + k0 + 64 * h < a.k;
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int r = 0; r < 2; ++r) s.a[m][r][h] = in ? load_fp8_stream(wp[m][r] + k0 + 64 * h) : make_uint4(0, 0, 0, 0);
    if (in) {
      load16(xp + k0 + 64 * h, s.x[h]);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) s.x[h][i] = 0.0f;
    }
  }
  if constexpr (kBlock) {
#pragma unroll
    for (int m = 0; m < kMats; ++m) s.sw[m] = __ldg(sp[m] + sw_row * a.scale_cols + step);
  }
}

// The step's MMAs into c. inv: 1 / s_x of the lane's token (per-token scales).
template <int kMats, bool kBlock>
__device__ __forceinline__ void consume(float (&c)[kMats][4], const Step<kMats>& s, float inv, int t) {
  if constexpr (kBlock) {
    float amax = fmaxf(amax16(s.x[0]), amax16(s.x[1]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float sg = fp8_dynamic_scale(amax);  // the group's scale for token g
    inv = 1.0f / sg;
    // This lane's C columns are tokens 2t and 2t + 1, whose scales lanes 8t and 8t + 4 hold.
    const float s0 = __shfl_sync(0xffffffffu, sg, 8 * t), s1 = __shfl_sync(0xffffffffu, sg, 8 * t + 4);
    const uint4 b0 = quant16(s.x[0], inv), b1 = quant16(s.x[1], inv);
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
      float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      mma_e4m3_chunk(p, s.a[m][0][0], s.a[m][1][0], b0);
      mma_e4m3_chunk(p, s.a[m][0][1], s.a[m][1][1], b1);
      const float f0 = s0 * s.sw[m], f1 = s1 * s.sw[m];
      c[m][0] += p[0] * f0;
      c[m][1] += p[1] * f1;
      c[m][2] += p[2] * f0;
      c[m][3] += p[3] * f1;
    }
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 b = quant16(s.x[h], inv);
#pragma unroll
      for (int m = 0; m < kMats; ++m) mma_e4m3_chunk(c[m], s.a[m][0][h], s.a[m][1][h], b);
    }
  }
}

// Per-token scales of the used columns (s_row[c] >= 0): the amax of each row over K.
template <typename TX>
__device__ void token_scales(const SmallK& a, const int32_t* s_row, float (&red)[kWarps][kCols], float* s_x,
                             float* s_inv) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const TX* in = static_cast<const TX*>(a.in);
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    if (s_row[c] < 0) continue;  // block-uniform
    float mx = row_amax_part(in + s_row[c] * a.in_stride, a.k, static_cast<int>(threadIdx.x), kWarps * 32);
    mx = warp_max(mx);
    if (lane == 0) red[warp][c] = mx;
  }
  __syncthreads();
  if (threadIdx.x < kCols) {
    float mx = 0.0f;
    if (s_row[threadIdx.x] >= 0)
      for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, red[w][threadIdx.x]);
    const float s = fp8_dynamic_scale(mx);
    s_x[threadIdx.x] = s;
    s_inv[threadIdx.x] = 1.0f / s;
  }
  __syncthreads();
}

// Thread j < 128 finishes accumulator entry i = j / 32 of lane l = j % 32 (C row g or g + 8,
// C column 2 (l % 4) + (i & 1)) and stores it for every slot of that token that chose e.
template <int kMats, bool kBlock>
__device__ __forceinline__ void finish(const SmallK& a, const float (&red)[kWarps][kMats * 4][32], const float* s_x,
                                       const int32_t* s_row, const float* const (&sp)[kMats], int32_t e, int64_t r0) {
  if (threadIdx.x >= 128) return;
  const int i = threadIdx.x >> 5, l = threadIdx.x & 31;
  const int64_t row = r0 + (l >> 2) + (i >= 2 ? 8 : 0);
  const int tok = 2 * (l & 3) + (i & 1);
  if (row >= a.rows || s_row[tok] < 0) return;
  float v[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += red[w][m * 4 + i][l];
    if constexpr (!kBlock) sum *= s_x[tok] * row_scale(sp[m], a.tbl.per_row[a.mat0 + m], row);
    v[m] = sum;
  }
  const float out = kMats == 2 ? silu(v[0]) * v[kMats - 1] : v[0];
  for (int32_t j = 0; j < a.top_k; ++j)
    if (a.ids[tok * a.ids_stride + j] == e) a.out[(int64_t{tok} * a.top_k + j) * a.rows + row] = out;
}

template <int kMats, bool kBlock, typename TX>
__global__ void __launch_bounds__(kWarps * 32) moe_fp8_small_kernel(const SmallK a) {
  __shared__ float red[kWarps][kMats * 4][32];
  __shared__ float red_max[kWarps][kCols];
  __shared__ float s_x[kCols], s_inv[kCols];
  __shared__ int32_t s_row[kCols];  // the input row of column (token) c; -1: unused column
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int64_t p = blockIdx.y, r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  pdl_launch_dependents();
  pdl_wait();
  const int32_t E = a.tbl.num_experts, e = pair_id(a, p);
  bool earlier = false;
  for (int64_t q = threadIdx.x; q < p; q += blockDim.x) earlier = earlier || pair_id(a, q) == e;
  if (__syncthreads_or(earlier) || e < 0 || e >= E) return;  // (block-uniform)
  if (threadIdx.x < kCols) {
    int32_t row = -1;
    const int32_t tok = static_cast<int32_t>(threadIdx.x);
    for (int32_t j = 0; tok < a.tokens && j < a.top_k && row < 0; ++j)
      if (a.ids[tok * a.ids_stride + j] == e) row = a.in_by_pair ? tok * a.top_k + j : tok;
    s_row[tok] = row;
  }
  __syncthreads();

  const int64_t steps = (a.k + kStepK - 1) / kStepK, full = a.k / kStepK;
  const int64_t col0 = 16 * t;
  const uint8_t* wp[kMats][2];
  const float* sp[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
    const uint8_t* base = a.tbl.w[(a.mat0 + m) * E + e];
    sp[m] = a.tbl.s[(a.mat0 + m) * E + e];
    // Rows past the end and unused columns are clamped to valid ones and computed anyway (their
    // results are never stored), so the main loop has no predicates.
#pragma unroll
    for (int r = 0; r < 2; ++r) wp[m][r] = base + min(r0 + g + 8 * r, a.rows - 1) * a.k + col0;
  }
  const int64_t sw_row = r0 / kFp8Block;   // block weights: 16 | 128
  const int32_t own = s_row[p / a.top_k];  // the block's own token uses e
  const TX* xp = static_cast<const TX*>(a.in) + (s_row[g] >= 0 ? s_row[g] : own) * a.in_stride + col0;
  float inv = 1.0f;
  if constexpr (!kBlock) {
    token_scales<TX>(a, s_row, red_max, s_x, s_inv);
    inv = s_inv[g];
  }
  float c[kMats][4];
#pragma unroll
  for (int m = 0; m < kMats; ++m) c[m][0] = c[m][1] = c[m][2] = c[m][3] = 0.0f;

  // This warp's whole steps: warp, warp + kWarps, ... below `full`, two in flight.
  const int64_t n = full > warp ? (full - warp + kWarps - 1) / kWarps : 0;
  Step<kMats> s0, s1;
  if (n > 0) load_step<kMats, kBlock, false>(s0, wp, xp, sp, a, warp, col0, sw_row);
  for (int64_t j = 0; j < n; j += 2) {
    const int64_t st = warp + j * kWarps;
    if (j + 1 < n) load_step<kMats, kBlock, false>(s1, wp, xp, sp, a, st + kWarps, col0, sw_row);
    consume<kMats, kBlock>(c, s0, inv, t);
    if (j + 1 >= n) break;
    if (j + 2 < n) load_step<kMats, kBlock, false>(s0, wp, xp, sp, a, st + 2 * kWarps, col0, sw_row);
    consume<kMats, kBlock>(c, s1, inv, t);
  }
  // The partial last step (K % 128 != 0), on the warp whose turn it is.
  if (full < steps && full % kWarps == warp) {
    load_step<kMats, kBlock, true>(s0, wp, xp, sp, a, full, col0, sw_row);
    consume<kMats, kBlock>(c, s0, inv, t);
  }
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[warp][m * 4 + i][lane] = c[m][i];
  __syncthreads();
  finish<kMats, kBlock>(a, red, s_x, s_row, sp, e, r0);
}

template <int kMats, typename TX>
void launch_small(const SmallK& k, unsigned pairs, const Launch& launch) {
  const dim3 grid(static_cast<unsigned>((k.rows + kRows - 1) / kRows), pairs);
  launch_kernel(kMats == 2 ? "moe_fp8_gate_up" : "moe_fp8_down",
                k.tbl.block ? moe_fp8_small_kernel<kMats, true, TX> : moe_fp8_small_kernel<kMats, false, TX>, grid,
                dim3(kWarps * 32), 0, launch, k);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool moe_fp8_kernels_supported(int64_t hidden, int64_t inter) {
  return hidden > 0 && inter > 0 && hidden % 16 == 0 && inter % 16 == 0;
}

void moe_fp8_experts_small(const MoeFp8SmallArgs& a, const Launch& launch) {
  const int64_t T = a.x.rows, H = a.fp8.hidden, I = a.fp8.inter;
  if (a.x.dt != Dt::BF16 || T > kMoeSmallMaxTokens || !moe_fp8_kernels_supported(H, I) || a.x.cols != H ||
      a.out.cols != H || !aligned16(a.x.data) || (T > 1 && a.x.stride % 8 != 0) || !aligned16(a.act) ||
      !aligned16(a.slot_out))
    unsupported_config("moe_fp8_experts_small: " + std::to_string(T) + " tokens, hidden " + std::to_string(H) +
                       ", inter " + std::to_string(I) + " or x/act alignment not supported");
  if (T <= 0) return;
  const int64_t pairs = T * a.top_k;
  if (a.top_k <= 0 || pairs > 65535) unsupported_config("moe_fp8_experts_small: top_k " + std::to_string(a.top_k));
  SmallK k{};
  k.ids = a.ids;
  k.ids_stride = a.ids_stride;
  k.top_k = a.top_k;
  k.tokens = static_cast<int32_t>(T);
  k.tbl = a.fp8;
  // gate/up: x by token -> act [pairs, I]
  k.in = a.x.data;
  k.in_stride = a.x.stride;
  k.in_by_pair = false;
  k.mat0 = 0;
  k.rows = I;
  k.k = H;
  k.scale_cols = (H + kFp8Block - 1) / kFp8Block;
  k.out = a.act;
  launch_small<2, bf16>(k, static_cast<unsigned>(pairs), launch);
  // down: act by pair -> slot_out [pairs, H]
  k.in = a.act;
  k.in_stride = I;
  k.in_by_pair = true;
  k.mat0 = 2;
  k.rows = H;
  k.k = I;
  k.scale_cols = (I + kFp8Block - 1) / kFp8Block;
  k.out = a.slot_out;
  launch_small<1, float>(k, static_cast<unsigned>(pairs), launch);
  moe_combine(moe_combine_args(a, a.slot_out, nullptr), launch);
}

}  // namespace inferdesk::cuda
