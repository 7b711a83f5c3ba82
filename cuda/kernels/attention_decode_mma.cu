// Paged attention for decode steps on tensor cores (DecodeLoad::Mma): the split kernel's grid and
// semantics (attention_decode.cu: one block per (sequence, kv head [x head chunk], split), the
// same split_range, partials, base-2 LSE and arrival counters, attention_decode_common.cuh) with
// mma.sync m16n8k16 BF16 (F32 accumulate) doing the dot products, so that a block issues a few
// instructions per tile of 16 keys instead of an FMA, an unpack and a shuffle per value: for grids
// of many blocks the kernel is bound by the K/V reads.
//
// Transposed products, so that a kv group of up to 8 heads fills the mma exactly: the 16 keys of a
// tile are the M rows and the heads of the block's head chunk the N columns (NB n-blocks of 8:
// 8 heads per block, or 16 for larger groups; columns past the heads served have q = 0 and are
// never stored). Per tile, S^T = K Q^T (K as the A operand by ldmatrix, exactly as the prefill
// kernel loads Q; Q^T as the B operand, held in registers for the whole loop), scale * log2(e)
// applied to S^T, keys past `end` masked to -inf, an online softmax per head in registers with
// base-2 exponents (a head's 16 keys lie in the 8 lanes of one thread-in-group: shuffles over lane
// bits 2..4), P^T packed to bf16 and turned into the B operand of O^T = V^T P^T by movmatrix.trans
// (the C layout of 8x8 [key][head] to [head][key]), V^T as the A operand by ldmatrix.trans of the
// [key][dim] tile. Against the prefill kernel's orientation (M = heads): half the mmas and half the
// accumulator registers for groups of <= 8 heads, hence 4 resident blocks per SM for head_dim 128.
//
// The split's keys [max(start, lo), end) are cut into tiles of 16 keys, handed round-robin to the
// 4 warps (warp w takes tiles w, w + 4, ...; a tile's keys may lie in different cache blocks: each
// key's block id is looked up). Each warp streams its tiles through its own ring of kSlots
// half-tiles in shared memory (a tile's K, then its V: 16 rows of pitch D + 8 bf16, conflict-free
// ldmatrix), kSlots - 1 of them in flight by cp.async while one is used, with no block-wide barrier
// in the main loop (cp.async.wait_group and __syncwarp only). After the loop the 4 warps' (m, l, O)
// go through shared memory (the rings') to finish_decode_block, which merges them and writes `out`
// or the partial and does the arrival merge.
//
// An E4M3 cache (MmaKv<uint8_t, D>) takes the same path with F16 mmas: its half-tiles are bytes in
// the ring, and each lane builds its K and V^T fragments from vector loads (attention_fp8.cuh: the
// dims permuted so that the loads are wide; V's key pairs by byte permutes), q and P^T in F16. The
// layer's K scale is folded into scale_log2, the V scale applied to the block's output.
//
// Launched with PDL (launch_kernel): a block reads the step metadata and the block ids of each
// warp's first two tiles, prefetches their K/V into L2 and starts copying the first half-tiles
// whose keys all existed before this step (only the step's own keys are the previous kernel's),
// then waits for the previous kernel (q, this step's K/V) before reading anything else or writing.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/attention_decode_common.cuh"
#include "cuda/kernels/attention_fp8.cuh"

namespace inferdesk::cuda::attn {
namespace {

// Two consecutive bf16 of q as one 32-bit fragment register (the lower address in the low half).
__device__ __forceinline__ uint32_t load_bf16x2(const bf16* p, bool vec) {
  if (vec) return *reinterpret_cast<const uint32_t*>(p);
  return static_cast<uint32_t>(__bfloat16_as_ushort(p[0])) | (static_cast<uint32_t>(__bfloat16_as_ushort(p[1])) << 16);
}

// How the kernel turns a tile of the cache into mma operands, per cache element type KV: Q^T's B
// fragments, S^T = K Q^T of a K half-tile, P^T packed, O^T += V^T P^T of a V half-tile, and the
// dim each O^T accumulator holds. Half-tiles are kKeys rows of the pitches below (bytes).
template <typename KV, int D>
struct MmaKv;

// BF16: ldmatrix of the [key][dim] half-tiles (the plain and the transposed load), BF16 mmas.
template <int D>
struct MmaKv<bf16, D> {
  static constexpr int kStride = D + 8;  // row pitch in bf16: +16 bytes keeps ldmatrix conflict-free
  static constexpr int kKPitch = kStride * 2, kVPitch = kKPitch;
  // Register r of Q^T's B fragment at k-step kk for head row qh (dims kk * 16 + 2 tig + {0, 1}, + 8 r).
  __device__ static uint32_t q_frag(const bf16* qh, int kk, int r, int tig, bool vec) {
    return load_bf16x2(qh + kk * 16 + tig * 2 + r * 8, vec);
  }
  // st[kk & 1][nb] += K Q^T over the k-steps (two accumulator sets halve the dependent chains).
  template <int NB>
  __device__ static void scores(float (&st)[2][NB][4], const uint8_t* sk, const uint32_t (&qf)[NB][D / 16][2],
                                int lane) {
    const bf16* k = reinterpret_cast<const bf16*>(sk);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ka[4];
      ldmatrix_x4(ka, k + (lane & 15) * kStride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) mma_bf16_16816(st[kk & 1][nb], ka, qf[nb][kk][0], qf[nb][kk][1]);
    }
  }
  __device__ static uint32_t pack_p(float lo, float hi) { return pack_bf16x2(lo, hi); }
  // O^T += V^T P^T: V^T (dims x keys) as the A operand through ldmatrix.trans of V [key][dim].
  template <int NB>
  __device__ static void accumulate(float (&o)[NB][D / 16][4], const uint8_t* sv, const uint32_t (&pb)[NB][2],
                                    int lane) {
    const bf16* v = reinterpret_cast<const bf16*>(sv);
#pragma unroll
    for (int dd = 0; dd < D / 16; ++dd) {
      uint32_t va[4];
      ldmatrix_x4_trans(va, v + ((lane & 7) + (lane >> 4) * 8) * kStride + dd * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) mma_bf16_16816(o[nb][dd], va, pb[nb][0], pb[nb][1]);
    }
  }
  // The dim of o[.][dd][2 half + e] in lane group g.
  __device__ static int out_dim(int dd, int g, int half) { return dd * 16 + g + 8 * half; }
};

// E4M3: vector loads and conversions to F16 (attention_fp8.cuh), F16 mmas.
template <int D>
struct MmaKv<uint8_t, D> {
  using T = Fp8Tile<D>;
  static constexpr int kKPitch = T::kKPitch, kVPitch = T::kVPitch;
  // Dims T::k_byte(kk, tig) + 2 r + {0, 1}: the permutation the K fragments below use.
  __device__ static uint32_t q_frag(const bf16* qh, int kk, int r, int tig, bool vec) {
    return bf16x2_to_f16x2(load_bf16x2(qh + T::k_byte(kk, tig) + 2 * r, vec));
  }
  // K as the A operand: rows g and g + 8 of the half-tile, this lane's words of each.
  template <int NB>
  __device__ static void scores(float (&st)[2][NB][4], const uint8_t* sk, const uint32_t (&qf)[NB][D / 16][2],
                                int lane) {
    const int g = lane >> 2, tig = lane & 3;
    uint32_t w0[T::kKWords], w1[T::kKWords];
    T::load_k(sk + g * kKPitch, tig, w0);
    T::load_k(sk + (g + 8) * kKPitch, tig, w1);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t ka[4] = {T::k_lo(w0[kk]), T::k_lo(w1[kk]), T::k_hi(w0[kk]), T::k_hi(w1[kk])};
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) mma_f16_16816(st[kk & 1][nb], ka, qf[nb][kk][0], qf[nb][kk][1]);
    }
  }
  __device__ static uint32_t pack_p(float lo, float hi) { return pack_f16x2(lo, hi); }
  // V^T as the A operand: row g of k-step dd is owned dim 2 dd of lane group g, row g + 8 owned
  // dim 2 dd + 1; its columns are keys 2 tig, 2 tig + 1 (then + 8), the rows this lane reads.
  template <int NB>
  __device__ static void accumulate(float (&o)[NB][D / 16][4], const uint8_t* sv, const uint32_t (&pb)[NB][2],
                                    int lane) {
    const int g = lane >> 2, tig = lane & 3;
    uint32_t x0[T::kVWords], x1[T::kVWords], y0[T::kVWords], y1[T::kVWords];
    T::load_v(sv + (2 * tig) * kVPitch, g, x0);
    T::load_v(sv + (2 * tig + 1) * kVPitch, g, x1);
    T::load_v(sv + (2 * tig + 8) * kVPitch, g, y0);
    T::load_v(sv + (2 * tig + 9) * kVPitch, g, y1);
#pragma unroll
    for (int dd = 0; dd < D / 16; ++dd) {
      const uint32_t va[4] = {T::v_pair(x0, x1, 2 * dd), T::v_pair(x0, x1, 2 * dd + 1), T::v_pair(y0, y1, 2 * dd),
                              T::v_pair(y0, y1, 2 * dd + 1)};
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) mma_f16_16816(o[nb][dd], va, pb[nb][0], pb[nb][1]);
    }
  }
  __device__ static int out_dim(int dd, int g, int half) { return T::v_dim(2 * dd + half, g); }
};

template <typename KV, int D, int NB, int R>
struct MmaDecodeTile {
  using Ops = MmaKv<KV, D>;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRows = 8 * NB;  // query heads a block serves at most: NB mma n-blocks of 8
  static constexpr int kKeys = 16;      // keys per tile: the mma M
  static constexpr int kKeyBytes = D * static_cast<int>(sizeof(KV));
  // A warp's pipeline is a ring of kSlots half-tiles (a tile's K, then its V; kSlots - 1 in flight
  // while one is used), each kKeys rows of the larger of the two pitches.
  static constexpr int kSlots = R;
  static constexpr int kSlotBytes = kKeys * (Ops::kKPitch > Ops::kVPitch ? Ops::kKPitch : Ops::kVPitch);
  static constexpr int kWarpBytes = kSlots * kSlotBytes;  // a warp's ring
  static constexpr size_t kPipeBytes = size_t{kWarps} * kWarpBytes;
  // After the main loop: the per-warp outputs [warp][head][dim] of the block's merge.
  static constexpr size_t kAccBytes = size_t{kWarps} * kRows * D * sizeof(float);
  static constexpr size_t kSmemBytes = kPipeBytes > kAccBytes ? kPipeBytes : kAccBytes;
  // Blocks per SM the shared memory allows (228 KB per SM, 1 KB reserved per block, the static
  // part), at most 4 (3 with two n-blocks): the register bound given to the compiler.
  static constexpr int kSmemBlocks = static_cast<int>(228 * 1024 / (kSmemBytes + 2 * 1024));
  static constexpr int kMinBlocks = kSmemBlocks < (NB == 1 ? 4 : 3) ? kSmemBlocks : (NB == 1 ? 4 : 3);
};

// Upper bound of the kernel's static shared memory (s_m, s_l, s_last).
constexpr size_t kMmaStaticSmemBound = 1024;

// The transpose of an 8x8 b16 matrix held as one register per lane (lane 4 r + c: row r, columns
// 2c, 2c + 1), in the same layout.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

template <typename KV, int D, int NB, int R>
__global__ void __launch_bounds__(MmaDecodeTile<KV, D, NB, R>::kThreads, MmaDecodeTile<KV, D, NB, R>::kMinBlocks)
    paged_decode_mma_kernel(const DecodeParams p) {
  using C = MmaDecodeTile<KV, D, NB, R>;
  using Ops = typename C::Ops;
  constexpr int kWarps = C::kWarps, kKeys = C::kKeys, kSlots = C::kSlots;
  static_assert(kSlots >= 3, "the ring needs a K and a V half-tile in flight");
  extern __shared__ __align__(16) unsigned char smem_raw[];  // the rings, then s_acc
  __shared__ float s_m[kWarps][C::kRows];
  __shared__ float s_l[kWarps][C::kRows];
  __shared__ int s_last;

  const PagedAttentionArgs& a = p.a;
  // Step metadata and block ids are read before pdl_wait(); q, the cache and the partials only
  // after it.
  const DecodeBlock blk = decode_block(p, p.heads_per_block);
  const SplitRange& range = blk.range;
  if (blk.split >= range.splits) return;                  // a split this context does not use: nothing to do
  const int hk = blk.hk, nh = blk.nh, head0 = blk.head0;  // heads served: mma columns [0, nh)
  const int qlen = blk.qlen, row = blk.row;
  const int32_t* const bt = blk.bt;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, tig = lane & 3;  // fragment row group and thread in group
  const int log2_bs = p.log2_bs;
  // Keys [kbeg, end) are visible (kbeg >= lo); tile t holds keys kbeg + 16 t + [0, 16).
  const int end = range.end;
  const int kbeg = max(range.start, range.lo);
  const int tiles = kbeg < end ? (end - kbeg + kKeys - 1) / kKeys : 0;
  const int my_tiles = tiles > warp ? (tiles - warp + kWarps - 1) / kWarps : 0;
  auto tile_key0 = [&](int j) { return kbeg + (warp + j * kWarps) * kKeys; };  // warp's j-th tile
  // Block id of key (lane & 15) of the warp's j-th tile; -1 past end (also every tile past the
  // warp's last), where nothing is read.
  auto fetch_id = [&](int j) {
    const int key = tile_key0(j) + (lane & (kKeys - 1));
    return key < end ? bt[key >> log2_bs] : -1;
  };
  // Block ids of the tile of the next half-tile to issue and of the tile after it.
  int iid = -1, iid_next = -1;
  if (qlen > 0) {
    iid = fetch_id(0);
    iid_next = fetch_id(1);
    // While the previous kernel finishes, pull the K/V of the warp's first two tiles into L2 (lane
    // l: key l & 15 of tile l / 16, whose block id the lane holds). That kernel writes only this
    // step's own key; L2 is the point of coherence, so a line prefetched before the write is
    // updated by it, and the copies after pdl_wait() hit L2 instead of DRAM.
    const int id = lane < 16 ? iid : iid_next;
    if (id >= 0) {
      const int64_t off = cache_offset(id, a.num_kv_heads, hk, tile_key0(lane >> 4) + (lane & 15), log2_bs, D) *
                          sizeof(KV);
#pragma unroll
      for (int line = 0; line < (C::kKeyBytes + 127) / 128; ++line) {  // 128-byte lines
        asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const char*>(a.k_cache) + off + line * 128));
        asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const char*>(a.v_cache) + off + line * 128));
      }
    }
  }

  // This warp's ring: half-tile h (tile h / 2's K when h is even, its V when odd) in slot h % kSlots,
  // [key][dim] with the pitch of its kind.
  uint8_t* const s_ring = smem_raw + warp * C::kWarpBytes;
  int hi = 0;  // the next half-tile to issue
  // Starts the copies of half-tile hi (zero-filled where the key is masked: nothing read) and
  // commits them as one group (an empty group past the warp's tiles keeps the wait count uniform).
  auto issue_next = [&]() {
    const int j = hi >> 1;
    if (j < my_tiles) {
      const int key0 = tile_key0(j);
      uint8_t* const dst = s_ring + (hi % kSlots) * C::kSlotBytes;
      const int pitch = (hi & 1) ? Ops::kVPitch : Ops::kKPitch;
      const char* const cache = static_cast<const char*>((hi & 1) ? a.v_cache : a.k_cache);
      constexpr int kChunksPerKey = C::kKeyBytes / 16;  // 16-byte chunks
      static_assert(kKeys * kChunksPerKey % 32 == 0, "a half-tile's chunks divide among the lanes");
#pragma unroll
      for (int i = 0; i < kKeys * kChunksPerKey / 32; ++i) {
        const int c = lane + 32 * i;
        const int r = c / kChunksPerKey, ch = c % kChunksPerKey;
        const int rid = __shfl_sync(0xffffffffu, iid, r);
        const bool valid = rid >= 0;
        const int64_t off = valid ? cache_offset(rid, a.num_kv_heads, hk, key0 + r, log2_bs, D) * sizeof(KV) + ch * 16
                                  : 0;
        cp_async_16_ordered(dst + r * pitch + ch * 16, cache + off, valid);
      }
    }
    cp_async_commit();
    if (hi & 1) {  // the tile's V is on its way: move on to the next tile's ids
      iid = iid_next;
      iid_next = fetch_id(j + 2);  // used two half-tiles later: its latency hides behind them
    }
    ++hi;
  };
  // The half-tiles whose keys all existed before this step (the previous kernel writes only the
  // step's own keys, [ctx - qlen, ctx)) are copied before the wait, so the first tiles' latency
  // overlaps the previous kernel; the rest of the first kSlots - 1 after it, then q.
  const int stable_end = blk.ctx - qlen;
  if (qlen > 0)
    while (hi < kSlots - 1 && (hi >> 1) < my_tiles && min(tile_key0(hi >> 1) + kKeys, end) <= stable_end) issue_next();

  pdl_wait();  // q and this step's K/V come from the previous kernel
  pdl_launch_dependents();
  if (qlen <= 0) return;  // no row to write (nothing was issued above)
  while (hi < kSlots - 1) issue_next();

  // Q^T as the B operand of S^T = K Q^T (k: dims of k-step kk as Ops orders them, n: head
  // nb * 8 + g), held for the whole loop; heads >= nh are zero.
  uint32_t qf[NB][D / 16][2];
  {
    const bf16* qrow = a.q + static_cast<int64_t>(row) * a.q_stride + static_cast<int64_t>(head0) * D;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int h = nb * 8 + g;
          qf[nb][kk][r] = h < nh ? Ops::q_frag(qrow + h * D, kk, r, tig, p.q_vec2) : 0u;
        }
  }

  // Waits for half-tile h (this lane's copies, then every lane's: __syncwarp), after which every
  // lane is also done with half-tile h - 1, whose slot the next issue reuses.
  auto wait_half = [&]() {
    cp_async_wait<kSlots - 2>();
    __syncwarp();
  };

  // O^T: o[nb][dd] holds dims dd * 16 + g (c0, c1) and + 8 (c2, c3) of heads nb * 8 + 2 tig + {0, 1}.
  float o[NB][D / 16][4];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int dd = 0; dd < D / 16; ++dd) o[nb][dd][0] = o[nb][dd][1] = o[nb][dd][2] = o[nb][dd][3] = 0.0f;
  // Online softmax state of this thread's heads nb * 8 + 2 tig + e (m: the same in the 8 lanes of
  // a tig; l: this lane's keys only, summed over them at the end).
  float m[NB][2], l[NB][2];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) m[nb][0] = m[nb][1] = -INFINITY, l[nb][0] = l[nb][1] = 0.0f;

  for (int j = 0; j < my_tiles; ++j) {
    const int h = 2 * j;
    wait_half();  // K_j
    issue_next();

    // S^T = K Q^T: st[nb] holds keys g (c0, c1) and g + 8 (c2, c3) of heads nb * 8 + 2 tig + {0, 1};
    // two accumulator sets (even and odd k-steps) halve the dependent mma chains.
    float st[2][NB][4];
#pragma unroll
    for (int x = 0; x < 2; ++x)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) st[x][nb][0] = st[x][nb][1] = st[x][nb][2] = st[x][nb][3] = 0.0f;
    Ops::scores(st, s_ring + (h % kSlots) * C::kSlotBytes, qf, lane);

    // Online softmax per head over the tile's 16 keys (base 2, scale folded in); keys >= end get
    // -inf. A head's keys are spread over the 8 lanes of one tig (shuffles over lane bits 2..4).
    const int key0 = tile_key0(j);
    const bool mask_lo = key0 + g >= end, mask_hi = key0 + g + 8 >= end;
    uint32_t pb[NB][2];  // P^T as the B operand of O^T = V^T P^T (after the transposes)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      float pr[2][2];  // [e][key g / g + 8]
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v0 = mask_lo ? -INFINITY : (st[0][nb][e] + st[1][nb][e]) * p.scale_log2;
        const float v1 = mask_hi ? -INFINITY : (st[0][nb][2 + e] + st[1][nb][2 + e]) * p.scale_log2;
        float mx = fmaxf(v0, v1);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        const float m_new = fmaxf(m[nb][e], mx);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float corr = fast_exp2(m[nb][e] - m_use);
        m[nb][e] = m_new;
        pr[e][0] = fast_exp2(v0 - m_use);
        pr[e][1] = fast_exp2(v1 - m_use);
        l[nb][e] = l[nb][e] * corr + pr[e][0] + pr[e][1];
#pragma unroll
        for (int dd = 0; dd < D / 16; ++dd) {
          o[nb][dd][e] *= corr;
          o[nb][dd][2 + e] *= corr;
        }
      }
      // P^T of keys 0-7 (then 8-15) as an 8x8 matrix [key][head], transposed to [head][key]: lane
      // (g, tig) then holds head g, keys 2 tig + {0, 1}: the B fragment (k: keys, n: heads).
      pb[nb][0] = movmatrix_trans(Ops::pack_p(pr[0][0], pr[1][0]));
      pb[nb][1] = movmatrix_trans(Ops::pack_p(pr[0][1], pr[1][1]));
    }

    wait_half();  // V_j
    issue_next();
    Ops::accumulate(o, s_ring + ((h + 1) % kSlots) * C::kSlotBytes, pb, lane);  // O^T += V^T P^T
  }
  cp_async_wait<0>();  // only empty groups can be left
  __syncthreads();     // every warp is done with its ring: the memory holds s_acc next

  // The warps' states of heads < nh: s_acc[warp][head][dim], s_m / s_l[warp][head] (l summed over
  // the 8 lanes of a tig, which hold different keys of the same heads). O^T is scaled by the V
  // scale here: the merges after are linear in it.
  float* const s_acc = reinterpret_cast<float*>(smem_raw);
  const float vs = std::is_same_v<KV, bf16> ? 1.0f : p.v_scale;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float sum = l[nb][e];
      sum += __shfl_xor_sync(0xffffffffu, sum, 4);
      sum += __shfl_xor_sync(0xffffffffu, sum, 8);
      sum += __shfl_xor_sync(0xffffffffu, sum, 16);
      const int hh = nb * 8 + tig * 2 + e;
      if (hh >= nh) continue;
      float* const dst = s_acc + (warp * C::kRows + hh) * D;
#pragma unroll
      for (int dd = 0; dd < D / 16; ++dd) {
        dst[Ops::out_dim(dd, g, 0)] = o[nb][dd][e] * vs;
        dst[Ops::out_dim(dd, g, 1)] = o[nb][dd][2 + e] * vs;
      }
      if (g == 0) {
        s_m[warp][hh] = m[nb][e];
        s_l[warp][hh] = sum;
      }
    }
  __syncthreads();

  finish_decode_block<D, C::kRows, kWarps, C::kThreads>(p, s_acc, &s_m[0][0], &s_l[0][0], s_last, blk.seq, row, head0,
                                                        nh, blk.split, range.splits);
}

template <typename KV, int D, int NB, int R>
void launch_mma(const DecodeParams& p, dim3 grid, const Launch& launch) {
  using C = MmaDecodeTile<KV, D, NB, R>;
  allow_dynamic_smem<paged_decode_mma_kernel<KV, D, NB, R>>(C::kSmemBytes, "paged_attention_decode (mma)",
                                                            kMmaStaticSmemBound);
  launch_kernel("paged_attention_decode (mma)", paged_decode_mma_kernel<KV, D, NB, R>, grid, dim3(C::kThreads),
                C::kSmemBytes, launch, p);
}

// Half-tiles in a warp's ring: 3 for D 128 (51 KB per block, 4 blocks per SM: the 512 blocks of
// 64 sequences x 8 kv heads in one wave; 4 slots leave 3 blocks per SM and were slower), 6 for
// D 64 (54 KB, 4 blocks per SM; faster than 3 and 4). Figures: docs/PERF.md. An E4M3 half-tile
// holds half the bytes, so its rings are deeper for about as many bytes in flight at 4 blocks per
// SM: 5 for D 128 (46 KB), 8 for D 64 (41 KB).
template <typename KV, int D>
constexpr int kRing = std::is_same_v<KV, bf16> ? (D == 128 ? 3 : 6) : (D == 128 ? 5 : 8);

template <typename KV, int D>
void launch_mma_nb(const DecodeParams& p, dim3 grid, const Launch& launch) {
  if (p.heads_per_block <= 8)
    launch_mma<KV, D, 1, kRing<KV, D>>(p, grid, launch);
  else
    launch_mma<KV, D, 2, kRing<KV, D>>(p, grid, launch);
}

template <typename KV>
void launch_mma_kv(const DecodeParams& p, dim3 grid, const Launch& launch) {
  if (p.a.head_dim == 64)
    launch_mma_nb<KV, 64>(p, grid, launch);
  else
    launch_mma_nb<KV, 128>(p, grid, launch);
}

}  // namespace

bool decode_mma_supported(const DecodeParams& p) { return (p.a.head_dim == 64 || p.a.head_dim == 128) && p.kv_vec; }

void launch_decode_mma(const DecodeParams& p, dim3 grid, const Launch& launch) {
  if (!decode_mma_supported(p) || p.heads_per_block < 1 || p.heads_per_block > kDecodeMmaMaxHeads)
    unsupported_config("paged_attention_decode (mma): head_dim " + std::to_string(p.a.head_dim) + ", " +
                       std::to_string(p.heads_per_block) + " heads per block");
  if (p.a.kv.fp8())
    launch_mma_kv<uint8_t>(p, grid, launch);
  else
    launch_mma_kv<bf16>(p, grid, launch);
}

}  // namespace inferdesk::cuda::attn
