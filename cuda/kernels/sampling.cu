// GPU sampling (sample_rows): one thread block per logits row, the same pipeline and semantics as
// the CPU Sampler (core/sample/sampler.cpp), with thresholds found by radix select instead of
// sorting.
//
// Per row:
//  A. One pass over the raw logits: maximum with its lowest id, log-sum-exp (for log-probs), NaN
//     check; when the row has penalties it is copied into the workspace on the way.
//  P. Penalties on the copy, one thread per penalty entry (entries are distinct tokens): the CPU's
//     float operations in the CPU's order (repetition, then frequency, then presence).
//  Greedy (temperature < 1e-5): the argmax (lowest id on ties) of the penalised row.
//  Otherwise, v = logit / temperature and w = exp(v - max v) (0 below -87, as the CPU's exp),
//  then filters that only ever compare v (through an order-preserving uint32 key) or w:
//   - min_p: w < min_p dropped;
//   - top-k: when more than k tokens are left, the k-th largest key among them by radix select
//     (counts; three histogram passes); every token with that value is kept (ties kept, as on
//     the CPU). For k <= the block size the select only counts keys above a cheap lower bound
//     of the k-th value (from the threads' maxima), so few tokens touch the histogram;
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
//  same ids of a row, so the float log-sum-exp is bit-identical wherever the row sits.
//
// Passes over a row (V floats, L2-resident after the first): greedy 1 (+1 with penalties: copy
// and argmax); temperature only 2; top-k +3; top-p +3 (+1 when the cut falls inside ties);
// top-N log-probs +4. Shared-memory atomics in the radix passes are the likely hot spot when
// top-p runs without a small top-k (every token's mass lands in few bins).
//
// A row whose raw logits hold NaN or have no finite maximum (all -inf, or +inf) is a backend bug
// the CPU sampler reports as Internal: here its token is -1 and its log-probs NaN, for the caller
// to raise the error.
#include <cuda_runtime.h>
#include <curand_philox4x32_x.h>  // needs cuda_runtime.h first (uint4, __forceinline__)

#include <climits>
#include <cmath>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/sampling_block.cuh"

namespace inferdesk::cuda {
namespace {

using namespace sampling;

constexpr float kGreedyTemperature = 1e-5f;   // SamplingParams::kGreedyTemperature
constexpr float kFixedOne = 17592186044416.0f;  // 2^44: the mass of the most likely token

// Workspace row stride in floats: 64-float (256-byte) rows keep every row 16-byte aligned.
int64_t workspace_stride(int32_t vocab) { return (static_cast<int64_t>(vocab) + 63) / 64 * 64; }

__device__ __forceinline__ u64 fixed_mass(float w) {
  return w > 0.0f ? __float2ull_rz(w * kFixedOne) : 0ull;
}

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
  uint32_t key_k = 0;      // top-k: keys >= key_k survive (0: off)
  bool top_p = false;      // top-p: keys > key_p survive, and key_p itself up to id cut_p
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
  const uint4 ctr = make_uint4(0u, 0u, static_cast<uint32_t>(counter),
                               static_cast<uint32_t>(counter >> 32));
  const uint2 key = make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint4 out = curand_Philox4x32_10(ctr, key);
  return (static_cast<u64>(out.x) << 32) | out.y;
}

// Applies the row's penalty entries to its copy in the workspace (CPU order and rounding).
__device__ void apply_penalties(float* ws, int32_t vocab, const SampleRowDev& p,
                                const int32_t* tokens, const int32_t* counts) {
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
__device__ int32_t nth_with_key(const Row& r, KeyOf key_of, uint32_t key, uint32_t n,
                                BlockShared& sh) {
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
// `mine` is this thread's maximum of the row (over its visit() share; i == INT32_MAX: none).
__device__ int32_t sample_filtered(const Row& src, const SampleRowDev& p, float pmax,
                                   const ArgMax& mine, BlockShared& sh) {
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
    const uint32_t mine_key =
        mine.i == INT32_MAX ? 0u : order_key(__fdiv_rn(mine.v, p.temperature));
    const uint32_t bound = kth_lower_bound(mine_key, p.top_k, sh);
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
            src, [&](float x, uint32_t& key) { float w; return kept.before_top_p(x, key, w); },
            sel.key, static_cast<uint32_t>(take), sh);
      }
    }
  }

  const u64 rnd = philox64(p.seed, p.counter);
  return find_first_exceeding<u64>(
      src, [&](int32_t i, float x) { return kept.mass(i, x); },
      [&](u64 total) { return __umul64hi(rnd, total); }, sh);
}

// The n (1..20) largest raw logits, best first, ties by lower id, as log-probabilities.
// `mine` is this thread's maximum raw logit (see sample_filtered).
__device__ void top_logprobs(const Row& raw, int32_t n, double log_z, const ArgMax& mine,
                             int32_t* out_ids, float* out_lp, BlockShared& sh) {
  const uint32_t bound = kth_lower_bound(mine.i == INT32_MAX ? 0u : order_key(mine.v), n, sh);
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
        raw, [](float x, uint32_t& key) { key = order_key(x); return true; }, sel.key, sel.need,
        sh);
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

__global__ void __launch_bounds__(kThreads, 1)
    sample_kernel(SampleArgs a, int64_t ws_stride) {
  __shared__ BlockShared sh;
  const int row = static_cast<int>(blockIdx.x);
  const SampleRowDev p = a.row_params[row];
  const int32_t vocab = a.vocab;
  const Row raw = make_row(a.logits + static_cast<int64_t>(row) * a.logits_stride, vocab);
  const bool penalised = (p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f ||
                          p.presence_penalty != 0.0f) &&
                         p.penalty_count > 0;
  float* ws = penalised ? static_cast<float*>(a.workspace) + static_cast<int64_t>(row) * ws_stride
                        : nullptr;
  const int t = static_cast<int>(threadIdx.x);
  int32_t* top_ids = a.out_top_ids ? a.out_top_ids + static_cast<int64_t>(row) * kMaxTopLogprobs
                                   : nullptr;
  float* top_lp = a.out_top_logprobs
                      ? a.out_top_logprobs + static_cast<int64_t>(row) * kMaxTopLogprobs
                      : nullptr;
  const int32_t n_top = min(min(p.num_logprobs, kMaxTopLogprobs), vocab);
  // Entries past num_logprobs (all of them for a bad row) are id -1.
  if (t < kMaxTopLogprobs && t >= max(n_top, 0) && top_ids && top_lp) {
    top_ids[t] = -1;
    top_lp[t] = -INFINITY;
  }

  // A: raw statistics (and the copy to penalise).
  ArgMax am;  // this thread's share, then the row's
  Lse lse;
  bool nan = false;
  visit(raw, [&](int32_t i, float x) {
    if (x != x) {
      nan = true;
      return;
    }
    if (ws) ws[i] = x;
    am.merge(x, i);
    lse.add(x);
  });
  const ArgMax mine_raw = am;
  am = block_argmax(am, sh);
  lse = block_lse(lse, sh);
  nan = __syncthreads_or(nan) != 0;
  if (nan || !isfinite(am.v)) {
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
  const double log_z = static_cast<double>(lse.m) + log(static_cast<double>(lse.s));

  // P: penalties (the copy's writes are visible after the reductions' barriers).
  Row src = raw;
  ArgMax pen = am, mine_pen = mine_raw;
  if (penalised) {
    apply_penalties(ws, vocab, p, a.penalty_tokens, a.penalty_counts);
    __syncthreads();
    src = make_row(ws, vocab);
    ArgMax m;
    visit(src, [&](int32_t i, float x) { m.merge(x, i); });
    mine_pen = m;
    pen = block_argmax(m, sh);
  }

  int32_t token;
  if (p.temperature < kGreedyTemperature) {
    token = pen.i;
  } else {
    token = sample_filtered(src, p, pen.v, mine_pen, sh);
  }

  if (t == 0) {
    a.out_token[row] = token;
    if (a.out_logprob) {
      a.out_logprob[row] =
          token >= 0 ? static_cast<float>(static_cast<double>(raw.p[token]) - log_z) : NAN;
    }
  }
  if (n_top > 0) top_logprobs(raw, n_top, log_z, mine_raw, top_ids, top_lp, sh);
}

}  // namespace

size_t sample_workspace_bytes(int32_t rows, int32_t vocab) {
  if (rows <= 0 || vocab <= 0) return 0;
  return static_cast<size_t>(rows) * static_cast<size_t>(workspace_stride(vocab)) * sizeof(float);
}

void sample_rows(const SampleArgs& a, cudaStream_t stream) {
  if (a.rows <= 0) return;
  if (a.vocab <= 0 || a.logits_stride < a.vocab || a.logits == nullptr ||
      a.row_params == nullptr || a.out_token == nullptr || a.workspace == nullptr) {
    unsupported_config("sample_rows: vocab " + std::to_string(a.vocab) + ", logits stride " +
                       std::to_string(a.logits_stride) +
                       " (needs vocab > 0, stride >= vocab, logits, row params, workspace and "
                       "out_token)");
  }
  sample_kernel<<<a.rows, kThreads, 0, stream>>>(a, workspace_stride(a.vocab));
  check_launch("sample_rows");
}

}  // namespace inferdesk::cuda
