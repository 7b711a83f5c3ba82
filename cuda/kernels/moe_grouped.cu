// Mixture of experts, the grouped path for medium batches (moe.h: moe_experts_grouped): the
// (token, slot) pairs stably sorted by expert on the device (moe_sort_pairs, moe.cu), then one
// kernel for gate/up with the SwiGLU epilogue and one for down, each over a fixed grid of
// (row tile, expert) blocks, then the weighted combine in slot order (moe_combine, moe.cu). No
// host synchronisation and no allocation: the whole path can be captured in a CUDA graph, and the
// grid does not depend on the routing (a replay with other expert ids is served by the same grid).
//
// The expert kernels use the tensor-core trick of gemv.cu: mma.m16n8k16 (BF16 in, F32
// accumulate) with 16 rows of the expert's weight matrix as the A operand and up to 8 of the
// expert's gathered token rows as the 8 B columns. Block (tile, e) reads offsets[e] and
// offsets[e + 1] (device memory, written by the sort), exits at once when the expert received no
// pair, and otherwise walks the expert's pairs in passes of kPassTokens = 32 (four groups of 8):
// each 16-byte chunk of W loaded in a pass feeds the mmas of every active group, so an expert's
// weights are streamed once per 32 of its pairs (once, for every expert of a decode step whose
// pairs per expert stay below 32). Within a pass, the warps of the block split K in interleaved
// steps of 32 (one 16-byte chunk per lane per row and step), keep the next batch of W loads in
// flight while the current one is multiplied, and are reduced through shared memory in a fixed
// order.
//
// Lane (g = lane / 4, t = lane % 4) loads W[row g][k0 + 8t, +8) and W[row g + 8][same] per matrix,
// and for group q the same k's of the token row at sorted position pass + 8q + g; the 8 values of
// a chunk are the logical k's {2t, 2t+1, 2t+8, 2t+9} of two mmas, for A and B alike (gemv.cu).
// Rows past the end of W and pair slots past the expert's count are clamped to valid ones and
// computed; their results are never stored.
//
// Determinism: every output element is one column of an mma chain over the warp's k steps in a
// fixed order, summed over the warps in a fixed order; it does not depend on the other tokens of
// its group or on the scheduling, so the same inputs give the same bits.
//
// Programmatic dependent launch (common.cuh): the blocks call pdl_wait() before their first global
// read. W is immutable, but which experts have pairs is only known from the sort's offsets, and
// prefetching the weights of every expert of the grid would waste bandwidth on unused ones.
#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/mma_stream.cuh"
#include "cuda/kernels/moe.h"

namespace inferdesk::cuda {
namespace {

constexpr int kTileRows = 16;  // W rows per block and matrix (the mma's M)
constexpr int kGroup = 8;      // token rows per mma (its N)
constexpr int kGroups = 4;     // groups per pass: each W chunk feeds up to 4 mmas
constexpr int kPassTokens = kGroup * kGroups;
constexpr int kStepK = 32;  // k per warp step (4 lanes x 8 elements)
constexpr int kWarps = 4;   // warps per block; 128 threads also finish the outputs
// Steps of 32 per batch of W loads: each lane has up to 2 * kMats * U chunks of 16 bytes in
// flight (the next batch is issued before the current one is multiplied). Gate/up streams two
// matrices and keeps 2 * 4 * 4 accumulators, so one step per batch keeps it under 128 registers.
constexpr int kUnrollGateUp = 1;
constexpr int kUnrollDown = 2;

// Token rows (x, or the activations written by the previous kernel): plain loads, cached in L1
// (several blocks of one expert read the same rows).
__device__ __forceinline__ uint4 load_row16(const bf16* p) { return *reinterpret_cast<const uint4*>(p); }

// The W chunks of U steps (kWarps apart) for kMats matrices: rows g (hh 0) and g + 8 (hh 1).
template <int U, int kMats>
struct WBatch {
  uint4 a[U][kMats][2];
};

// wp point at the lane's chunk of the warp's first step; s0 is relative to that step.
template <int U, int kMats>
__device__ __forceinline__ void load_w_batch(WBatch<U, kMats>& w, const bf16* const (&wp)[kMats][2], int64_t s0) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t k = (s0 + static_cast<int64_t>(u) * kWarps) * kStepK;
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) w.a[u][m][hh] = load_w_stream(wp[m][hh] + k);
  }
}

// The mmas of one batch for every active group (groups is uniform over the block, so the
// mma.sync calls are executed by whole warps).
template <int U, int kMats>
__device__ __forceinline__ void mma_batch(float (&c)[kMats][kGroups][4], const WBatch<U, kMats>& w,
                                          const bf16* const (&xp)[kGroups], int64_t s0, int groups) {
#pragma unroll
  for (int q = 0; q < kGroups; ++q) {
    if (q >= groups) break;
    uint4 b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) b[u] = load_row16(xp[q] + (s0 + static_cast<int64_t>(u) * kWarps) * kStepK);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int m = 0; m < kMats; ++m) mma_chunk(c[m][q], w.a[u][m][0], w.a[u][m][1], b[u]);
  }
}

// kGateUp: block (x: 16-row tile of inter, y: expert e): for each pair at sorted position s of e,
// act[s, i] = silu(x_t . gate_e[i]) * (x_t . up_e[i]) (BF16), t = order[s] / top_k.
// Otherwise: block (x: 16-row tile of hidden, y: expert e): y[s, h] = act[s] . down_e[h] (F32).
// <= 128 registers: 4 blocks of 4 warps per SM.
template <bool kGateUp>
__global__ void __launch_bounds__(kWarps * 32, 4)
    moe_grouped_kernel(const bf16* __restrict__ in, int64_t in_stride, const int32_t* __restrict__ order, int32_t top_k,
                       const int32_t* __restrict__ offsets, MoeExpertTable tbl, void* __restrict__ out) {
  constexpr int kMats = kGateUp ? 2 : 1;
  constexpr int U = kGateUp ? kUnrollGateUp : kUnrollDown;
  __shared__ float red[kWarps][kMats * kGroups * 4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int32_t e = blockIdx.y;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  pdl_launch_dependents();
  pdl_wait();
  const int32_t begin = offsets[e], end = offsets[e + 1];
  if (begin >= end) return;  // no pair routed to e (block-uniform)

  const int64_t K = kGateUp ? tbl.hidden : tbl.inter;
  const int64_t rows_out = kGateUp ? tbl.inter : tbl.hidden;
  const int64_t col0 = static_cast<int64_t>(warp) * kStepK + 8 * t;
  const bf16* wp[kMats][2];
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
    const bf16* base = kGateUp ? (m == 0 ? tbl.gate[e] : tbl.up[e]) : tbl.down[e];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) wp[m][hh] = base + min(r0 + g + 8 * hh, rows_out - 1) * K + col0;
  }
  const int64_t steps = (K + kStepK - 1) / kStepK;
  const int64_t full_steps = K / kStepK;  // steps whose 4 chunks all lie inside K
  constexpr int64_t kBatch = static_cast<int64_t>(kWarps) * U;
  const int64_t room = full_steps - warp - static_cast<int64_t>(U - 1) * kWarps;
  const int64_t batches = room > 0 ? (room + kBatch - 1) / kBatch : 0;

  for (int32_t pass = begin; pass < end; pass += kPassTokens) {
    const int n = min(end - pass, kPassTokens);
    const int groups = (n + kGroup - 1) / kGroup;
    // This lane's token row of each group (its B column g), clamped to the expert's last pair.
    const bf16* xp[kGroups];
#pragma unroll
    for (int q = 0; q < kGroups; ++q) {
      const int32_t s = min(pass + q * kGroup + g, end - 1);
      const int64_t row = kGateUp ? static_cast<int64_t>(order[s] / top_k) : s;
      xp[q] = in + row * in_stride + col0;
    }
    float c[kMats][kGroups][4];
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int q = 0; q < kGroups; ++q) c[m][q][0] = c[m][q][1] = c[m][q][2] = c[m][q][3] = 0.0f;

    // Full batches, software-pipelined: batch j + 1's W loads are issued before batch j's mmas.
    WBatch<U, kMats> p, nx;
    if (batches > 0) load_w_batch(p, wp, 0);
    for (int64_t j = 0; j < batches; j += 2) {
      if (j + 1 < batches) load_w_batch(nx, wp, (j + 1) * kBatch);
      mma_batch(c, p, xp, j * kBatch, groups);
      if (j + 1 >= batches) break;
      if (j + 2 < batches) load_w_batch(p, wp, (j + 2) * kBatch);
      mma_batch(c, nx, xp, (j + 1) * kBatch, groups);
    }
    // Tail: the warp's last steps one at a time; a chunk past K (K % 32 != 0) contributes zeros.
    for (int64_t s0 = warp + batches * kBatch; s0 < steps; s0 += kWarps) {
      const int64_t krel = (s0 - warp) * kStepK;
      const bool in_k = col0 + krel < K;  // K % 8 == 0: a chunk is whole or absent
      const uint4 zero = make_uint4(0, 0, 0, 0);
      uint4 a[kMats][2];
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) a[m][hh] = in_k ? load_w_stream(wp[m][hh] + krel) : zero;
#pragma unroll
      for (int q = 0; q < kGroups; ++q) {
        if (q >= groups) break;
        const uint4 b = in_k ? load_row16(xp[q] + krel) : zero;
#pragma unroll
        for (int m = 0; m < kMats; ++m) mma_chunk(c[m][q], a[m][0], a[m][1], b);
      }
    }

#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int q = 0; q < kGroups; ++q)
#pragma unroll
        for (int i = 0; i < 4; ++i) red[warp][(m * kGroups + q) * 4 + i][lane] = c[m][q][i];
    __syncthreads();
    // Entry (q, i, l) of the accumulators: C row (l / 4) + 8 (i >= 2) = output row, C column
    // 2 (l % 4) + (i & 1) = token 8q + that of the pass. 128 threads, 4 entries each.
#pragma unroll
    for (int rep = 0; rep < kGroups * 4 * 32 / (kWarps * 32); ++rep) {
      const int idx = rep * kWarps * 32 + static_cast<int>(threadIdx.x);
      const int q = idx >> 7, i = (idx >> 5) & 3, l = idx & 31;
      const int64_t row = r0 + (l >> 2) + (i >= 2 ? 8 : 0);
      const int tok = q * kGroup + 2 * (l & 3) + (i & 1);
      if (row >= rows_out || tok >= n) continue;
      float acc[kMats];
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        float sum = 0.0f;
#pragma unroll
        for (int wi = 0; wi < kWarps; ++wi) sum += red[wi][(m * kGroups + q) * 4 + i][l];
        acc[m] = sum;
      }
      const int64_t o = static_cast<int64_t>(pass + tok) * rows_out + row;
      if constexpr (kGateUp)
        static_cast<bf16*>(out)[o] = __float2bfloat16(silu(acc[0]) * acc[1]);
      else
        static_cast<float*>(out)[o] = acc[0];
    }
    __syncthreads();  // red is rewritten by the next pass
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void moe_experts_grouped(const MoeGroupedArgs& a, const Launch& launch) {
  const int64_t T = a.x.rows, H = a.experts.hidden, I = a.experts.inter;
  const int32_t E = a.experts.num_experts;
  if (a.x.dt != Dt::BF16) unsupported_config("moe_experts_grouped: x must be BF16");
  if (!moe_small_supported(H, I) || a.x.cols != H || a.out.cols != H || a.out.rows < T || !aligned16(a.x.data) ||
      (T > 1 && a.x.stride % 8 != 0) || !aligned16(a.act) || !aligned16(a.y))
    unsupported_config("moe_experts_grouped: hidden " + std::to_string(H) + ", inter " + std::to_string(I) +
                       " or x/act/y alignment not supported");
  if (E <= 0 || E > 65535 || a.top_k <= 0)
    unsupported_config("moe_experts_grouped: " + std::to_string(a.top_k) + " of " + std::to_string(E) + " experts");
  if (T <= 0) return;
  const int64_t pairs = T * a.top_k;
  if (pairs > a.max_pairs)
    unsupported_config("moe_experts_grouped: " + std::to_string(pairs) + " pairs, the scratch holds " +
                       std::to_string(a.max_pairs));
  moe_sort_pairs(a.ids, a.ids_stride, static_cast<int32_t>(T), a.top_k, E, a.counts, a.offsets, a.order, a.position,
                 launch);
  const auto gu_tiles = static_cast<unsigned>((I + kTileRows - 1) / kTileRows);
  const auto down_tiles = static_cast<unsigned>((H + kTileRows - 1) / kTileRows);
  const auto ey = static_cast<unsigned>(E);
  launch_kernel("moe_grouped_gate_up", moe_grouped_kernel<true>, dim3(gu_tiles, ey), dim3(kWarps * 32), 0, launch,
                static_cast<const bf16*>(a.x.data), a.x.stride, a.order, a.top_k, a.offsets, a.experts,
                static_cast<void*>(a.act));
  launch_kernel("moe_grouped_down", moe_grouped_kernel<false>, dim3(down_tiles, ey), dim3(kWarps * 32), 0, launch,
                static_cast<const bf16*>(a.act), I, a.order, a.top_k, a.offsets, a.experts, static_cast<void*>(a.y));
  moe_combine(moe_combine_args(a, a.y, a.position), launch);
}

}  // namespace inferdesk::cuda
