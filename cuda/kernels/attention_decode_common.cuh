// Shared by the two paged decode kernels (attention_decode.cu: the CUDA-core split kernel;
// attention_decode_mma.cu: the tensor-core one): their parameters, the key range of a split, the L2
// prefetch of a split's first keys before pdl_wait(), and the end of a block (the per-warp results
// merged, `out` or the partial written, the arrival count and the last split's merge of the
// partials). Not part of the public contract (attention.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/attention_common.cuh"

namespace inferdesk::cuda::attn {

struct DecodeParams {
  PagedAttentionArgs a;
  int32_t group = 1;            // query heads per kv head
  int32_t head_chunks = 1;      // ceil(group / heads_per_block)
  int32_t heads_per_block = 8;  // query heads of one kv group a block serves (the split kernel's GC)
  int32_t log2_bs = 4;
  float scale_log2 = 1;          // scale * log2(e) (* the K scale of an E4M3 cache)
  float v_scale = 1;             // the V scale of an E4M3 cache (1 for BF16)
  bool kv_vec = true;            // cache 16-byte aligned
  bool q_vec2 = true;            // q rows 4-byte aligned: a pair of bf16 per load (Mma kernel)
  float* partial_out = nullptr;  // [num_seqs][num_heads][num_splits][D]; null: write out directly
  float* partial_lse = nullptr;  // [num_seqs][num_heads][num_splits], base-2 log-sum-exp
  int32_t* counters = nullptr;   // [num_seqs][gridDim.x] arrival counters (args.split_counters)
};

// The key range [start, end) of `split` and the first visible key `lo` of a sequence whose query
// sits at position ctx - 1. Empty when start >= end.
struct SplitRange {
  int lo = 0, start = 0, end = 0;
  int splits = 1;  // splits in use for this sequence (<= num_splits); split >= splits: no work
};
__device__ __forceinline__ SplitRange split_range(int ctx, int window, int num_splits, int split, int log2_bs,
                                                  int min_keys) {
  SplitRange r;
  if (ctx <= 0) return r;
  r.lo = window > 0 ? max(0, ctx - window) : 0;
  const int lo_al = r.lo >> log2_bs << log2_bs;
  const int span = ctx - lo_al;
  r.splits = max(1, min(num_splits, (span + min_keys - 1) / min_keys));
  // With per rounded up to whole blocks the last splits in use can be empty (start clamped to
  // ctx): they write an empty partial (LSE -inf) and still count as arrived.
  int per = (span + r.splits - 1) / r.splits;
  per = ((per + (1 << log2_bs) - 1) >> log2_bs) << log2_bs;
  const int64_t start = lo_al + static_cast<int64_t>(split) * per;
  r.start = static_cast<int>(min(start, static_cast<int64_t>(ctx)));
  r.end = min(ctx, r.start + per);
  return r;
}

// What a decode block serves (grid: x = kv head x head chunk, y = split, z = sequence) and its
// sequence's step metadata. The metadata is uploaded before the step's first kernel and no kernel
// writes it, so it is read before pdl_wait() (the four loads go out together).
struct DecodeBlock {
  int hk = 0;     // kv head
  int h0 = 0;     // first head of the group served here
  int nh = 0;     // heads served: h0 .. h0 + nh - 1 of the group
  int head0 = 0;  // query head index of h0
  int split = 0, seq = 0;
  int qlen = 0, row = 0;        // query_len and query_start of the sequence
  int ctx = 0;                  // its context length (keys, this step's included)
  const int32_t* bt = nullptr;  // its block table
  SplitRange range;             // of this split; split >= range.splits: nothing to do
};
__device__ __forceinline__ DecodeBlock decode_block(const DecodeParams& p, int heads_per_block) {
  const PagedAttentionArgs& a = p.a;
  DecodeBlock b;
  b.hk = blockIdx.x / p.head_chunks;
  b.h0 = (blockIdx.x % p.head_chunks) * heads_per_block;
  b.nh = min(heads_per_block, p.group - b.h0);
  b.head0 = b.hk * p.group + b.h0;
  b.split = blockIdx.y;
  b.seq = blockIdx.z;
  b.qlen = a.query_len[b.seq];
  b.ctx = a.context_len[b.seq];
  b.row = a.query_start[b.seq];
  b.bt = a.block_tables + a.block_table_start[b.seq];
  b.range = split_range(b.ctx, a.sliding_window, a.num_splits, b.split, p.log2_bs, a.min_keys_per_split);
  return b;
}

// cp.async of one 16-byte chunk (zero-filled when !valid) with a memory clobber: a thread rewrites
// a stage it has just read, and the compiler must not move those shared-memory reads past it.
__device__ __forceinline__ void cp_async_16_ordered(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(valid ? 16 : 0)
               : "memory");
}

// Pulls the K/V of keys [first, last) of kv head hk into L2 (threads tid, tid + kThreads, ... of
// the block), meant for the split's first keys while the previous kernel finishes (before
// pdl_wait()). That kernel writes only this step's own key; L2 is the point of coherence, so a line
// prefetched before the write is updated by it, and the loads after pdl_wait() hit L2 instead of
// DRAM.
// KV: the cache's element type (bf16, or uint8_t for E4M3).
template <typename KV, int D, int kThreads>
__device__ __forceinline__ void prefetch_kv_l2(const PagedAttentionArgs& a, const int32_t* bt, int hk, int first,
                                               int last, int log2_bs, int tid) {
  constexpr int kKeyBytes = D * static_cast<int>(sizeof(KV));
  constexpr int kLinesPerKey = kKeyBytes >= 128 ? kKeyBytes / 128 : 1;  // 128-byte lines
  const auto* kc = static_cast<const char*>(a.k_cache);
  const auto* vc = static_cast<const char*>(a.v_cache);
  for (int idx = tid; idx < (last - first) * kLinesPerKey; idx += kThreads) {
    const int key = first + idx / kLinesPerKey;
    const int64_t off = cache_offset(bt[key >> log2_bs], a.num_kv_heads, hk, key, log2_bs, D) * sizeof(KV) +
                        (idx % kLinesPerKey) * 128;
    asm volatile("prefetch.global.L2 [%0];" ::"l"(kc + off));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(vc + off));
  }
}

// The end of a decode block, after its kWarps warps stored (and a __syncthreads published) their
// online-softmax state of each served head h < nh: s_m[w * GC + h] (base-2 running max),
// s_l[w * GC + h] (sum of exponentials) and s_acc[(w * GC + h) * D + d] (unnormalised output).
// Merges the warps (thread e: head e / D, dim e % D); with one split in use writes `out`, else the
// block's partial and LSE, counts the block in its (sequence, head chunk) arrival counter, and the
// last block to arrive merges the `splits` partials into `out` and resets the counter to zero.
// Every thread of the block must call it (it synchronises).
template <int D, int GC, int kWarps, int kThreads>
__device__ __forceinline__ void finish_decode_block(const DecodeParams& p, const float* s_acc, const float* s_m,
                                                    const float* s_l, int& s_last, int seq, int row, int head0, int nh,
                                                    int split, int splits) {
  const PagedAttentionArgs& a = p.a;
  const int tid = threadIdx.x;
  const bool partial = splits > 1;
  const int64_t pidx0 = (static_cast<int64_t>(seq) * a.num_heads + head0) * a.num_splits;
  auto out_at = [&](int h, int d) -> bf16& {
    return a.out[static_cast<int64_t>(row) * a.out_stride + static_cast<int64_t>(head0 + h) * D + d];
  };
  for (int e = tid; e < GC * D; e += kThreads) {
    const int h = e / D, d = e % D;
    if (h >= nh) break;  // e grows, so every later e is past nh too
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_m[w * GC + h]);
    const float m_use = mx == -INFINITY ? 0.0f : mx;
    float sum = 0.0f, val = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = fast_exp2(s_m[w * GC + h] - m_use);
      sum += s_l[w * GC + h] * f;
      val += s_acc[(w * GC + h) * D + d] * f;
    }
    const float res = sum > 0.0f ? val / sum : 0.0f;
    if (!partial) {
      out_at(h, d) = __float2bfloat16(res);
    } else {
      const int64_t idx = pidx0 + static_cast<int64_t>(h) * a.num_splits + split;
      p.partial_out[idx * D + d] = res;
      if (d == 0) p.partial_lse[idx] = sum > 0.0f ? mx + __log2f(sum) : -INFINITY;
    }
  }
  if (!partial) return;

  // Arrival: the last of the sequence's splits for this head chunk merges them all.
  __threadfence();  // this block's partials are visible device-wide before it is counted
  __syncthreads();
  if (tid == 0) {
    int32_t* ctr = p.counters + static_cast<int64_t>(seq) * gridDim.x + blockIdx.x;
    const int prev = atomicAdd(ctr, 1);
    s_last = prev == splits - 1;
    if (s_last) *ctr = 0;  // every split of this launch has arrived: ready for the next launch
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  for (int e = tid; e < GC * D; e += kThreads) {
    const int h = e / D, d = e % D;
    if (h >= nh) break;
    const int64_t i0 = pidx0 + static_cast<int64_t>(h) * a.num_splits;
    float mx = -INFINITY;
    for (int s2 = 0; s2 < splits; ++s2) mx = fmaxf(mx, __ldcg(p.partial_lse + i0 + s2));
    const float m_use = mx == -INFINITY ? 0.0f : mx;
    float sum = 0.0f, val = 0.0f;
#pragma unroll 4
    for (int s2 = 0; s2 < splits; ++s2) {
      const float w = fast_exp2(__ldcg(p.partial_lse + i0 + s2) - m_use);
      const float x = __ldcg(p.partial_out + (i0 + s2) * D + d);
      if (w > 0.0f) {  // an empty partial (no visible key) never enters the sum
        sum += w;
        val += w * x;
      }
    }
    out_at(h, d) = __float2bfloat16(sum > 0.0f ? val / sum : 0.0f);
  }
}

// The tensor-core kernel (attention_decode_mma.cu). It serves up to kDecodeMmaMaxHeads query heads
// per block (two mma n-blocks of 8); decode_mma_supported says whether it implements these arguments
// (head_dim 64 or 128, 16-byte aligned cache); paged_attention_decode falls back to the Pipelined
// split kernel otherwise. p is complete (heads_per_block, head_chunks, partials) and grid is the
// split kernel's.
constexpr int32_t kDecodeMmaMaxHeads = 16;
bool decode_mma_supported(const DecodeParams& p);
void launch_decode_mma(const DecodeParams& p, dim3 grid, const Launch& launch);

}  // namespace inferdesk::cuda::attn
