// Mixture-of-experts kernels: routing (softmax, top-k, renormalise), the small-batch expert path
// (one GEMV per (token, slot) pair, 16-byte weight loads), the stable sort of pairs by expert and
// the gather of the large-batch path, the weighted combine of the slots, and the shared expert's
// sigmoid gate. The contract (shapes, determinism, what is counted) is in moe.h.
//
// Determinism: every floating-point sum here has a fixed order (block reductions over a fixed
// block size, the slots of a token summed in slot order), and the sort and the expert counters
// use integer work only, so the same inputs give the same bits whatever the scheduling.
//
// Programmatic dependent launch (common.cuh): every kernel lets its successor be scheduled at once
// and calls pdl_wait() before its first global read. Nothing useful can be read earlier: which
// expert's weights a pair needs is only known from the ids the routing kernel wrote.
#include <algorithm>
#include <cmath>
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

constexpr unsigned kFull = 0xffffffffu;

// ------------------------------------------------------------------------ block reductions

// Result in every thread. `red` holds one entry per warp; blockDim.x is a multiple of 32.
template <typename T, class Op>
__device__ __forceinline__ T block_reduce(T v, T* red, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
  if (lane == 0) red[warp] = v;
  __syncthreads();
  T r = red[0];
  for (int w = 1; w < warps; ++w) r = op(r, red[w]);
  __syncthreads();  // red may be reused right away
  return r;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

// ------------------------------------------------------------------------------- routing

constexpr int kRouteThreads = 128;
constexpr int kRouteWarps = kRouteThreads / 32;
constexpr int32_t kRouteMaxExperts = 8192;  // probabilities live in shared memory

// Larger probability first; equal probabilities: lower id first (CpuBackend::moe_route's order).
// A NaN is never better than anything, so a NaN-marked (already chosen) expert is never picked.
__device__ __forceinline__ bool better(float va, int32_t ia, float vb, int32_t ib) {
  return va > vb || (va == vb && ia < ib);
}

// The lowest expert id not among the first j chosen ones (the selection's fallback).
__device__ __forceinline__ int32_t lowest_unchosen(const int32_t* id_row, int32_t j, int32_t E) {
  for (int32_t c = 0; c < E; ++c) {
    bool taken = false;
    for (int32_t q = 0; q < j; ++q) taken = taken || id_row[q] == c;
    if (!taken) return c;
  }
  return E;
}

// One block per token.
__global__ void __launch_bounds__(kRouteThreads)
    moe_route_kernel(const float* __restrict__ logits, int64_t logits_stride, int32_t E, int32_t top_k, bool normalize,
                     int32_t* __restrict__ ids, int64_t ids_stride, float* __restrict__ weights,
                     int64_t weights_stride) {
  extern __shared__ float prob[];  // [E]
  __shared__ float red_f[kRouteWarps];
  __shared__ int32_t red_i[kRouteWarps];
  const int64_t t = blockIdx.x;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  pdl_launch_dependents();
  pdl_wait();
  const float* l = logits + t * logits_stride;
  // Softmax as the CPU computes it: max over the non-NaN logits, exp(l - max) (0 for NaN), / sum.
  float mx = -INFINITY;
  for (int32_t e = tid; e < E; e += kRouteThreads) {
    const float v = l[e];
    prob[e] = v;
    mx = fmaxf(mx, v);  // fmaxf ignores a NaN operand, as std::max(mx, NaN) does here
  }
  mx = block_reduce(mx, red_f, MaxOp{});
  float sum = 0.0f;
  for (int32_t e = tid; e < E; e += kRouteThreads) {
    const float v = prob[e];
    const float p = isnan(v) ? 0.0f : expf(v - mx);
    prob[e] = p;
    sum += p;
  }
  sum = block_reduce(sum, red_f, SumOp{});
  for (int32_t e = tid; e < E; e += kRouteThreads) prob[e] = sum > 0.0f ? prob[e] / sum : 0.0f;
  __syncthreads();

  int32_t* id_row = ids + t * ids_stride;
  float* w_row = weights + t * weights_stride;
  for (int32_t j = 0; j < top_k; ++j) {
    float bv = -INFINITY;
    int32_t bi = E;  // none
    for (int32_t e = tid; e < E; e += kRouteThreads) {
      const float p = prob[e];
      if (better(p, e, bv, bi)) bv = p, bi = e;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(kFull, bv, o);
      const int32_t oi = __shfl_xor_sync(kFull, bi, o);
      if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    if (lane == 0) red_f[warp] = bv, red_i[warp] = bi;
    __syncthreads();
    if (tid == 0) {
      bv = red_f[0];
      bi = red_i[0];
      for (int w = 1; w < kRouteWarps; ++w)
        if (better(red_f[w], red_i[w], bv, bi)) bv = red_f[w], bi = red_i[w];
      if (bi >= E) {
        // Only when probabilities are NaN (an infinite logit): the lowest id not chosen yet.
        bv = 0.0f;
        bi = lowest_unchosen(id_row, j, E);
      }
      id_row[j] = bi;
      w_row[j] = bv;
      prob[bi] = NAN;  // never chosen again
    }
    __syncthreads();
  }
  if (tid == 0) {
    // Renormalise as the CPU does: the chosen probabilities summed in slot order.
    float chosen = 0.0f;
    for (int32_t j = 0; j < top_k; ++j) chosen += w_row[j];
    if (normalize)
      for (int32_t j = 0; j < top_k; ++j) w_row[j] = w_row[j] / chosen;
  }
}

// The same routing with one warp per token for up to kRouteWarpMaxExperts experts, the
// probabilities in registers (lane l holds experts l, l + 32, ...): no shared memory and no block
// barriers in the k selection rounds (where the block kernel above spends most of its time: 2
// barriers per round, docs/PERF.md). Same results: the softmax sum is
// a warp reduction instead of a block one (its order may differ by an ulp), the selection order
// (larger first, then lower id) and the slot-order renormalisation are the same.
constexpr int kRouteWarpPerLane = 8;
constexpr int32_t kRouteWarpMaxExperts = 32 * kRouteWarpPerLane;
constexpr int kRouteWarpTokensPerBlock = 4;

__global__ void __launch_bounds__(32 * kRouteWarpTokensPerBlock)
    moe_route_warp_kernel(const float* __restrict__ logits, int64_t logits_stride, int32_t tokens, int32_t E,
                          int32_t top_k, bool normalize, int32_t* __restrict__ ids, int64_t ids_stride,
                          float* __restrict__ weights, int64_t weights_stride) {
  const int lane = threadIdx.x & 31;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kRouteWarpTokensPerBlock + (threadIdx.x >> 5);
  pdl_launch_dependents();
  pdl_wait();
  if (t >= tokens) return;  // warp-uniform
  const float* l = logits + t * logits_stride;
  float prob[kRouteWarpPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kRouteWarpPerLane; ++i) {
    const int32_t e = lane + 32 * i;
    prob[i] = e < E ? l[e] : NAN;
    mx = fmaxf(mx, prob[i]);  // ignores NaN, as the block kernel
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, o));
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kRouteWarpPerLane; ++i) {
    prob[i] = isnan(prob[i]) ? 0.0f : expf(prob[i] - mx);
    sum += prob[i];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFull, sum, o);
  unsigned taken = 0;  // bit i: expert lane + 32 i chosen (or past E)
#pragma unroll
  for (int i = 0; i < kRouteWarpPerLane; ++i) {
    prob[i] = sum > 0.0f ? prob[i] / sum : 0.0f;
    if (lane + 32 * i >= E) taken |= 1u << i;
  }
  int32_t* id_row = ids + t * ids_stride;
  float* w_row = weights + t * weights_stride;
  float chosen = 0.0f;
  for (int32_t j = 0; j < top_k; ++j) {
    float bv = -INFINITY;
    int32_t bi = E;  // none
#pragma unroll
    for (int i = 0; i < kRouteWarpPerLane; ++i)
      if (!(taken >> i & 1u) && better(prob[i], lane + 32 * i, bv, bi)) bv = prob[i], bi = lane + 32 * i;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(kFull, bv, o);
      const int32_t oi = __shfl_xor_sync(kFull, bi, o);
      if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    if (bi >= E) {  // cannot happen while j < top_k <= E; kept total: the lowest id not chosen
      bv = 0.0f;
      bi = lowest_unchosen(id_row, j, E);
    }
    if ((bi & 31) == lane) taken |= 1u << (bi >> 5);
    chosen += bv;  // slot order, as the CPU
    if (lane == 0) id_row[j] = bi, w_row[j] = bv;
    __syncwarp();
  }
  if (normalize && lane == 0)
    for (int32_t j = 0; j < top_k; ++j) w_row[j] = w_row[j] / chosen;
}

// ------------------------------------------------------------------- small-batch experts

constexpr int kSmallWarps = 8;
constexpr int kGateUpRowsPerWarp = 2;  // gate and up rows i, i + 1: four dot products per warp
constexpr int kDownRowsPerWarp = 4;
constexpr int kUnrollGateUp = 2;  // 256-element steps per batch of loads (4 W chunks each)
constexpr int kUnrollDown = 4;
constexpr int kStep = 32 * 8;  // elements a warp covers with one 16-byte load per lane

// Expert weights are streamed (load_w_stream, mma_stream.cuh): each row is read once.

// acc + the dot product of 8 BF16 weights and 8 BF16 activations, in F32.
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  const auto* wp = reinterpret_cast<const __nv_bfloat162*>(&w);
  const auto* xp = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(wp[i]);
    const float2 b = __bfloat1622float2(xp[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
  return acc;
}

// kDots dot products of length K (K % 8 == 0) of the rows w[d] with the one vector x, per lane;
// the caller sums the lanes. Lane l covers elements [8l, 8l + 8) of every 256-element step; a
// batch issues the loads of kU steps (kU * kDots weight chunks) before using any of them.
template <int kDots, int kU>
__device__ __forceinline__ void warp_dots(const bf16* const (&w)[kDots], const bf16* x, int64_t K, int lane,
                                          float (&acc)[kDots]) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int64_t base = static_cast<int64_t>(lane) * 8; base < K; base += int64_t{kStep} * kU) {
    uint4 wv[kU][kDots], xv[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t c = base + static_cast<int64_t>(u) * kStep;
      const bool in = c < K;
#pragma unroll
      for (int d = 0; d < kDots; ++d) wv[u][d] = in ? load_w_stream(w[d] + c) : zero;
      xv[u] = in ? *reinterpret_cast<const uint4*>(x + c) : zero;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int d = 0; d < kDots; ++d) acc[d] = dot8(wv[u][d], xv[u], acc[d]);
  }
#pragma unroll
  for (int d = 0; d < kDots; ++d) acc[d] = warp_sum(acc[d]);
}

__device__ __forceinline__ int32_t pair_expert(const int32_t* ids, int64_t ids_stride, int32_t top_k, int64_t p) {
  return ids[(p / top_k) * ids_stride + p % top_k];
}

// Block (x: 16-row tile of inter, y: pair p): act[p, i] = silu(x_t . gate_e[i]) * (x_t . up_e[i]).
__global__ void __launch_bounds__(kSmallWarps * 32)
    moe_gate_up_kernel(const bf16* __restrict__ x, int64_t x_stride, const int32_t* __restrict__ ids,
                       int64_t ids_stride, int32_t top_k, MoeExpertTable tbl, bf16* __restrict__ act) {
  constexpr int R = kGateUpRowsPerWarp;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t p = blockIdx.y;
  const int64_t i0 = (static_cast<int64_t>(blockIdx.x) * kSmallWarps + warp) * R;
  pdl_launch_dependents();
  pdl_wait();
  const int32_t e = pair_expert(ids, ids_stride, top_k, p);
  const int64_t I = tbl.inter, H = tbl.hidden;
  if (e < 0 || e >= tbl.num_experts || i0 >= I) return;  // (warp-uniform)
  const bf16* g = tbl.gate[e];
  const bf16* u = tbl.up[e];
  const bf16* w[2 * R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = min(i0 + r, I - 1);  // a row past the end is computed and dropped
    w[2 * r] = g + row * H;
    w[2 * r + 1] = u + row * H;
  }
  float acc[2 * R] = {};
  warp_dots<2 * R, kUnrollGateUp>(w, x + (p / top_k) * x_stride, H, lane, acc);
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (i0 + r >= I) break;
    const float gv = acc[2 * r];
    act[p * I + i0 + r] = __float2bfloat16(silu(gv) * acc[2 * r + 1]);
  }
}

// Block (x: 32-row tile of hidden, y: pair p): slot_out[p, h] = act[p] . down_e[h].
__global__ void __launch_bounds__(kSmallWarps * 32)
    moe_down_kernel(const bf16* __restrict__ act, const int32_t* __restrict__ ids, int64_t ids_stride, int32_t top_k,
                    MoeExpertTable tbl, float* __restrict__ slot_out) {
  constexpr int R = kDownRowsPerWarp;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t p = blockIdx.y;
  const int64_t h0 = (static_cast<int64_t>(blockIdx.x) * kSmallWarps + warp) * R;
  pdl_launch_dependents();
  pdl_wait();
  const int32_t e = pair_expert(ids, ids_stride, top_k, p);
  const int64_t I = tbl.inter, H = tbl.hidden;
  if (e < 0 || e >= tbl.num_experts || h0 >= H) return;
  const bf16* d = tbl.down[e];
  const bf16* w[R];
#pragma unroll
  for (int r = 0; r < R; ++r) w[r] = d + min(h0 + r, H - 1) * I;
  float acc[R] = {};
  warp_dots<R, kUnrollDown>(w, act + p * I, I, lane, acc);
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < R; ++r)
    if (h0 + r < H) slot_out[p * H + h0 + r] = acc[r];
}

// ------------------------------------------------------------------------------- combine

constexpr int kCombineThreads = 256;
constexpr int kCombineSlots = 32;  // slots whose row and weight are staged in shared memory at once

// Block (t, c): out[t, h] for the kCombineThreads columns h of chunk c, the slots summed in slot
// order (deterministic, as the CPU). Each slot's source row and weight are read once per block
// into shared memory, so a column's loads of y are independent of each other (a batch-1 step
// would otherwise chain two dependent global loads per slot and column: docs/PERF.md).
__global__ void __launch_bounds__(kCombineThreads) moe_combine_kernel(MoeCombineArgs a) {
  __shared__ int64_t s_row[kCombineSlots];  // -1: slot without a valid expert
  __shared__ float s_w[kCombineSlots];
  const int64_t t = blockIdx.x;
  const int64_t H = a.out.cols;
  const int64_t h = static_cast<int64_t>(blockIdx.y) * kCombineThreads + threadIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  const int32_t* id_row = a.ids + t * a.ids_stride;
  const float* w_row = a.weights + t * a.weights_stride;
  float acc = 0.0f;
  for (int32_t j0 = 0; j0 < a.top_k; j0 += kCombineSlots) {
    const int32_t n = min(kCombineSlots, a.top_k - j0);
    if (threadIdx.x < n) {
      const int32_t j = j0 + static_cast<int32_t>(threadIdx.x);
      const int32_t e = id_row[j];
      const int64_t p = t * a.top_k + j;
      const bool valid = e >= 0 && e < a.num_experts;
      s_row[threadIdx.x] = valid ? (a.position ? a.position[p] : p) : -1;
      s_w[threadIdx.x] = valid ? w_row[j] : 0.0f;
    }
    __syncthreads();
    if (h < H) {
#pragma unroll 8
      for (int32_t j = 0; j < n; ++j)
        if (s_row[j] >= 0) acc = fmaf(s_w[j], a.y[s_row[j] * H + h], acc);
    }
    __syncthreads();  // the slots are rewritten by the next chunk
  }
  if (h < H) store_from_float(a.out.data, a.out.dt, t * a.out.stride + h, acc);
  if (blockIdx.y == 0 && a.counters && (!a.row_slots || a.row_slots[t] >= 0)) {
    for (int32_t j = threadIdx.x; j < a.top_k; j += kCombineThreads) {
      const int32_t e = id_row[j];
      if (e >= 0 && e < a.num_experts) atomicAdd(a.counters + e, 1ull);
    }
  }
}

// --------------------------------------------------------------------- large-batch helpers

constexpr int kSortThreads = 256;

// Block e: counts[e] = pairs routed to e.
__global__ void __launch_bounds__(kSortThreads)
    moe_count_kernel(const int32_t* __restrict__ ids, int64_t ids_stride, int32_t top_k, int64_t pairs,
                     int32_t* __restrict__ counts) {
  __shared__ int32_t red[kSortThreads / 32];
  const int32_t e = blockIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  int32_t c = 0;
  for (int64_t p = threadIdx.x; p < pairs; p += kSortThreads) c += pair_expert(ids, ids_stride, top_k, p) == e;
  c = block_reduce(c, red, SumOp{});
  if (threadIdx.x == 0) counts[e] = c;
}

// Block e: its offset (the counts of lower experts), then its pairs placed in pair order.
__global__ void __launch_bounds__(kSortThreads)
    moe_place_kernel(const int32_t* __restrict__ ids, int64_t ids_stride, int32_t top_k, int64_t pairs,
                     int32_t num_experts, const int32_t* __restrict__ counts, int32_t* __restrict__ offsets,
                     int32_t* __restrict__ order, int32_t* __restrict__ position) {
  __shared__ int32_t red[kSortThreads / 32];
  __shared__ int32_t warp_count[kSortThreads / 32];
  const int32_t e = blockIdx.x;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  pdl_launch_dependents();
  pdl_wait();
  int32_t below = 0;
  for (int32_t q = tid; q < e; q += kSortThreads) below += counts[q];
  const int32_t offset = block_reduce(below, red, SumOp{});
  if (tid == 0) {
    offsets[e] = offset;
    if (e == num_experts - 1) offsets[num_experts] = offset + counts[e];
  }
  int32_t placed = 0;
  for (int64_t base = 0; base < pairs; base += kSortThreads) {  // uniform trip count
    const int64_t p = base + tid;
    const bool mine = p < pairs && pair_expert(ids, ids_stride, top_k, p) == e;
    const unsigned ballot = __ballot_sync(kFull, mine);
    if (lane == 0) warp_count[warp] = __popc(ballot);
    __syncthreads();
    int32_t before = 0, total = 0;
    for (int w = 0; w < kSortThreads / 32; ++w) {
      before += w < warp ? warp_count[w] : 0;
      total += warp_count[w];
    }
    if (mine) {
      const int32_t pos = offset + placed + before + __popc(ballot & ((1u << lane) - 1u));
      order[pos] = static_cast<int32_t>(p);
      position[p] = pos;
    }
    placed += total;
    __syncthreads();  // warp_count is rewritten next round
  }
}

// Block i: xs[i] = x[order[i] / top_k].
template <bool kVec>
__global__ void __launch_bounds__(128)
    moe_gather_kernel(const bf16* __restrict__ x, int64_t x_stride, const int32_t* __restrict__ order, int32_t top_k,
                      int64_t cols, bf16* __restrict__ xs, int64_t xs_stride) {
  const int64_t i = blockIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  const bf16* src = x + static_cast<int64_t>(order[i] / top_k) * x_stride;
  bf16* dst = xs + i * xs_stride;
  if constexpr (kVec) {
    for (int64_t c = threadIdx.x * 8; c < cols; c += 128 * 8)
      *reinterpret_cast<uint4*>(dst + c) = *reinterpret_cast<const uint4*>(src + c);
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += 128) dst[c] = src[c];
  }
}

// Block t: out[t] += sigmoid(gate[t, 0]) * x[t].
__global__ void __launch_bounds__(256) sigmoid_gate_add_kernel(Mat out, Mat x, Mat gate) {
  const int64_t t = blockIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  const float g = load_as_float(gate.data, gate.dt, t * gate.stride);
  const float s = sigmoid(g);
  for (int64_t h = threadIdx.x; h < out.cols; h += 256) {
    const int64_t o = t * out.stride + h;
    store_from_float(out.data, out.dt, o,
                     load_as_float(out.data, out.dt, o) + s * load_as_float(x.data, x.dt, t * x.stride + h));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void moe_route(const float* logits, int64_t logits_stride, int32_t tokens, int32_t num_experts, int32_t top_k,
               bool normalize, int32_t* ids, int64_t ids_stride, float* weights, int64_t weights_stride,
               const Launch& launch) {
  if (num_experts <= 0 || num_experts > kRouteMaxExperts || top_k <= 0 || top_k > num_experts)
    unsupported_config("moe_route: " + std::to_string(top_k) + " of " + std::to_string(num_experts) +
                       " experts (at most " + std::to_string(kRouteMaxExperts) + ")");
  if (tokens <= 0) return;
  if (num_experts <= kRouteWarpMaxExperts) {
    const int64_t blocks = (int64_t{tokens} + kRouteWarpTokensPerBlock - 1) / kRouteWarpTokensPerBlock;
    launch_kernel("moe_route", moe_route_warp_kernel, dim3(static_cast<unsigned>(blocks)),
                  dim3(32 * kRouteWarpTokensPerBlock), 0, launch, logits, logits_stride, tokens, num_experts, top_k,
                  normalize, ids, ids_stride, weights, weights_stride);
    return;
  }
  const size_t smem = static_cast<size_t>(num_experts) * sizeof(float);
  launch_kernel("moe_route", moe_route_kernel, dim3(static_cast<unsigned>(tokens)), dim3(kRouteThreads), smem, launch,
                logits, logits_stride, num_experts, top_k, normalize, ids, ids_stride, weights, weights_stride);
}

bool moe_small_supported(int64_t hidden, int64_t inter) {
  return hidden > 0 && inter > 0 && hidden % 8 == 0 && inter % 8 == 0;
}

MoeStepArgs moe_step_rows(const MoeStepArgs& a, int64_t t0, int64_t n) {
  auto rows = [&](Mat m) {
    m.data = static_cast<char*>(m.data) + t0 * m.stride * (m.dt == Dt::F32 ? 4 : 2);
    m.rows = n;
    return m;
  };
  MoeStepArgs r = a;
  r.x = rows(a.x);
  r.out = rows(a.out);
  r.ids = a.ids + t0 * a.ids_stride;
  r.weights = a.weights + t0 * a.weights_stride;
  r.row_slots = a.row_slots ? a.row_slots + t0 : nullptr;
  return r;
}

MoeCombineArgs moe_combine_args(const MoeStepArgs& a, const float* y, const int32_t* position) {
  MoeCombineArgs c;
  c.y = y;
  c.position = position;
  c.ids = a.ids;
  c.ids_stride = a.ids_stride;
  c.weights = a.weights;
  c.weights_stride = a.weights_stride;
  c.tokens = static_cast<int32_t>(a.x.rows);
  c.top_k = a.top_k;
  c.num_experts = a.experts.num_experts;
  c.out = a.out;
  c.counters = a.counters;
  c.row_slots = a.row_slots;
  return c;
}

void moe_combine(const MoeCombineArgs& a, const Launch& launch) {
  if (a.tokens <= 0) return;
  if (a.out.rows < a.tokens) unsupported_config("moe_combine: out has fewer rows than tokens");
  const int64_t chunks = (a.out.cols + kCombineThreads - 1) / kCombineThreads;
  if (chunks > 65535) unsupported_config("moe_combine: hidden size " + std::to_string(a.out.cols));
  launch_kernel("moe_combine", moe_combine_kernel,
                dim3(static_cast<unsigned>(a.tokens), static_cast<unsigned>(std::max<int64_t>(chunks, 1))),
                dim3(kCombineThreads), 0, launch, a);
}

void moe_experts_small(const MoeSmallArgs& a, const Launch& launch) {
  const int64_t T = a.x.rows, H = a.experts.hidden, I = a.experts.inter;
  if (a.x.dt != Dt::BF16) unsupported_config("moe_experts_small: x must be BF16");
  if (T > kMoeSmallMaxTokens)
    unsupported_config("moe_experts_small: " + std::to_string(T) + " tokens (at most " +
                       std::to_string(kMoeSmallMaxTokens) + ")");
  if (!moe_small_supported(H, I) || a.x.cols != H || a.out.cols != H || !aligned16(a.x.data) ||
      (T > 1 && a.x.stride % 8 != 0) || !aligned16(a.act))
    unsupported_config("moe_experts_small: hidden " + std::to_string(H) + ", inter " + std::to_string(I) +
                       " or x/act alignment not supported");
  if (T <= 0) return;
  const int64_t pairs = T * a.top_k;
  if (a.top_k <= 0 || pairs > 65535) unsupported_config("moe_experts_small: top_k " + std::to_string(a.top_k));
  const auto gu_tiles = static_cast<unsigned>((I + kSmallWarps * kGateUpRowsPerWarp - 1) /
                                              (kSmallWarps * kGateUpRowsPerWarp));
  const auto down_tiles = static_cast<unsigned>((H + kSmallWarps * kDownRowsPerWarp - 1) /
                                                (kSmallWarps * kDownRowsPerWarp));
  const auto py = static_cast<unsigned>(pairs);
  launch_kernel("moe_gate_up", moe_gate_up_kernel, dim3(gu_tiles, py), dim3(kSmallWarps * 32), 0, launch,
                static_cast<const bf16*>(a.x.data), a.x.stride, a.ids, a.ids_stride, a.top_k, a.experts, a.act);
  launch_kernel("moe_down", moe_down_kernel, dim3(down_tiles, py), dim3(kSmallWarps * 32), 0, launch, a.act, a.ids,
                a.ids_stride, a.top_k, a.experts, a.slot_out);
  moe_combine(moe_combine_args(a, a.slot_out, nullptr), launch);
}

void moe_sort_pairs(const int32_t* ids, int64_t ids_stride, int32_t tokens, int32_t top_k, int32_t num_experts,
                    int32_t* counts, int32_t* offsets, int32_t* order, int32_t* position, const Launch& launch) {
  if (num_experts <= 0 || top_k <= 0) unsupported_config("moe_sort_pairs: no experts");
  const int64_t pairs = int64_t{tokens} * top_k;
  if (pairs > INT32_MAX) unsupported_config("moe_sort_pairs: too many pairs");
  const auto grid = dim3(static_cast<unsigned>(num_experts));
  launch_kernel("moe_count", moe_count_kernel, grid, dim3(kSortThreads), 0, launch, ids, ids_stride, top_k, pairs,
                counts);
  launch_kernel("moe_place", moe_place_kernel, grid, dim3(kSortThreads), 0, launch, ids, ids_stride, top_k, pairs,
                num_experts, counts, offsets, order, position);
}

void moe_gather_pairs(const Mat& x, const int32_t* order, int32_t pairs, int32_t top_k, Mat xs, const Launch& launch) {
  if (x.dt != Dt::BF16 || xs.dt != Dt::BF16 || x.cols != xs.cols || xs.rows < pairs)
    unsupported_config("moe_gather_pairs: x and xs must be BF16 of the same width");
  if (pairs <= 0) return;
  const bool vec = x.cols % 8 == 0 && x.stride % 8 == 0 && xs.stride % 8 == 0 && aligned16(x.data) &&
                   aligned16(xs.data);
  launch_kernel("moe_gather_pairs", vec ? moe_gather_kernel<true> : moe_gather_kernel<false>,
                dim3(static_cast<unsigned>(pairs)), dim3(128), 0, launch, static_cast<const bf16*>(x.data), x.stride,
                order, top_k, x.cols, static_cast<bf16*>(xs.data), xs.stride);
}

void sigmoid_gate_add(Mat out, const Mat& x, const Mat& gate, const Launch& launch) {
  if (x.rows != out.rows || x.cols != out.cols || gate.rows < out.rows || gate.cols < 1)
    unsupported_config("sigmoid_gate_add: shapes do not match");
  if (out.rows <= 0) return;
  launch_kernel("sigmoid_gate_add", sigmoid_gate_add_kernel, dim3(static_cast<unsigned>(out.rows)), dim3(256), 0,
                launch, out, x, gate);
}

}  // namespace inferdesk::cuda
