// Paged attention for decode steps (one query row per sequence), flash-decoding style.
//
// Split kernel: one thread block per (sequence, kv head [x head chunk], split) serves all query
// heads of the kv group (up to 8 at a time), so each K/V byte is read once per group. A key's
// head_dim values are read by D/8 lanes with one 16-byte load each (a "lane group"); a warp thus
// reads 32/(D/8) consecutive keys (512 contiguous bytes) per load instruction, kUnroll of them
// back to back. Every lane group runs its own online softmax over the keys it reads (no
// synchronisation in the main loop); the streams are merged at the end with warp shuffles and then
// across warps through shared memory.
//
// The split's key range is derived on the device from the sequence's context_len (num_splits is
// fixed by the caller so the launch can be captured in a CUDA graph): the visible keys (the
// sliding window, if any) are cut into ns = min(num_splits, ceil(visible / min_keys_per_split))
// ranges of equal length rounded up to whole blocks, so a short context is not spread thinly over
// many blocks; blocks of splits >= ns exit at once. With ns == 1 the block writes `out` directly.
// Otherwise each block writes its partial (output and base-2 LSE) to the workspace and counts
// itself in an arrival counter of its (sequence, head chunk); the last block to arrive merges the
// ns partials with log-sum-exp weights, writes `out` and sets the counter back to zero (so the
// caller's split_counters, zero before the first launch, stay zero between launches and replays).
//
// K/V loading (PagedAttentionArgs::decode_load, launch_split): for grids of many blocks each warp
// streams its iterations through a 3-stage cp.async pipeline in shared memory (two iterations in
// flight while one is scored, no registers held); for a few blocks (batch 1) each iteration's K/V
// go straight into registers, one iteration at a time, which leaves the SM's shared memory to the
// neighbouring kernels (small_grid_load picks the load for Auto's grids of few blocks). DecodeLoad::Mma
// (large_grid_load picks it for Auto's grids of many blocks) runs the tensor-core kernel of
// attention_decode_mma.cu instead, over the same grid, splits, partials and arrival counters
// (attention_decode_common.cuh); where it does not apply (head_dim 32 or 256, an unaligned cache)
// the Pipelined split kernel serves the launch.
//
// An E4M3 cache (KvChunk<uint8_t>) runs the same kernels with 8-byte chunks (a lane's 8 dims of
// a key), dequantized in registers; the layer's K scale is folded into q's scale, the V scale
// applied to the block's output.
//
// Launched with PDL (launch_kernel): a block reads the step metadata and the block ids of its first
// keys, then waits for the previous kernel (q, K/V) before reading anything else or writing.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/attention_decode_common.cuh"
#include "cuda/kernels/kv_fp8.cuh"

namespace inferdesk::cuda {
namespace {

using namespace attn;

// A lane's 8 dims of one key, per cache element type KV: the chunk type, its loads (into
// registers; asynchronously into shared memory, zero-filled where !valid) and its values.
template <typename KV>
struct KvChunk;

template <>
struct KvChunk<bf16> {
  using T = uint4;
  __device__ static T load(const void* cache, int64_t off, bool vec) {
    return load8_bf16(static_cast<const bf16*>(cache) + off, vec);
  }
  __device__ static void copy_async(T* smem, const void* cache, int64_t off, bool valid) {
    cp_async_16_ordered(smem, static_cast<const bf16*>(cache) + off, valid);
  }
  __device__ static void unpack(const T& c, float (&f)[8]) { unpack_bf16x8(c, f); }
};

template <>
struct KvChunk<uint8_t> {
  using T = uint2;
  __device__ static T load(const void* cache, int64_t off, bool vec) {
    const uint8_t* p = static_cast<const uint8_t*>(cache) + off;
    if (vec) return __ldg(reinterpret_cast<const uint2*>(p));
    uint32_t w[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i / 4] |= static_cast<uint32_t>(p[i]) << (8 * (i % 4));
    return make_uint2(w[0], w[1]);
  }
  __device__ static void copy_async(T* smem, const void* cache, int64_t off, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(smem_addr(smem)),
                 "l"(static_cast<const uint8_t*>(cache) + off), "r"(valid ? 8 : 0)
                 : "memory");
  }
  __device__ static void unpack(const T& c, float (&f)[8]) { unpack_e4m3x8(c, f); }
};

template <typename KV, int D, int GC, int S>
struct DecodeTile {
  using Chunk = typename KvChunk<KV>::T;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kLanesPerKey = D / 8;              // 4, 8, 16, 32
  static constexpr int kKeysPerLoad = 32 / kLanesPerKey;  // keys one warp load instruction covers
  // K and V chunks per thread and iteration (an E4M3 chunk is 8 bytes, half a BF16 one).
  static constexpr int kUnroll = GC >= 8 ? 2 : 4;
  static constexpr int kKeysPerWarpIter = kKeysPerLoad * kUnroll;
  static constexpr int kKeysPerIter = kKeysPerWarpIter * kWarps;
  // Iterations whose K/V are in shared memory at once (kStages - 1 in flight while one is scored);
  // 0: no pipeline, K/V loaded into registers one iteration at a time (see the kernel).
  static constexpr int kStages = S;
  // Shared memory: the K/V pipeline [stage][K, V][u][thread] of chunks, reused after the
  // main loop for the per-warp accumulators [warp][head][dim] of the block's merge.
  static constexpr size_t kPipeBytes = size_t{kStages} * 2 * kUnroll * kThreads * sizeof(Chunk);
  static constexpr size_t kAccBytes = size_t{kWarps} * GC * D * sizeof(float);
  static constexpr size_t kSmemBytes = kPipeBytes > kAccBytes ? kPipeBytes : kAccBytes;
};

// Upper bound of the kernel's static shared memory (s_m, s_l, s_last).
constexpr size_t kDecodeStaticSmemBound = 1024;

// S: the pipeline's stages (DecodeTile::kStages; 0: registers).
template <typename KV, int D, int GC, int S>
__global__ void __launch_bounds__(DecodeTile<KV, D, GC, S>::kThreads) paged_decode_split_kernel(const DecodeParams p) {
  using C = DecodeTile<KV, D, GC, S>;
  using KC = KvChunk<KV>;
  using Chunk = typename C::Chunk;
  constexpr int LPK = C::kLanesPerKey;
  constexpr int U = C::kUnroll;
  extern __shared__ uint4 s_dyn[];  // C::kSmemBytes: the K/V pipeline, then the accumulators
  __shared__ float s_m[C::kWarps][GC];
  __shared__ float s_l[C::kWarps][GC];
  __shared__ int s_last;

  const PagedAttentionArgs& a = p.a;
  // Step metadata and block ids are read before pdl_wait(); q, the cache and the partials only
  // after it.
  const DecodeBlock blk = decode_block(p, GC);
  const SplitRange& range = blk.range;
  if (blk.split >= range.splits) return;  // a split this context does not use: nothing to do
  const int hk = blk.hk, seq = blk.seq, split = blk.split, nh = blk.nh, head0 = blk.head0;
  const int qlen = blk.qlen, row = blk.row;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int li = lane % LPK;  // which 8 dims of the head this lane holds
  const int lg = lane / LPK;  // which key of a load this lane group reads

  const int32_t* bt = blk.bt;
  const int lo = range.lo, end = range.end;
  const int log2_bs = p.log2_bs;
  // Block ids of this lane's U keys of the warp iteration starting at `base` (-1: masked).
  auto fetch_ids = [&](int base, int(&ids)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int key = base + u * C::kKeysPerLoad + lg;
      ids[u] = key >= lo && key < end ? bt[key >> log2_bs] : -1;
    }
  };
  const int base = range.start + warp * C::kKeysPerWarpIter;
  // While the previous kernel finishes, pull the K/V of the split's first two iterations into L2
  // (all of a short context's split).
  if (qlen > 0)
    prefetch_kv_l2<KV, D, C::kThreads>(a, bt, hk, max(range.start, lo), min(end, range.start + 2 * C::kKeysPerIter),
                                       log2_bs, tid);

  pdl_wait();  // q and this step's K/V come from the previous kernel
  pdl_launch_dependents();
  if (qlen <= 0) return;  // no row to write

  // q (scale and log2(e) folded in) for this lane's 8 dims of each served head.
  float q[GC][8];
#pragma unroll
  for (int h = 0; h < GC; ++h) {
    const bf16* qp = a.q + static_cast<int64_t>(row) * a.q_stride + static_cast<int64_t>(head0 + h) * D + li * 8;
#pragma unroll
    for (int i = 0; i < 8; ++i) q[h][i] = h < nh ? __bfloat162float(qp[i]) * p.scale_log2 : 0.0f;
  }
  float m[GC], l[GC], acc[GC][8];
#pragma unroll
  for (int h = 0; h < GC; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;
  }

  // One iteration's scoring and accumulation of the keys in kr/vr (ids: which are visible).
  auto consume = [&](int it_base, const Chunk(&kr)[U], const Chunk(&vr)[U]) {
    float sc[U][GC];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int key = it_base + u * C::kKeysPerLoad + lg;
      const bool valid = key >= lo && key < end;
      float k[8];
      KC::unpack(kr[u], k);
#pragma unroll
      for (int h = 0; h < GC; ++h) {
        float d = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) d = fmaf(q[h][i], k[i], d);
#pragma unroll
        for (int o = LPK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        sc[u][h] = valid ? d : -INFINITY;
      }
    }
#pragma unroll
    for (int h = 0; h < GC; ++h) {
      float mx = m[h];
#pragma unroll
      for (int u = 0; u < U; ++u) mx = fmaxf(mx, sc[u][h]);
      const float m_use = mx == -INFINITY ? 0.0f : mx;
      const float corr = fast_exp2(m[h] - m_use);
      m[h] = mx;
      l[h] *= corr;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[h][i] *= corr;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float pu = fast_exp2(sc[u][h] - m_use);
        l[h] += pu;
        float v[8];
        KC::unpack(vr[u], v);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[h][i] = fmaf(pu, v[i], acc[h][i]);
      }
    }
  };

  // The register paths: this lane's K/V chunks of the U keys of the warp iteration at it_base
  // (masked keys: zeros, nothing read).
  auto load_regs = [&](int it_base, const int(&ids)[U], Chunk(&kr)[U], Chunk(&vr)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int key = it_base + u * C::kKeysPerLoad + lg;
      if (ids[u] >= 0) {
        const int64_t off = cache_offset(ids[u], a.num_kv_heads, hk, key, log2_bs, D) + li * 8;
        kr[u] = KC::load(a.k_cache, off, p.kv_vec);
        vr[u] = KC::load(a.v_cache, off, p.kv_vec);
      } else {
        kr[u] = vr[u] = Chunk{};
      }
    }
  };
  const int iters = base < end ? (end - base + C::kKeysPerIter - 1) / C::kKeysPerIter : 0;
  if constexpr (S > 0) {
    // Stage st's slot of this thread's u-th K (kv 0) or V (kv 1) chunk: every thread reads back only
    // what it copied itself, so cp.async.wait_group alone orders the copy before the read.
    auto slot = [&](int st, int kv, int u) -> Chunk* {
      return reinterpret_cast<Chunk*>(s_dyn) + ((st * 2 + kv) * U + u) * C::kThreads + threadIdx.x;
    };
    // Starts the copies of the K/V chunks of this lane's U keys of the warp iteration at `base` into
    // stage st (masked keys: zeros, nothing read).
    auto issue = [&](int st, int base, const int(&ids)[U]) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int key = base + u * C::kKeysPerLoad + lg;
        const bool valid = ids[u] >= 0;
        const int64_t off = valid ? cache_offset(ids[u], a.num_kv_heads, hk, key, log2_bs, D) + li * 8 : 0;
        if (p.kv_vec) {
          KC::copy_async(slot(st, 0, u), a.k_cache, off, valid);
          KC::copy_async(slot(st, 1, u), a.v_cache, off, valid);
        } else {  // unaligned cache: plain copies, complete before the stage is read
          *slot(st, 0, u) = valid ? KC::load(a.k_cache, off, false) : Chunk{};
          *slot(st, 1, u) = valid ? KC::load(a.v_cache, off, false) : Chunk{};
        }
      }
    };
    // The warp's iterations go through an S-deep cp.async pipeline in shared memory: while
    // iteration j is scored, the K/V of iterations j + 1 .. j + S - 1 are in flight without holding
    // registers. For grids of many blocks (bandwidth-bound); see launch_split for the choice.
    auto issue_iter = [&](int j) {
      if (j < iters) {
        int ids[U];
        fetch_ids(base + j * C::kKeysPerIter, ids);
        issue(j % S, base + j * C::kKeysPerIter, ids);
      }
      cp_async_commit();  // an empty group past the end keeps the wait count uniform
    };
#pragma unroll
    for (int j = 0; j < S - 1; ++j) issue_iter(j);
    for (int j = 0; j < iters; ++j) {
      issue_iter(j + S - 1);   // into the stage iteration j - 1 was read from
      cp_async_wait<S - 1>();  // iteration j has landed
      Chunk kr[U], vr[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        kr[u] = *slot(j % S, 0, u);
        vr[u] = *slot(j % S, 1, u);
      }
      consume(base + j * C::kKeysPerIter, kr, vr);
    }
    cp_async_wait<0>();
  } else {
    // Registers only, one iteration's K/V at a time; the block ids of the next iteration are
    // fetched while this one is scored. Few blocks (latency-bound): no shared memory to carve out.
    // (Double-buffered K/V registers measured no faster for grids of few blocks and slower for
    // many: docs/PERF.md.)
    int ids[U];
    if (iters > 0) fetch_ids(base, ids);
    for (int j = 0; j < iters; ++j) {
      const int it_base = base + j * C::kKeysPerIter;
      Chunk kr[U], vr[U];
      load_regs(it_base, ids, kr, vr);
      int next_ids[U];
      if (j + 1 < iters) fetch_ids(it_base + C::kKeysPerIter, next_ids);
      consume(it_base, kr, vr);
      if (j + 1 < iters) {
#pragma unroll
        for (int u = 0; u < U; ++u) ids[u] = next_ids[u];
      }
    }
  }
  __syncthreads();  // every warp is done with the pipeline: its memory holds the accumulators next
  float(*s_acc)[GC][D] = reinterpret_cast<float(*)[GC][D]>(s_dyn);

  // Merge the lane groups of the warp (lanes li, li + LPK, ... hold the same dims).
#pragma unroll
  for (int off = LPK; off < 32; off <<= 1) {
#pragma unroll
    for (int h = 0; h < GC; ++h) {
      const float m_o = __shfl_xor_sync(0xffffffffu, m[h], off);
      const float l_o = __shfl_xor_sync(0xffffffffu, l[h], off);
      const float mx = fmaxf(m[h], m_o);
      const float m_use = mx == -INFINITY ? 0.0f : mx;
      const float f_s = fast_exp2(m[h] - m_use), f_o = fast_exp2(m_o - m_use);
      l[h] = l[h] * f_s + l_o * f_o;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[h][i] = acc[h][i] * f_s + __shfl_xor_sync(0xffffffffu, acc[h][i], off) * f_o;
      m[h] = mx;
    }
  }
  if (lg == 0) {
    const float vs = std::is_same_v<KV, bf16> ? 1.0f : p.v_scale;  // the merges after are linear in it
#pragma unroll
    for (int h = 0; h < GC; ++h) {
#pragma unroll
      for (int i = 0; i < 8; ++i) s_acc[warp][h][li * 8 + i] = acc[h][i] * vs;
      if (li == 0) {
        s_m[warp][h] = m[h];
        s_l[warp][h] = l[h];
      }
    }
  }
  __syncthreads();

  finish_decode_block<D, GC, C::kWarps, C::kThreads>(p, &s_acc[0][0][0], &s_m[0][0], &s_l[0][0], s_last, seq, row,
                                                     head0, nh, split, range.splits);
}

// At most this many splits.
constexpr int32_t kMaxSplits = 4096;

// Where the partials live in the workspace.
constexpr size_t kLseAlign = 256;
size_t partial_out_bytes(int64_t num_seqs, int64_t num_heads, int64_t head_dim, int64_t num_splits) {
  const size_t b = static_cast<size_t>(num_seqs * num_heads * num_splits * head_dim) * sizeof(float);
  return (b + kLseAlign - 1) / kLseAlign * kLseAlign;
}

template <typename KV, int D, int GC, int S>
void launch_split_s(const DecodeParams& p, dim3 grid, const Launch& launch) {
  constexpr size_t smem = DecodeTile<KV, D, GC, S>::kSmemBytes;
  allow_dynamic_smem<paged_decode_split_kernel<KV, D, GC, S>>(smem, "paged_attention_decode", kDecodeStaticSmemBound);
  launch_kernel("paged_attention_decode (split)", paged_decode_split_kernel<KV, D, GC, S>, grid,
                dim3(DecodeTile<KV, D, GC, S>::kThreads), smem, launch, p);
}
// The shared-memory pipeline (3 stages: 48 KB for D 128 with 4 heads per block, 4 blocks of 128
// registers per SM) pays once the grid has many blocks; for a few blocks (batch 1) the register
// path is as fast alone and faster inside the engine: the pipeline's shared memory competes with
// the neighbouring GEMVs' L1 and residency under PDL. 3 stages beat 4 (3 blocks per SM) and the
// register path for grids of many blocks: docs/PERF.md.
constexpr int kDecodeStages = 3;
constexpr int64_t kDecodePipeMinBlocks = 128;  // sequences x kv heads x head chunks

// p.a.decode_load is resolved (not Auto) by paged_attention_decode.
template <typename KV, int D, int GC>
void launch_split(const DecodeParams& p, dim3 grid, const Launch& launch) {
  switch (p.a.decode_load) {
    case DecodeLoad::Pipelined: launch_split_s<KV, D, GC, kDecodeStages>(p, grid, launch); break;
    default: launch_split_s<KV, D, GC, 0>(p, grid, launch); break;
  }
}

template <typename KV, int D>
void launch_split_d(const DecodeParams& p, int gc, dim3 grid, const Launch& launch) {
  switch (gc) {
    case 1: launch_split<KV, D, 1>(p, grid, launch); break;
    case 2: launch_split<KV, D, 2>(p, grid, launch); break;
    case 4: launch_split<KV, D, 4>(p, grid, launch); break;
    default: launch_split<KV, D, 8>(p, grid, launch); break;
  }
}

template <typename KV>
void launch_split_kv(const DecodeParams& p, int gc, dim3 grid, const Launch& launch) {
  switch (p.a.head_dim) {
    case 32: launch_split_d<KV, 32>(p, gc, grid, launch); break;
    case 64: launch_split_d<KV, 64>(p, gc, grid, launch); break;
    case 128: launch_split_d<KV, 128>(p, gc, grid, launch); break;
    default: launch_split_d<KV, 256>(p, gc, grid, launch); break;
  }
}

}  // namespace

size_t decode_workspace_bytes(int32_t num_seqs, int32_t num_heads, int32_t head_dim, int32_t num_splits) {
  if (num_splits <= 1 || num_seqs <= 0 || num_heads <= 0 || head_dim <= 0) return 0;
  const size_t lse = static_cast<size_t>(int64_t{num_seqs} * num_heads * num_splits) * sizeof(float);
  return partial_out_bytes(num_seqs, num_heads, head_dim, num_splits) + lse;
}

void paged_attention_decode(const PagedAttentionArgs& a, const Launch& launch) {
  check_attention_args(a, "paged_attention_decode");
  if (a.num_seqs <= 0) return;
  if (a.num_splits < 1 || a.num_splits > kMaxSplits)
    unsupported_config("paged_attention_decode: num_splits " + std::to_string(a.num_splits) + " (1.." +
                       std::to_string(kMaxSplits) + ")");
  if (a.min_keys_per_split < 1)
    unsupported_config("paged_attention_decode: min_keys_per_split " + std::to_string(a.min_keys_per_split));
  if (a.num_splits > 1 && (a.workspace == nullptr || a.split_counters == nullptr))
    unsupported_config("paged_attention_decode: num_splits > 1 needs a workspace and split counters");
  DecodeParams p;
  p.a = a;
  p.group = a.num_heads / a.num_kv_heads;
  // Heads served per thread block: the smallest of 1, 2, 4, 8 that covers the group, at most
  // max_heads_per_block; larger groups are cut into chunks (each chunk reads the K/V of its kv head
  // again). Under Auto a grid of few blocks may take smaller chunks (small_grid_heads_per_block).
  auto pow2_cap = [](int32_t n) { return n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1; };
  if (a.max_heads_per_block < 1 || a.small_grid_heads_per_block < 1)
    unsupported_config("paged_attention_decode: heads per block must be >= 1");
  int gc = std::min(p.group <= 1 ? 1 : p.group <= 2 ? 2 : p.group <= 4 ? 4 : 8, pow2_cap(a.max_heads_per_block));
  // Auto: a grid of few (sequence, kv head, head chunk) blocks loads K/V into registers and may
  // take smaller head chunks; decided on the chunks before that reduction, so the smaller chunks
  // never tip the grid into the shared-memory pipeline (which next to the GEMVs of a small batch
  // cost a quarter of the engine's speed at batch 8 with long contexts: docs/PERF.md).
  // The Mma kernel serves up to kDecodeMmaMaxHeads heads per block (two mma n-blocks of 8); a
  // max_heads_per_block below 8 (the other kernels' most) caps it too.
  int32_t mma_cap = a.max_heads_per_block >= 8 ? kDecodeMmaMaxHeads : a.max_heads_per_block;
  if (a.decode_load == DecodeLoad::Auto) {
    if (a.large_grid_load == DecodeLoad::Auto)
      unsupported_config("paged_attention_decode: large_grid_load must not be Auto");
    const bool small = int64_t{a.num_seqs} * a.num_kv_heads * ((p.group + gc - 1) / gc) < kDecodePipeMinBlocks;
    if (small) {
      gc = std::min(gc, pow2_cap(a.small_grid_heads_per_block));
      mma_cap = std::min(mma_cap, a.small_grid_heads_per_block);
    }
    p.a.decode_load = small ? a.small_grid_load : a.large_grid_load;
  }
  p.log2_bs = log2_pow2(a.block_size);
  // An E4M3 cache's scales: K's multiplies every score, V's every output.
  p.scale_log2 = a.scale * kLog2e * (a.kv.fp8() ? a.kv.k_scale : 1.0f);
  p.v_scale = a.kv.fp8() ? a.kv.v_scale : 1.0f;
  p.kv_vec = aligned_to(a.k_cache, 16) && aligned_to(a.v_cache, 16);
  p.q_vec2 = aligned_to(a.q, 4) && a.q_stride % 2 == 0;
  // Mma where the tensor-core kernel implements the arguments (decode_mma_supported: head_dim 64
  // or 128, 16-byte aligned cache), else the Pipelined split kernel.
  if (p.a.decode_load == DecodeLoad::Mma) {
    if (decode_mma_supported(p))
      gc = std::min(p.group, mma_cap);
    else
      p.a.decode_load = DecodeLoad::Pipelined;
  }
  p.heads_per_block = gc;
  p.head_chunks = (p.group + gc - 1) / gc;
  if (a.num_splits > 1) {
    char* ws = static_cast<char*>(a.workspace);
    p.partial_out = reinterpret_cast<float*>(ws);
    p.partial_lse = reinterpret_cast<float*>(ws + partial_out_bytes(a.num_seqs, a.num_heads, a.head_dim, a.num_splits));
    p.counters = a.split_counters;
  }
  const dim3 grid(static_cast<unsigned>(a.num_kv_heads * p.head_chunks), static_cast<unsigned>(a.num_splits),
                  static_cast<unsigned>(a.num_seqs));
  if (p.a.decode_load == DecodeLoad::Mma) {
    launch_decode_mma(p, grid, launch);
    return;
  }
  if (a.kv.fp8())
    launch_split_kv<uint8_t>(p, gc, grid, launch);
  else
    launch_split_kv<bf16>(p, gc, grid, launch);
}

}  // namespace inferdesk::cuda
