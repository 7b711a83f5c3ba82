// Block-wide building blocks of the sampling kernel (sampling.cu): one thread block walks one row
// of logits. Not part of the launcher contract.
//
// Discipline: every helper that talks through shared memory ends with a __syncthreads() after all
// threads have read its results, so the next helper may reuse the shared fields at once. Every
// helper must be called by all threads of the block (the branches around them are block-uniform).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/sampling.h"

namespace inferdesk::cuda::sampling {

// 512 threads: no register spills (1024 would cap registers at 64 and spill); a tuning knob.
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 2048;               // radix digits of 11, 11 and 10 bits
constexpr int kRanks = kBins / kThreads;  // histogram bins per thread in the radix scan
static_assert(kBins % kThreads == 0 && kThreads % 32 == 0 && kThreads <= 1024);
constexpr unsigned kFull = 0xffffffffu;
// 64-bit unsigned as the CUDA atomics and shuffles spell it (uint64_t is unsigned long here).
using u64 = unsigned long long;

struct BlockShared {
  union {
    u64 h64[kBins];
    uint32_t h32[kBins];
  } hist;
  u64 slot64[kWarps];
  float slot_f[kWarps];
  union {
    float f;
    int32_t i;
  } slot_y[kWarps];
  uint32_t slot_u[kWarps];
  uint32_t bound;
  u64 sel_above;
  int32_t sel_bin;
  int32_t found;
  int32_t top_count;
  int32_t top_ids[kMaxTopLogprobs];
  float top_vals[kMaxTopLogprobs];
};

template <typename W>
__device__ __forceinline__ W* hist_of(BlockShared& sh);
template <>
__device__ __forceinline__ u64* hist_of<u64>(BlockShared& sh) {
  return sh.hist.h64;
}
template <>
__device__ __forceinline__ uint32_t* hist_of<uint32_t>(BlockShared& sh) {
  return sh.hist.h32;
}

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & 31; }
__device__ __forceinline__ int warp_id() { return static_cast<int>(threadIdx.x) >> 5; }

// Monotone map of a non-NaN float onto uint32 (a < b  <=>  key(a) < key(b)); -0 and +0 share
// the key of +0, so key equality is float equality.
__device__ __forceinline__ uint32_t order_key(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u << 1) == 0) u = 0;  // -0 -> +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// One row of `n` floats. The row is cut into kWarps contiguous segments of `seg` elements (a
// multiple of 4, so each segment starts 16-byte aligned when the row does); warp w walks segment
// w, so per-warp sums are sums over id ranges (used for in-order searches).
struct Row {
  const float* p = nullptr;
  int32_t n = 0;
  int32_t seg = 0;
  bool vec = false;  // row start 16-byte aligned: float4 loads (else scalar, same elements)
};

__device__ __forceinline__ Row make_row(const float* p, int32_t n) {
  Row r;
  r.p = p;
  r.n = n;
  r.seg = (((n + kWarps - 1) / kWarps) + 3) & ~3;
  r.vec = (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
  return r;
}

__device__ __forceinline__ void segment_of(const Row& r, int warp, int& begin, int& end) {
  begin = min(r.n, warp * r.seg);
  end = min(r.n, begin + r.seg);
}

// Four consecutive floats: one 16-byte load when the row is aligned, else four scalar loads.
__device__ __forceinline__ float4 load4(const float* p, bool vec) {
  if (vec) return *reinterpret_cast<const float4*>(p);
  return make_float4(p[0], p[1], p[2], p[3]);
}

// Calls f(i, x) for every element of this thread's share of the calling warp's segment, ids
// increasing per thread: lane l takes ids begin + 4l .. 4l + 3, then 128 further, and so on.
// The share does not depend on the row's alignment (only the load width does), so float sums
// over it round the same wherever the row sits in memory. Four loads in flight per thread.
template <class F>
__device__ __forceinline__ void visit(const Row& r, F&& f) {
  int begin, end;
  segment_of(r, warp_id(), begin, end);
  int i = begin + lane_id() * 4;
  for (; i + 3 * 128 + 3 < end; i += 4 * 128) {
    float4 q[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) q[u] = load4(r.p + i + u * 128, r.vec);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int j = i + u * 128;
      f(j, q[u].x);
      f(j + 1, q[u].y);
      f(j + 2, q[u].z);
      f(j + 3, q[u].w);
    }
  }
  for (; i + 3 < end; i += 128) {
    const float4 q = load4(r.p + i, r.vec);
    f(i, q.x);
    f(i + 1, q.y);
    f(i + 2, q.z);
    f(i + 3, q.w);
  }
  for (; i < end; ++i) f(i, r.p[i]);  // the last segment's tail (fewer than 4 elements)
}

// ------------------------------------------------------------------------ reductions and scans

template <typename T>
__device__ __forceinline__ T warp_sum_of(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// Exclusive prefix sum over threads in thread order; `total` gets the block's sum.
template <typename T>
__device__ T block_exclusive_scan(T v, BlockShared& sh, T& total) {
  const int lane = lane_id(), warp = warp_id();
  T x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const T t = __shfl_up_sync(kFull, x, o);
    if (lane >= o) x += t;
  }
  if (lane == 31) sh.slot64[warp] = static_cast<u64>(x);
  __syncthreads();
  T before = 0;
  total = 0;
  for (int w = 0; w < kWarps; ++w) {
    const T s = static_cast<T>(sh.slot64[w]);
    if (w < warp) before += s;
    total += s;
  }
  __syncthreads();
  return before + x - v;
}

// Maximum value with the lowest id among equals; NaN never wins. Empty: {-inf, INT32_MAX}.
struct ArgMax {
  float v = -INFINITY;
  int32_t i = INT32_MAX;
  __device__ __forceinline__ void merge(float x, int32_t id) {
    if (x > v || (x == v && id < i)) {
      v = x;
      i = id;
    }
  }
};

// Running log-sum-exp: m the maximum, s = sum 2^((x - m) * log2(e)) = sum exp(x - m); -inf
// elements add nothing. exp2f (one MUFU.EX2 and a multiply) keeps the per-element cost of the
// always-run first pass low; its relative error (~2e-7 plus ~1e-6 from scaling the exponent) is
// far below what log-probs need.
struct Lse {
  static constexpr float kLog2e = 1.4426950408889634f;
  float m = -INFINITY;
  float s = 0.0f;
  __device__ __forceinline__ void add(float x) {
    if (!(x > -INFINITY)) return;
    if (x > m) {
      s = s * exp2f((m - x) * kLog2e) + 1.0f;
      m = x;
    } else {
      s += exp2f((x - m) * kLog2e);
    }
  }
  __device__ __forceinline__ void merge(float om, float os) {
    const float nm = fmaxf(m, om);
    if (!(nm > -INFINITY)) return;  // both empty
    s = (m > -INFINITY ? s * exp2f((m - nm) * kLog2e) : 0.0f) +
        (om > -INFINITY ? os * exp2f((om - nm) * kLog2e) : 0.0f);
    m = nm;
  }
};

__device__ __forceinline__ float& y_slot(BlockShared& sh, int w, float*) { return sh.slot_y[w].f; }
__device__ __forceinline__ int32_t& y_slot(BlockShared& sh, int w, int32_t*) { return sh.slot_y[w].i; }

// Block-wide merge of a running state S made of a float (member x) and a 32-bit field (member
// y), folded by S::merge(x, y): warp butterflies, then the warps' states in warp order, so the
// result is the same on every thread and on every run.
template <class S, class Y>
__device__ S block_merge(S a, float S::*x, Y S::*y, BlockShared& sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a.merge(__shfl_xor_sync(kFull, a.*x, o), __shfl_xor_sync(kFull, a.*y, o));
  }
  if (lane_id() == 0) {
    sh.slot_f[warp_id()] = a.*x;
    y_slot(sh, warp_id(), static_cast<Y*>(nullptr)) = a.*y;
  }
  __syncthreads();
  S r;
  for (int w = 0; w < kWarps; ++w) r.merge(sh.slot_f[w], y_slot(sh, w, static_cast<Y*>(nullptr)));
  __syncthreads();
  return r;
}
__device__ __forceinline__ ArgMax block_argmax(const ArgMax& a, BlockShared& sh) {
  return block_merge(a, &ArgMax::v, &ArgMax::i, sh);
}
__device__ __forceinline__ Lse block_lse(const Lse& a, BlockShared& sh) { return block_merge(a, &Lse::m, &Lse::s, sh); }

// ------------------------------------------------------------------ radix select over a row

template <typename W>
struct Selection {
  bool active = false;  // false: target_of(total) was 0 or above the total (nothing selected)
  uint32_t key = 0;     // the selected key t*
  W above = 0;          // weight of the included elements with key > t*
  W at = 0;             // weight of the included elements with key == t*
  W need = 0;           // weight still to take from the elements at t* (1..at)
};

// Among the elements for which include(i, x, key, w) is true (w >= 0 their weight), finds the
// largest key t* whose weight at or above it reaches target = target_of(total weight): i.e.
// weight(key > t*) < target <= weight(key >= t*). Three histogram passes over the row (11, 11
// and 10 bits of the key, most significant first). W is uint32_t (counts) or u64 (masses);
// integer atomics make the result independent of thread scheduling.
template <typename W, class Include, class TargetOf>
__device__ Selection<W> radix_select(const Row& r, Include include, TargetOf target_of, BlockShared& sh) {
  W* hist = hist_of<W>(sh);
  Selection<W> out;
  uint32_t prefix = 0, mask = 0;
  W target = 0;
  for (int level = 0; level < 3; ++level) {
    const int shift = level == 0 ? 21 : level == 1 ? 10 : 0;
    const int nb = level < 2 ? 2048 : 1024;
    for (int b = static_cast<int>(threadIdx.x); b < nb; b += kThreads) hist[b] = 0;
    __syncthreads();
    visit(r, [&](int i, float x) {
      uint32_t key;
      W w;
      if (include(i, x, key, w) && w != 0 && (key & mask) == prefix) {
        atomicAdd(&hist[(key >> shift) & static_cast<uint32_t>(nb - 1)], w);
      }
    });
    __syncthreads();
    // Thread t owns the bins of descending ranks t * kRanks ... t * kRanks + kRanks - 1.
    W h[kRanks];
    W mine = 0;
#pragma unroll
    for (int j = 0; j < kRanks; ++j) {
      const int b = nb - 1 - (static_cast<int>(threadIdx.x) * kRanks + j);
      h[j] = b >= 0 ? hist[b] : W(0);
      mine += h[j];
    }
    W level_total;
    W acc = block_exclusive_scan<W>(mine, sh, level_total);
    if (level == 0) {
      target = target_of(level_total);
      if (target == 0 || target > level_total) return out;  // block-uniform
    }
    // Exactly one rank has acc < target <= acc + h: the first whose running sum reaches target.
#pragma unroll
    for (int j = 0; j < kRanks; ++j) {
      if (acc < target && target <= acc + h[j]) {
        sh.sel_bin = nb - 1 - (static_cast<int>(threadIdx.x) * kRanks + j);
        sh.sel_above = acc;
      }
      acc += h[j];
    }
    __syncthreads();
    const int bin = sh.sel_bin;
    const W lvl_above = static_cast<W>(sh.sel_above);
    out.at = hist[bin];
    __syncthreads();
    prefix |= static_cast<uint32_t>(bin) << shift;
    mask |= static_cast<uint32_t>(nb - 1) << shift;
    out.above += lvl_above;
    target -= lvl_above;
  }
  out.active = true;
  out.key = prefix;
  out.need = target;
  return out;
}

// The k-th largest, counting repeats, of the keys that threads 0 .. count - 1 pass in `key`
// (1 <= k <= count <= kThreads; the other threads' keys are ignored).
__device__ uint32_t kth_largest_key(uint32_t key, int count, int k, BlockShared& sh) {
  uint32_t* keys = sh.hist.h32;
  const int t = static_cast<int>(threadIdx.x);
  if (t < count) keys[t] = key;
  if (t == 0) sh.bound = 0;
  __syncthreads();
  if (t < count) {
    int greater = 0, at_least = 0;
    for (int j = 0; j < count; ++j) {
      greater += keys[j] > key;
      at_least += keys[j] >= key;
    }
    if (greater < k && k <= at_least) sh.bound = key;  // equal keys write the same value
  }
  __syncthreads();
  const uint32_t bound = sh.bound;
  __syncthreads();
  return bound;
}

// A key L with at least k elements of the row at or above it (0 when k > kThreads: no bound),
// from each thread's maximum key over its elements (0 for a thread without elements): the c-th
// largest of the kWarps warps' minima, c = ceil(k / 32). Each of those c warps has 32 distinct
// elements (its lanes' maxima) at or above L. Near the top of the row when k is small, so a
// select restricted to keys >= L touches few elements (few histogram atomics).
__device__ uint32_t kth_lower_bound(uint32_t thread_max_key, int k, BlockShared& sh) {
  if (k > kThreads) return 0;
  uint32_t m = thread_max_key;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = min(m, __shfl_xor_sync(kFull, m, o));
  if (lane_id() == 0) sh.slot_u[warp_id()] = m;
  __syncthreads();
  const uint32_t warp_min = threadIdx.x < kWarps ? sh.slot_u[threadIdx.x] : 0u;
  return kth_largest_key(warp_min, kWarps, (k + 31) / 32, sh);
}

// Index (0..count-1) of the first of `count` per-warp sums (in sh.slot64) whose running total
// exceeds `target`; `before` gets the total of the sums before it. -1 when none does.
template <typename W>
__device__ __forceinline__ int pick_piece(const BlockShared& sh, W target, W& before) {
  before = 0;
  for (int w = 0; w < kWarps; ++w) {
    const W s = static_cast<W>(sh.slot64[w]);
    if (target < before + s) return w;
    before += s;
  }
  return -1;
}

// The smallest id i with weight(0) + ... + weight(i) > target_of(total), weights from
// weight_of(i, x) (integers >= 0); -1 when target_of(total) >= total (e.g. all weights 0).
// One vectorised pass gives the sums of the warps' segments; the segment holding the answer is
// then cut into one piece per warp, again and again (each level reads 1/kWarps of the previous
// one, all warps in parallel), until one warp can scan the last <= 32 ids in order.
template <typename W, class WeightOf, class TargetOf>
__device__ int32_t find_first_exceeding(const Row& r, WeightOf weight_of, TargetOf target_of, BlockShared& sh) {
  const int lane = lane_id(), warp = warp_id();
  W mine = 0;
  visit(r, [&](int i, float x) { mine += weight_of(i, x); });
  mine = warp_sum_of(mine);
  if (lane == 0) sh.slot64[warp] = static_cast<u64>(mine);
  if (threadIdx.x == 0) sh.found = -1;
  __syncthreads();
  W total = 0;
  for (int w = 0; w < kWarps; ++w) total += static_cast<W>(sh.slot64[w]);
  W target = target_of(total);
  W before;
  int piece = pick_piece(sh, target, before);  // block-uniform from here on
  __syncthreads();
  int lo = 0, hi = 0;
  if (piece >= 0) segment_of(r, piece, lo, hi);
  target -= before;
  while (piece >= 0 && hi - lo > 32) {
    const int len = (hi - lo + kWarps - 1) / kWarps;
    const int plo = min(hi, lo + warp * len), phi = min(hi, plo + len);
    W s = 0;
#pragma unroll 4
    for (int i = plo + lane; i < phi; i += 32) s += weight_of(i, r.p[i]);
    s = warp_sum_of(s);
    if (lane == 0) sh.slot64[warp] = static_cast<u64>(s);
    __syncthreads();
    piece = pick_piece(sh, target, before);
    __syncthreads();
    if (piece >= 0) {
      lo = min(hi, lo + piece * len);
      hi = min(hi, lo + len);
      target -= before;
    }
  }
  if (piece >= 0 && warp == 0) {  // the first id whose running weight exceeds target
    const int i = lo + lane;
    const W w = i < hi ? weight_of(i, r.p[i]) : W(0);
    W incl = w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const W t = __shfl_up_sync(kFull, incl, o);
      if (lane >= o) incl += t;
    }
    const unsigned hit = __ballot_sync(kFull, incl > target);
    if (hit != 0 && lane == __ffs(hit) - 1) sh.found = i;
  }
  __syncthreads();
  const int32_t found = sh.found;
  __syncthreads();
  return found;
}

// ------------------------------------------------------------------ per-chunk row statistics

// sample_row_stats_kernel cuts each row into chunks of kChunk floats (the cut depends on the
// vocabulary only, never on the batch, so a row's statistics are bit-identical in any batch) and
// writes one ChunkStat per (row, chunk) into the workspace; sample_kernel merges a row's chunks in
// a fixed order. Within a chunk, thread t of the stats block takes the float4 groups starting at
// 4t, 4t + 4 * kStatThreads, ... (the same ids whatever the row's alignment).
constexpr int kChunk = 4096;
constexpr int kStatThreads = 256;
constexpr int kStatWarps = kStatThreads / 32;
constexpr int kStatGroups = kChunk / (4 * kStatThreads);  // float4 groups per thread
static_assert(kChunk % (4 * kStatThreads) == 0 && kStatWarps <= 32);

// One chunk of one row: its maximum non-NaN value max_v with the lowest id max_i (kNanChunk when
// the chunk holds a NaN) and sum = the sum of exp(x - max_v) over its elements (0 when max_v is
// -inf), i.e. the Lse state (max_v, sum). Every chunk holds at least one element, so a chunk
// without NaN has a real maximum (possibly -inf, at its lowest id).
struct alignas(16) ChunkStat {
  float max_v;
  int32_t max_i;
  float sum;
  float unused;  // written 0
};
constexpr int32_t kNanChunk = -1;
static_assert(sizeof(ChunkStat) == 16);

__host__ __device__ __forceinline__ int32_t chunk_count(int32_t vocab) {
  return static_cast<int32_t>((static_cast<int64_t>(vocab) + kChunk - 1) / kChunk);
}

struct RowStats {
  ArgMax max;
  Lse lse;
  bool nan = false;
};

// The row's statistics from its `n` chunks, the same bits on every thread: lane l folds chunks
// l, l + 32, ... in order, the lanes fold by butterfly and lane 0's result is broadcast (so the
// result depends on n alone, never on scheduling or on the batch). Call from whole warps.
__device__ RowStats merge_chunks(const ChunkStat* st, int32_t n) {
  ArgMax am;
  Lse lse;
  bool nan = false;
  for (int c = lane_id(); c < n; c += 32) {
    const ChunkStat s = st[c];
    if (s.max_i == kNanChunk) {
      nan = true;
    } else {
      am.merge(s.max_v, s.max_i);
      lse.merge(s.max_v, s.sum);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    am.merge(__shfl_xor_sync(kFull, am.v, o), __shfl_xor_sync(kFull, am.i, o));
    lse.merge(__shfl_xor_sync(kFull, lse.m, o), __shfl_xor_sync(kFull, lse.s, o));
  }
  RowStats r;
  r.max.v = __shfl_sync(kFull, am.v, 0);
  r.max.i = __shfl_sync(kFull, am.i, 0);
  r.lse.m = __shfl_sync(kFull, lse.m, 0);
  r.lse.s = __shfl_sync(kFull, lse.s, 0);
  r.nan = __any_sync(kFull, nan) != 0;
  return r;
}

// Where a lower bound of a row's k-th largest key comes from: the row's chunk maxima (raw rows
// only: null for a penalised copy), and each thread's maximum over its visit() share, computed on
// first need (one pass over the row) and kept for later selections on the same row.
struct MaxHints {
  const ChunkStat* chunks = nullptr;
  int32_t nchunks = 0;
  ArgMax mine;
  bool have_mine = false;
};

// A key L with at least k elements of the row r at or above it, keys by key_of(x) (monotone
// non-decreasing in x); 0 (no bound) when k > kThreads and the chunks cannot give one. With
// k <= nchunks: the k-th largest key of the chunk maxima (k distinct elements, one per chunk,
// are at or above it). Else kth_lower_bound over the threads' maxima.
template <class KeyOf>
__device__ uint32_t kth_bound(const Row& r, MaxHints& h, int k, KeyOf key_of, BlockShared& sh) {
  if (h.chunks != nullptr && k <= h.nchunks && h.nchunks <= kThreads) {
    const int t = static_cast<int>(threadIdx.x);
    const uint32_t key = t < h.nchunks ? key_of(h.chunks[t].max_v) : 0u;
    return kth_largest_key(key, h.nchunks, k, sh);
  }
  if (k > kThreads) return 0;
  if (!h.have_mine) {
    ArgMax m;
    visit(r, [&](int32_t i, float x) { m.merge(x, i); });
    h.mine = m;
    h.have_mine = true;
  }
  return kth_lower_bound(h.mine.i == INT32_MAX ? 0u : key_of(h.mine.v), k, sh);
}

}  // namespace inferdesk::cuda::sampling
