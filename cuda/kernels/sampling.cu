// GPU sampling (sample_rows): the same pipeline and semantics as the CPU Sampler
// (core/sample/sampler.cpp), with thresholds found by radix select instead of sorting. Two kernels:
//
//  A. sample_row_stats_kernel, one block per (chunk of kChunk floats, row): the chunk's maximum
//     with its lowest id, log-sum-exp state and NaN flag, written to the workspace; a penalised
//     row is also copied into the workspace on the way. The chunking depends on the vocabulary
//     only, so a row's statistics are bit-identical in any batch.
//  Then sample_kernel, one thread block per logits row:
//  A'. The row's chunk statistics merged in a fixed order (sampling_block.cuh: merge_chunks).
//  P. Penalties on the copy, one thread per penalty entry (entries are distinct tokens): the CPU's
//     float operations in the CPU's order (repetition, then frequency, then presence).
//  Greedy (temperature < 1e-5): the argmax (lowest id on ties) of the penalised row; without
//  penalties and top log-probs the block is done right after A' (token = the row's argmax).
//  Otherwise, v = logit / temperature and w = exp(v - max v) (0 below -87, as the CPU's exp),
//  then filters that only ever compare v (through an order-preserving uint32 key) or w:
//   - min_p: w < min_p dropped;
//   - top-k: when more than k tokens are left, the k-th largest key among them by radix select
//     (counts; three histogram passes); every token with that value is kept (ties kept, as on
//     the CPU). For k <= the block size the select only counts keys above a cheap lower bound
//     of the k-th value (the k-th largest chunk maximum when k <= the number of chunks, else
//     from the threads' maxima), so few tokens touch the histogram;
//   - top-p: radix select with the masses as weights finds the value t* at which the mass of the
//     most-likely-first order reaches top_p * total; tokens above t* are kept, and among tokens at
//     t* only the lowest ids needed to reach the target (the CPU orders ties by lower id, and so
//     keeps exactly these: no tie difference beyond the rounding below);
//   - draw: inverse CDF in id order over the kept masses with one 64-bit Philox draw keyed by
//     (seed, counter): curand_init(seed, subsequence = counter, offset = 0), two curand() words.
//     The id is found by one pass of per-warp sums, then narrowing the chosen range kWarps-fold
//     per level (all warps in parallel) until one warp scans the last 32 ids.
//  Masses are fixed point (w * 2^44 in uint64, truncated): sums are exact and independent of
//  thread order, so the same (seed, counter) and row give the same token in any batch. Against
//  the CPU's float sums this moves a top-p boundary only when the cumulative mass lies within
//  ~1e-7 of the target, and drops tokens with w < 2^-44 (probability < 6e-14 of the best).
//  Log-probs: log_softmax of the RAW logits; the top list is the num_logprobs largest raw logits
//  by radix select (with the same lower bound), ties by lower id. Each thread always visits the
//  same ids of a row and chunks merge in a fixed order, so the float log-sum-exp is
//  bit-identical wherever the row sits.
//
// Passes over a row (V floats, L2-resident after the first): greedy 1, spread over the chunks'
// blocks (+1 in sample_kernel with penalties: argmax of the copy); temperature only 2; top-k +3
// (+1 when k exceeds the number of chunks: the threads' maxima); top-p +3 (+1 when the cut falls
// inside ties); top-N log-probs +4 (+1 when N exceeds the number of chunks). Shared-memory atomics
// in the radix passes are the likely hot spot when top-p runs without a small top-k (every
// token's mass lands in few bins).
//
// Only a row's first `vocab` floats are read (the row stride may be larger): a padded vocabulary's
// extra columns, which the engine leaves out of the view it samples, are never candidates.
//
// A row whose raw logits hold NaN or have no finite maximum (all -inf, or +inf) is a backend bug
// the CPU sampler reports as Internal: here its token is -1 and its log-probs NaN, for the caller
// to raise the error.
#include <cuda_runtime.h>
#include <curand_philox4x32_x.h>  // needs cuda_runtime.h first (uint4, __forceinline__)

#include <climits>
#include <cmath>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/sampling.h"
#include "cuda/kernels/sampling_block.cuh"

namespace inferdesk::cuda {
namespace {

using namespace sampling;

constexpr float kGreedyTemperature = 1e-5f;     // SamplingParams::kGreedyTemperature
constexpr float kFixedOne = 17592186044416.0f;  // 2^44: the mass of the most likely token

// Workspace row stride in floats: 64-float (256-byte) rows keep every row 16-byte aligned.
int64_t workspace_stride(int32_t vocab) { return (static_cast<int64_t>(vocab) + 63) / 64 * 64; }

__device__ __forceinline__ u64 fixed_mass(float w) { return w > 0.0f ? __float2ull_rz(w * kFixedOne) : 0ull; }

// The tempered logit v of a (penalised) logit x, its key and its weight after min_p.
struct Tempered {
  float temperature = 1.0f;
  float mx = 0.0f;     // max over the row of v
  float min_p = 0.0f;  // 0: off
  __device__ __forceinline__ float weight_of_v(float v) const {
    const float d = __fsub_rn(v, mx);
    float w = d < -87.0f ? 0.0f : expf(d);  // the CPU's exp_shifted flushes below -87
    return w < min_p ? 0.0f : w;
  }
  __device__ __forceinline__ void eval(float x, uint32_t& key, float& w) const {
    const float v = __fdiv_rn(x, temperature);
    key = order_key(v);
    w = weight_of_v(key_value(key));  // canonical v (-0 -> +0): equal keys, equal weights
  }
};

// Which tokens survive min_p, top-k and top-p.
struct Kept {
  Tempered t;
  uint32_t key_k = 0;  // top-k: keys >= key_k survive (0: off)
  bool top_p = false;  // top-p: keys > key_p survive, and key_p itself up to id cut_p
  uint32_t key_p = 0;
  int32_t cut_p = INT32_MAX;
  // min_p and top-k only.
  __device__ __forceinline__ bool before_top_p(float x, uint32_t& key, float& w) const {
    t.eval(x, key, w);
    return w > 0.0f && key >= key_k;
  }
  __device__ __forceinline__ u64 mass(int32_t i, float x) const {
    uint32_t key;
    float w;
    if (!before_top_p(x, key, w)) return 0;
    if (top_p && (key < key_p || (key == key_p && i > cut_p))) return 0;
    return fixed_mass(w);
  }
};

// 64 random bits keyed by (seed, counter): the first two words curand() returns after
// curand_init(seed, subsequence = counter, offset = 0, Philox4_32_10 state), computed with the
// Philox function itself (curand_kernel.h would add ~200 KB of unused generator tables).
__device__ __forceinline__ u64 philox64(uint64_t seed, uint64_t counter) {
  const uint4 ctr = make_uint4(0u, 0u, static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32));
  const uint2 key = make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint4 out = curand_Philox4x32_10(ctr, key);
  return (static_cast<u64>(out.x) << 32) | out.y;
}

// Applies the row's penalty entries to its copy in the workspace (CPU order and rounding).
__device__ void apply_penalties(float* ws, int32_t vocab, const SampleRowDev& p, const int32_t* tokens,
                                const int32_t* counts) {
  const bool freq_or_presence = p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  for (int e = static_cast<int>(threadIdx.x); e < p.penalty_count; e += kThreads) {
    const int32_t tok = tokens[p.penalty_start + e];
    if (tok < 0 || tok >= vocab) continue;  // validated by the caller; never write outside
    float l = ws[tok];
    if (p.repetition_penalty != 1.0f) {
      l = l > 0.0f ? __fdiv_rn(l, p.repetition_penalty) : __fmul_rn(l, p.repetition_penalty);
    }
    const int32_t c = counts[p.penalty_start + e];
    if (freq_or_presence && c > 0) {
      l = __fsub_rn(l, __fmul_rn(p.frequency_penalty, static_cast<float>(c)));
      l = __fsub_rn(l, p.presence_penalty);
    }
    ws[tok] = l;
  }
}

// The id of the n-th (1-based) token of the row, in id order, whose key equals `key` and for
// which pred(x) holds.
template <class KeyOf>
__device__ int32_t nth_with_key(const Row& r, KeyOf key_of, uint32_t key, uint32_t n, BlockShared& sh) {
  return find_first_exceeding<uint32_t>(
      r,
      [&](int32_t, float x) -> uint32_t {
        uint32_t k;
        return key_of(x, k) && k == key ? 1u : 0u;
      },
      [&](uint32_t) { return n - 1; }, sh);
}

// min_p, top-k and top-p thresholds, then the draw. Returns the token (-1 only for a row with no
// positive mass, which valid logits cannot produce).
// `hints` give the lower bound of the k-th largest value of src (see kth_bound).
__device__ int32_t sample_filtered(const Row& src, const SampleRowDev& p, float pmax, MaxHints& hints,
                                   BlockShared& sh) {
  Kept kept;
  kept.t.temperature = p.temperature;
  kept.t.mx = __fdiv_rn(pmax, p.temperature);  // division is monotone: max(x / T) = max(x) / T
  kept.t.min_p = p.min_p > 0.0f ? p.min_p : 0.0f;
  const int32_t vocab = src.n;

  if (p.top_k > 0 && p.top_k < vocab) {
    const uint32_t k = static_cast<uint32_t>(p.top_k);
    // The CPU applies top-k only when more than k tokens survive min_p (w > 0); its threshold,
    // the k-th largest value, is then the k-th largest among the survivors. Survivors are the
    // tokens with v above a cut, so restricting them to keys >= L (at least k tokens of the row
    // are >= L) leaves a set F with: F has >= k tokens and its k-th largest is the threshold when
    // top-k applies; F is all survivors when F has exactly k tokens; fewer than k: top-k is off.
    const uint32_t bound = kth_bound(
        src, hints, p.top_k, [&](float x) { return order_key(__fdiv_rn(x, p.temperature)); }, sh);
    const Selection<uint32_t> sel = radix_select<uint32_t>(
        src,
        [&](int32_t, float x, uint32_t& key, uint32_t& w) {
          float wf;
          kept.t.eval(x, key, wf);
          w = 1;
          return wf > 0.0f && key >= bound;
        },
        [&](uint32_t total) { return total >= k ? k : 0u; }, sh);
    if (sel.active) kept.key_k = sel.key;
  }

  if (p.top_p < 1.0f) {
    const Selection<u64> sel = radix_select<u64>(
        src,
        [&](int32_t, float x, uint32_t& key, u64& w) {
          float wf;
          const bool in = kept.before_top_p(x, key, wf);
          w = in ? fixed_mass(wf) : 0ull;
          return in;
        },
        [&](u64 total) {
          // cum >= top_p * total (CPU) <=> cum >= ceil(top_p * total) for integer cum.
          const double t = ceil(static_cast<double>(p.top_p) * static_cast<double>(total));
          u64 target = t >= static_cast<double>(total) ? total : static_cast<u64>(t);
          return target < 1 ? u64{1} : target;
        },
        sh);
    if (sel.active) {
      kept.top_p = true;
      kept.key_p = sel.key;
      // Every token at t* has the same v, hence the same mass.
      const u64 one = fixed_mass(kept.t.weight_of_v(key_value(sel.key)));
      const u64 ties = one > 0 ? sel.at / one : 1;
      const u64 take = one > 0 ? (sel.need + one - 1) / one : 1;
      if (take < ties) {
        kept.cut_p = nth_with_key(
            src,
            [&](float x, uint32_t& key) {
              float w;
              return kept.before_top_p(x, key, w);
            },
            sel.key, static_cast<uint32_t>(take), sh);
      }
    }
  }

  const u64 rnd = philox64(p.seed, p.counter);
  return find_first_exceeding<u64>(
      src, [&](int32_t i, float x) { return kept.mass(i, x); }, [&](u64 total) { return __umul64hi(rnd, total); }, sh);
}

// The n (1..20) largest raw logits, best first, ties by lower id, as log-probabilities.
// `hints` are those of the raw row (see kth_bound).
__device__ void top_logprobs(const Row& raw, int32_t n, double log_z, MaxHints& hints, int32_t* out_ids, float* out_lp,
                             BlockShared& sh) {
  const uint32_t bound = kth_bound(
      raw, hints, n, [](float x) { return order_key(x); }, sh);
  const Selection<uint32_t> sel = radix_select<uint32_t>(
      raw,
      [&](int32_t, float x, uint32_t& key, uint32_t& w) {
        key = order_key(x);
        w = 1;
        return key >= bound;
      },
      [&](uint32_t) { return static_cast<uint32_t>(n); }, sh);
  // sel.active: the row has vocab >= n elements.
  int32_t cut = INT32_MAX;
  if (sel.need < sel.at) {
    cut = nth_with_key(
        raw,
        [](float x, uint32_t& key) {
          key = order_key(x);
          return true;
        },
        sel.key, sel.need, sh);
  }
  if (threadIdx.x == 0) sh.top_count = 0;
  __syncthreads();
  visit(raw, [&](int32_t i, float x) {
    const uint32_t key = order_key(x);
    if (key > sel.key || (key == sel.key && i <= cut)) {
      const int slot = atomicAdd(&sh.top_count, 1);
      if (slot < kMaxTopLogprobs) {
        sh.top_ids[slot] = i;
        sh.top_vals[slot] = x;
      }
    }
  });
  __syncthreads();
  const int t = static_cast<int>(threadIdx.x);
  const int have = min(sh.top_count, n);
  if (t < have && out_ids != nullptr && out_lp != nullptr) {
    const float v = sh.top_vals[t];
    const int32_t id = sh.top_ids[t];
    int rank = 0;
    for (int j = 0; j < have; ++j) {
      const float u = sh.top_vals[j];
      rank += u > v || (u == v && sh.top_ids[j] < id);
    }
    out_ids[rank] = id;
    out_lp[rank] = static_cast<float>(static_cast<double>(v) - log_z);
  }
  __syncthreads();
}

__device__ __forceinline__ bool is_penalised(const SampleRowDev& p) {
  return (p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) &&
         p.penalty_count > 0;
}

__device__ __forceinline__ float lane_of(const float4& q, int e) {
  return e == 0 ? q.x : e == 1 ? q.y : e == 2 ? q.z : q.w;
}

// This thread's statistics of its elements of a chunk (q[u] holds ids begin + 4t + u * 4 *
// kStatThreads + 0..3; only the first len of the chunk exist unless kWhole): the maximum m of the
// non-NaN elements (-inf if none), the lowest id holding it (INT32_MAX if none), the sum of
// exp(x - m) in id order (0 when m is -inf) and whether any element is NaN.
template <bool kWhole>
__device__ __forceinline__ void thread_chunk_stats(const float4 (&q)[kStatGroups], int t, int len, int32_t begin,
                                                   float& m, int32_t& id, float& s, bool& nan) {
  m = -INFINITY;
  nan = false;
#pragma unroll
  for (int u = 0; u < kStatGroups; ++u) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = 4 * t + u * 4 * kStatThreads + e;
      if (kWhole || j < len) {
        const float x = lane_of(q[u], e);
        nan |= x != x;
        m = fmaxf(m, x);  // NaN is ignored
      }
    }
  }
  id = INT32_MAX;
#pragma unroll
  for (int u = kStatGroups - 1; u >= 0; --u) {  // descending ids: the last hit is the lowest id
#pragma unroll
    for (int e = 3; e >= 0; --e) {
      const int j = 4 * t + u * 4 * kStatThreads + e;
      if ((kWhole || j < len) && lane_of(q[u], e) == m) id = begin + j;
    }
  }
  s = 0.0f;
  if (m > -INFINITY) {
#pragma unroll
    for (int u = 0; u < kStatGroups; ++u) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 4 * t + u * 4 * kStatThreads + e;
        if (kWhole || j < len) s += exp2f((lane_of(q[u], e) - m) * Lse::kLog2e);
      }
    }
  }
}

// A: one block per (chunk, row): the chunk's ChunkStat into stats[row * nchunks + chunk], and the
// chunk copied into the row's workspace copy when the row is penalised. Rows beyond gridDim.y
// (more than 65535) are taken in turns. Every reduction has a fixed order: the statistics of a
// chunk do not depend on the batch or on scheduling.
__global__ void __launch_bounds__(kStatThreads)
    sample_row_stats_kernel(SampleArgs a, int64_t ws_stride, ChunkStat* stats, int32_t nchunks) {
  __shared__ float s_max[kStatWarps];
  __shared__ int32_t s_id[kStatWarps];
  __shared__ float s_sum[kStatWarps];
  pdl_wait();  // the logits (and the row parameters) come from earlier work on the stream
  pdl_launch_dependents();
  const int t = static_cast<int>(threadIdx.x);
  const int lane = lane_id(), warp = warp_id();
  const int32_t chunk = static_cast<int32_t>(blockIdx.x);
  const int32_t begin = chunk * kChunk;              // < vocab: chunk < chunk_count(vocab)
  const int32_t len = min(a.vocab - begin, kChunk);  // 1 .. kChunk
  for (int row = static_cast<int>(blockIdx.y); row < a.rows; row += static_cast<int>(gridDim.y)) {
    const float* p = a.logits + static_cast<int64_t>(row) * a.logits_stride + begin;
    // begin is a multiple of 4 floats: the chunk is 16-byte aligned exactly when the row is.
    const bool vec = (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
    float4 q[kStatGroups];
#pragma unroll
    for (int u = 0; u < kStatGroups; ++u) {
      const int j = 4 * t + u * 4 * kStatThreads;
      if (j + 3 < len) {
        q[u] = load4(p + j, vec);
      } else {
        q[u].x = j < len ? p[j] : 0.0f;
        q[u].y = j + 1 < len ? p[j + 1] : 0.0f;
        q[u].z = j + 2 < len ? p[j + 2] : 0.0f;
        q[u].w = 0.0f;  // j + 3 >= len
      }
    }
    if (is_penalised(a.row_params[row])) {
      float* copy = static_cast<float*>(a.workspace) + static_cast<int64_t>(row) * ws_stride + begin;
      const bool copy_vec = (reinterpret_cast<uintptr_t>(copy) & 15u) == 0;
#pragma unroll
      for (int u = 0; u < kStatGroups; ++u) {
        const int j = 4 * t + u * 4 * kStatThreads;
        if (j + 3 < len && copy_vec) {
          *reinterpret_cast<float4*>(copy + j) = q[u];
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (j + e < len) copy[j + e] = lane_of(q[u], e);
        }
      }
    }
    float m, s;
    int32_t id;
    bool nan;
    if (len == kChunk) {
      thread_chunk_stats<true>(q, t, len, begin, m, id, s, nan);
    } else {
      thread_chunk_stats<false>(q, t, len, begin, m, id, s, nan);
    }
    // The chunk's maximum (exact in any order), then its lowest id and its sum with every
    // thread's sum rescaled to that maximum: butterflies, then the warps in order.
    float cm = m;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) cm = fmaxf(cm, __shfl_xor_sync(kFull, cm, o));
    if (lane == 0) s_max[warp] = cm;
    __syncthreads();
    cm = s_max[0];
#pragma unroll
    for (int w = 1; w < kStatWarps; ++w) cm = fmaxf(cm, s_max[w]);
    int32_t cid = m == cm ? id : INT32_MAX;
    float cs = m > -INFINITY ? s * exp2f((m - cm) * Lse::kLog2e) : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      cid = min(cid, __shfl_xor_sync(kFull, cid, o));
      cs += __shfl_xor_sync(kFull, cs, o);
    }
    if (lane == 0) {  // lane 0's sum (the compiler may fuse a lane's own product differently)
      s_id[warp] = cid;
      s_sum[warp] = cs;
    }
    nan = __syncthreads_or(nan) != 0;
    if (t == 0) {
      int32_t bid = INT32_MAX;
      float bs = 0.0f;
      for (int w = 0; w < kStatWarps; ++w) {  // warp order
        bid = min(bid, s_id[w]);
        bs += s_sum[w];
      }
      ChunkStat st;
      st.max_v = cm;
      st.max_i = nan ? kNanChunk : bid;
      st.sum = bs;
      st.unused = 0.0f;
      stats[static_cast<int64_t>(row) * nchunks + chunk] = st;
    }
    __syncthreads();  // the shared slots are reused by the next row
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    sample_kernel(SampleArgs a, int64_t ws_stride, const ChunkStat* stats, int32_t nchunks) {
  __shared__ BlockShared sh;
  pdl_wait();  // the chunk statistics and penalised copies of sample_row_stats_kernel
  const int row = static_cast<int>(blockIdx.x);
  const SampleRowDev p = a.row_params[row];
  const int32_t vocab = a.vocab;
  const Row raw = make_row(a.logits + static_cast<int64_t>(row) * a.logits_stride, vocab);
  const bool penalised = is_penalised(p);
  float* ws = penalised ? static_cast<float*>(a.workspace) + static_cast<int64_t>(row) * ws_stride : nullptr;
  const int t = static_cast<int>(threadIdx.x);
  int32_t* top_ids = a.out_top_ids ? a.out_top_ids + static_cast<int64_t>(row) * kMaxTopLogprobs : nullptr;
  float* top_lp = a.out_top_logprobs ? a.out_top_logprobs + static_cast<int64_t>(row) * kMaxTopLogprobs : nullptr;
  const int32_t n_top = min(min(p.num_logprobs, kMaxTopLogprobs), vocab);
  // Entries past num_logprobs (all of them for a bad row) are id -1.
  if (t < kMaxTopLogprobs && t >= max(n_top, 0) && top_ids && top_lp) {
    top_ids[t] = -1;
    top_lp[t] = -INFINITY;
  }

  // A': the row's raw statistics from its chunks.
  MaxHints raw_hints;
  raw_hints.chunks = stats + static_cast<int64_t>(row) * nchunks;
  raw_hints.nchunks = nchunks;
  const RowStats rs = merge_chunks(raw_hints.chunks, nchunks);
  const ArgMax am = rs.max;
  if (rs.nan || !isfinite(am.v)) {
    if (t == 0) {
      a.out_token[row] = -1;
      if (a.out_logprob) a.out_logprob[row] = NAN;
    }
    if (t < n_top && top_ids && top_lp) {
      top_ids[t] = -1;
      top_lp[t] = NAN;
    }
    return;
  }
  const double log_z = static_cast<double>(rs.lse.m) + log(static_cast<double>(rs.lse.s));

  // P: penalties on the copy the stats kernel wrote.
  Row src = raw;
  ArgMax pen = am;
  MaxHints src_hints = raw_hints;
  if (penalised) {
    apply_penalties(ws, vocab, p, a.penalty_tokens, a.penalty_counts);
    __syncthreads();
    src = make_row(ws, vocab);
    ArgMax m;
    visit(src, [&](int32_t i, float x) { m.merge(x, i); });
    src_hints.chunks = nullptr;  // the chunk maxima are the raw row's
    src_hints.mine = m;
    src_hints.have_mine = true;
    pen = block_argmax(m, sh);
  }

  int32_t token;
  if (p.temperature < kGreedyTemperature) {
    token = pen.i;
  } else {
    token = sample_filtered(src, p, pen.v, src_hints, sh);
    if (!penalised) raw_hints = src_hints;  // keeps the raw threads' maxima if top-k found them
  }

  if (t == 0) {
    a.out_token[row] = token;
    if (a.out_logprob) {
      // raw[am.i] is am.v: no load when the token is the raw argmax (unpenalised greedy).
      const float x = token == am.i ? am.v : token >= 0 ? raw.p[token] : 0.0f;
      a.out_logprob[row] = token >= 0 ? static_cast<float>(static_cast<double>(x) - log_z) : NAN;
    }
  }
  if (n_top > 0) top_logprobs(raw, n_top, log_z, raw_hints, top_ids, top_lp, sh);
}

// Workspace: [penalised copies: rows x workspace_stride(vocab) floats | chunk statistics: rows x
// chunk_count(vocab) ChunkStat]. The copies take a multiple of 256 bytes, so the statistics start
// 16-byte aligned when the workspace does.
size_t copies_bytes(int32_t rows, int32_t vocab) {
  return static_cast<size_t>(rows) * static_cast<size_t>(workspace_stride(vocab)) * sizeof(float);
}

}  // namespace

size_t sample_workspace_bytes(int32_t rows, int32_t vocab) {
  if (rows <= 0 || vocab <= 0) return 0;
  return copies_bytes(rows, vocab) +
         static_cast<size_t>(rows) * static_cast<size_t>(chunk_count(vocab)) * sizeof(ChunkStat);
}

void sample_rows(const SampleArgs& a, const Launch& launch) {
  if (a.rows <= 0) return;
  if (a.vocab <= 0 || a.logits_stride < a.vocab || a.logits == nullptr || a.row_params == nullptr ||
      a.out_token == nullptr || a.workspace == nullptr || (reinterpret_cast<uintptr_t>(a.workspace) & 15u) != 0) {
    unsupported_config("sample_rows: vocab " + std::to_string(a.vocab) + ", logits stride " +
                       std::to_string(a.logits_stride) +
                       " (needs vocab > 0, stride >= vocab, logits, row params, a 16-byte aligned "
                       "workspace and out_token)");
  }
  const int32_t nchunks = chunk_count(a.vocab);
  const int64_t ws_stride = workspace_stride(a.vocab);
  auto* stats = reinterpret_cast<ChunkStat*>(static_cast<char*>(a.workspace) + copies_bytes(a.rows, a.vocab));
  // Rows on y (at most 65535 there; the kernel loops over the rest), chunks on x.
  const dim3 stats_grid(static_cast<unsigned>(nchunks), static_cast<unsigned>(a.rows < 65535 ? a.rows : 65535));
  launch_kernel("sample_rows (chunk statistics)", sample_row_stats_kernel, stats_grid, dim3(kStatThreads), 0, launch, a,
                ws_stride, stats, nchunks);
  launch_kernel("sample_rows", sample_kernel, dim3(static_cast<unsigned>(a.rows)), dim3(kThreads), 0, launch, a,
                ws_stride, static_cast<const ChunkStat*>(stats), nchunks);
}

}  // namespace inferdesk::cuda
