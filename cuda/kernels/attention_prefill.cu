// Paged attention for any mix of query lengths (prompt chunks attending to earlier cached blocks,
// and decode rows): FlashAttention-2 style, tensor cores (mma.sync m16n8k16 BF16, F32 accumulate).
//
// One thread block serves one tile of kM "packed rows" of one (sequence, kv head): packed row
// r = query_index * G + h for the G query heads of the kv group, so the K/V tiles loaded into
// shared memory are used by every head of the group (GQA), and decode rows (query_len 1) fill G
// rows of a tile instead of one. Each of the 4 warps owns 16 packed rows. Per K/V tile of kN keys:
// S = Q K^T (ldmatrix + mma), mask (causal / sliding window / past the last row), online softmax in
// registers (base-2 exponent, scale folded in), O += P V. K and V tiles are single-buffered with
// cp.async so that loading V_t overlaps S_t and loading K_{t+1} overlaps P V_t.
//
// An E4M3 cache (KV = uint8_t) keeps its K/V tiles as bytes in shared memory and runs F16 mmas:
// each lane builds its K and V fragments from vector loads of the tiles (attention_fp8.cuh: the
// dims permuted so the loads are wide, V's key pairs by byte permutes), its Q fragments from the
// BF16 Q tile in the same dim order, P in F16; the layer's K scale is folded into scale_log2, the
// V scale into the output's normalisation.
//
// Grid: x = kv head, y = sequence, z = tile, the last tiles (most keys under the causal mask) first.
// Launched with PDL (launch_kernel): blocks read the step metadata, then wait for the previous
// kernel (which wrote q and this step's K/V) before touching q, the cache or the output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/attention_common.cuh"
#include "cuda/kernels/attention_fp8.cuh"

namespace inferdesk::cuda {
namespace {

using namespace attn;

// KV: the cache's element type (bf16, or uint8_t for E4M3).
template <typename KV, int D>
struct PrefillTile {
  static constexpr bool kFp8 = !std::is_same_v<KV, bf16>;
  static constexpr int kM = 64;     // packed rows per thread block
  static constexpr int kWarps = 4;  // 16 rows each
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kN = D == 256 ? 32 : 64;  // keys per K/V tile (registers: O is D/2 floats)
  static constexpr int kStride = D + 8;          // smem row pitch in bf16: +16 bytes keeps ldmatrix conflict-free
  static constexpr bool kQInRegs = D <= 128;     // Q fragments held in registers across tiles
  // Row pitches in bytes: Q's (BF16) and the K and V tiles' (attention_fp8.cuh for E4M3).
  static constexpr int kQPitch = kStride * 2;
  static constexpr int kKPitch = kFp8 ? Fp8Tile<D>::kKPitch : kQPitch;
  static constexpr int kVPitch = kFp8 ? Fp8Tile<D>::kVPitch : kQPitch;
  static constexpr size_t kSmemBytes = static_cast<size_t>(kM) * kQPitch +
                                       static_cast<size_t>(kN) * (kKPitch + kVPitch);
};

struct PrefillParams {
  PagedAttentionArgs a;
  int32_t group = 1;  // query heads per kv head
  int32_t log2_bs = 4;
  float scale_log2 = 1;  // scale * log2(e) (* the K scale of an E4M3 cache)
  float v_scale = 1;     // the V scale of an E4M3 cache
  bool q_vec = true;     // q rows 16-byte aligned: cp.async, else scalar copies
  bool kv_vec = true;    // cache 16-byte aligned
  bool out_vec = true;   // out rows 4-byte aligned: bf16x2 stores
};

// Copies ROWS rows of ROW_BYTES bytes into shared rows [0, ROWS) of PITCH bytes. src(r) gives row
// r's global address (a pointer to its elements, of type E) or nullptr for a zero row. Vector rows
// go through cp.async (the caller commits and waits); scalar rows are copied element by element.
template <int ROWS, int ROW_BYTES, int PITCH, typename E, typename Src>
__device__ __forceinline__ void load_tile(E* s_, const Src& src, bool vec, const void* any_valid) {
  constexpr int kThreads = 128;  // PrefillTile::kThreads
  constexpr int kChunks = ROW_BYTES / 16;
  static_assert((ROWS * kChunks) % kThreads == 0, "tile chunks must divide among the threads");
  unsigned char* s = reinterpret_cast<unsigned char*>(s_);
#pragma unroll
  for (int i = 0; i < ROWS * kChunks / kThreads; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    const int r = c / kChunks, ch = c % kChunks;
    const unsigned char* g = reinterpret_cast<const unsigned char*>(src(r));
    unsigned char* d = s + r * PITCH + ch * 16;
    if (vec) {
      cp_async_16(d, g ? g + ch * 16 : any_valid, g != nullptr);
    } else {
      constexpr int kPer = 16 / static_cast<int>(sizeof(E));  // elements per chunk
#pragma unroll
      for (int e = 0; e < kPer; ++e) reinterpret_cast<E*>(d)[e] = g ? reinterpret_cast<const E*>(g + ch * 16)[e] : E{};
    }
  }
}

// Q fragment (the A operand) of k-step kk for the warp's 16 rows of the Q tile. BF16: ldmatrix;
// E4M3 caches: F16, dims in Fp8Tile's order (the K fragments' permutation).
template <typename KV, int D>
__device__ __forceinline__ void q_frag(uint32_t (&af)[4], const bf16* sQ, int warp, int lane, int kk) {
  using C = PrefillTile<KV, D>;
  if constexpr (!C::kFp8) {
    ldmatrix_x4(af, sQ + (warp * 16 + (lane & 15)) * C::kStride + kk * 16 + (lane >> 4) * 8);
  } else {
    const int g = lane >> 2, tig = lane & 3;
    const int col = Fp8Tile<D>::k_byte(kk, tig);
    const uint2 r0 = *reinterpret_cast<const uint2*>(sQ + (warp * 16 + g) * C::kStride + col);
    const uint2 r8 = *reinterpret_cast<const uint2*>(sQ + (warp * 16 + g + 8) * C::kStride + col);
    af[0] = bf16x2_to_f16x2(r0.x);
    af[1] = bf16x2_to_f16x2(r8.x);
    af[2] = bf16x2_to_f16x2(r0.y);
    af[3] = bf16x2_to_f16x2(r8.y);
  }
}

// s (n-block j: keys 8 j .. 8 j + 7 of the tile) += Q K^T of the warp's rows. qf: the Q fragments
// when C::kQInRegs, else they are read from the Q tile.
template <typename KV, int D>
__device__ __forceinline__ void tile_scores(float (&s)[PrefillTile<KV, D>::kN / 8][4],
                                            const uint32_t (&qf)[PrefillTile<KV, D>::kQInRegs ? D / 16 : 1][4],
                                            const bf16* sQ, const KV* sK, int warp, int lane) {
  using C = PrefillTile<KV, D>;
  constexpr int kN = C::kN;
  auto a_frag = [&](uint32_t(&af)[4], int kk) {
    if constexpr (C::kQInRegs) {
#pragma unroll
      for (int i = 0; i < 4; ++i) af[i] = qf[kk][i];
    } else {
      q_frag<KV, D>(af, sQ, warp, lane, kk);
    }
  };
  if constexpr (!C::kFp8) {
    const bf16* k = sK;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t af[4];
      a_frag(af, kk);
#pragma unroll
      for (int jj = 0; jj < kN / 16; ++jj) {
        uint32_t b[4];
        ldmatrix_x4(b, k + (jj * 16 + (lane >> 4) * 8 + (lane & 7)) * C::kStride + kk * 16 + ((lane >> 3) & 1) * 8);
        mma_bf16_16816(s[2 * jj], af, b[0], b[1]);
        mma_bf16_16816(s[2 * jj + 1], af, b[2], b[3]);
      }
    }
  } else {
    // K as the B operand: n-block 2 jj takes key jj * 16 + g, 2 jj + 1 key jj * 16 + 8 + g.
    using F8 = Fp8Tile<D>;
    const int g = lane >> 2, tig = lane & 3;
#pragma unroll
    for (int jj = 0; jj < kN / 16; ++jj) {
      uint32_t w0[F8::kKWords], w1[F8::kKWords];
      F8::load_k(sK + (jj * 16 + g) * C::kKPitch, tig, w0);
      F8::load_k(sK + (jj * 16 + 8 + g) * C::kKPitch, tig, w1);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t af[4];
        a_frag(af, kk);
        mma_f16_16816(s[2 * jj], af, F8::k_lo(w0[kk]), F8::k_hi(w0[kk]));
        mma_f16_16816(s[2 * jj + 1], af, F8::k_lo(w1[kk]), F8::k_hi(w1[kk]));
      }
    }
  }
}

// o (n-block j: dims 8 j .. 8 j + 7 for BF16, Fp8Tile::v_dim(j, .) for E4M3) += P V over the V
// tile, P the exponentials in s.
template <typename KV, int D>
__device__ __forceinline__ void tile_pv(float (&o)[D / 8][4], const float (&s)[PrefillTile<KV, D>::kN / 8][4],
                                        const KV* sV, int lane) {
  using C = PrefillTile<KV, D>;
#pragma unroll
  for (int kk = 0; kk < C::kN / 16; ++kk) {
    if constexpr (!C::kFp8) {
      const bf16* v = sV;
      const uint32_t pa[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dd = 0; dd < D / 16; ++dd) {
        uint32_t b[4];
        ldmatrix_x4_trans(b,
                          v + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * C::kStride + dd * 16 + (lane >> 4) * 8);
        mma_bf16_16816(o[2 * dd], pa, b[0], b[1]);
        mma_bf16_16816(o[2 * dd + 1], pa, b[2], b[3]);
      }
    } else {
      // V as the B operand: k = keys 2 tig, 2 tig + 1 (then + 8) of the 16, n = lane group g's
      // owned dim j.
      using F8 = Fp8Tile<D>;
      const int g = lane >> 2, tig = lane & 3;
      const uint32_t pa[4] = {pack_f16x2(s[2 * kk][0], s[2 * kk][1]), pack_f16x2(s[2 * kk][2], s[2 * kk][3]),
                              pack_f16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_f16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const unsigned char* rows = sV + kk * 16 * C::kVPitch;
      uint32_t x0[F8::kVWords], x1[F8::kVWords], y0[F8::kVWords], y1[F8::kVWords];
      F8::load_v(rows + (2 * tig) * C::kVPitch, g, x0);
      F8::load_v(rows + (2 * tig + 1) * C::kVPitch, g, x1);
      F8::load_v(rows + (2 * tig + 8) * C::kVPitch, g, y0);
      F8::load_v(rows + (2 * tig + 9) * C::kVPitch, g, y1);
#pragma unroll
      for (int j = 0; j < D / 8; ++j) mma_f16_16816(o[j], pa, F8::v_pair(x0, x1, j), F8::v_pair(y0, y1, j));
    }
  }
}

template <typename KV, int D>
__global__ void __launch_bounds__(PrefillTile<KV, D>::kThreads) paged_prefill_kernel(const PrefillParams p) {
  using C = PrefillTile<KV, D>;
  constexpr int kM = C::kM, kN = C::kN, kStride = C::kStride;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  // The BF16 tiles are addressed exactly as before the E4M3 path existed (typed pointers from sQ,
  // typed cache arithmetic in kv_src): byte-based forms of the same addresses cost the BF16 kernel
  // 10-16 registers and 4-6% of its speed (bench_gpu_attention, H200).
  KV* sK;
  if constexpr (C::kFp8)
    sK = reinterpret_cast<KV*>(smem_raw + kM * C::kQPitch);
  else
    sK = sQ + kM * kStride;
  KV* const sV = sK + kN * C::kKPitch / static_cast<int>(sizeof(KV));

  const PagedAttentionArgs& a = p.a;
  const int hk = blockIdx.x;
  const int seq = blockIdx.y;
  const int tile = static_cast<int>(gridDim.z - 1 - blockIdx.z);
  const int G = p.group;
  // Step metadata is uploaded before the step's first kernel (no kernel writes it), so it may be
  // read before pdl_wait(); q and the K/V cache are written by the kernels before this one.
  const int qlen = a.query_len[seq];
  const int ctx = a.context_len[seq];
  const int qs = a.query_start[seq];
  const int32_t* bt = a.block_tables + a.block_table_start[seq];
  pdl_wait();
  pdl_launch_dependents();
  const int nrows = qlen * G;
  const int row0 = tile * kM;
  if (row0 >= nrows) return;
  const int rows_here = min(kM, nrows - row0);
  const int tid = threadIdx.x;

  // Output address of packed row r of this tile.
  auto out_row = [&](int r) {
    const int pr = row0 + r;
    return a.out + static_cast<int64_t>(qs + pr / G) * a.out_stride + static_cast<int64_t>(hk * G + pr % G) * D;
  };

  if (ctx <= 0) {  // padding sequence: its rows get zeros
    for (int c = tid; c < rows_here * D; c += C::kThreads) out_row(c / D)[c % D] = __float2bfloat16(0.0f);
    return;
  }

  // Positions: query index i of this sequence sits at ctx - qlen + i.
  const int base_pos = ctx - qlen;
  const int first_pos = base_pos + row0 / G;
  const int last_pos = base_pos + (row0 + rows_here - 1) / G;
  const int win = a.sliding_window;
  const int key_lo = win > 0 ? max(0, first_pos - win + 1) : 0;
  // Keys in [full_lo, first_pos] are visible to every row of the tile.
  const int full_lo = win > 0 ? max(0, last_pos - win + 1) : 0;
  const int t_first = key_lo / kN, t_last = last_pos / kN;

  const int log2_bs = p.log2_bs;
  const int num_kv_heads = a.num_kv_heads;

  auto q_src = [&](int r) -> const bf16* {
    if (r >= rows_here) return nullptr;
    const int pr = row0 + r;
    return a.q + static_cast<int64_t>(qs + pr / G) * a.q_stride + static_cast<int64_t>(hk * G + pr % G) * D;
  };
  auto kv_src = [bt, log2_bs, num_kv_heads, hk, last_pos](const void* cache, int t) {
    return [=](int r) -> const KV* {
      const int key = t * kN + r;
      if (key > last_pos) return nullptr;  // past every row's position (maybe past the table)
      return static_cast<const KV*>(cache) + cache_offset(bt[key >> log2_bs], num_kv_heads, hk, key, log2_bs, D);
    };
  };
  constexpr int kKvRowBytes = D * static_cast<int>(sizeof(KV));

  load_tile<kM, D * 2, C::kQPitch>(sQ, q_src, p.q_vec, a.k_cache);
  load_tile<kN, kKvRowBytes, C::kKPitch>(sK, kv_src(a.k_cache, t_first), p.kv_vec, a.k_cache);
  cp_async_commit();

  const int warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, tig = lane & 3;
  const bool warp_active = warp * 16 < rows_here;
  // This thread's two rows (g and g + 8 of the warp's 16): position and first visible key. Rows
  // past the tile's end see nothing (never stored).
  int pos[2], lo[2];
#pragma unroll
  for (int rh = 0; rh < 2; ++rh) {
    const int r = warp * 16 + g + rh * 8;
    pos[rh] = r < rows_here ? base_pos + (row0 + r) / G : -1;
    lo[rh] = win > 0 ? pos[rh] - win + 1 : 0;
  }

  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  uint32_t qf[C::kQInRegs ? D / 16 : 1][4];

  for (int t = t_first; t <= t_last; ++t) {
    cp_async_wait<0>();
    __syncthreads();  // K_t (and Q) landed; every warp is done with V_{t-1}
    load_tile<kN, kKvRowBytes, C::kVPitch>(sV, kv_src(a.v_cache, t), p.kv_vec, a.v_cache);
    cp_async_commit();

    float s[kN / 8][4];
#pragma unroll
    for (int j = 0; j < kN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if (warp_active) {
      if constexpr (C::kQInRegs) {
        if (t == t_first) {
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) q_frag<KV, D>(qf[kk], sQ, warp, lane, kk);
        }
      }
      tile_scores<KV, D>(s, qf, sQ, sK, warp, lane);
    }
    __syncthreads();  // every warp is done with K_t
    if (t < t_last) {
      load_tile<kN, kKvRowBytes, C::kKPitch>(sK, kv_src(a.k_cache, t + 1), p.kv_vec, a.k_cache);
      cp_async_commit();
    }

    // Online softmax over this tile (base 2, scale folded in).
    const int key0 = t * kN;
    const bool need_mask = !(key0 >= full_lo && key0 + kN - 1 <= first_pos);
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < kN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float v = s[j][rh * 2 + e] * p.scale_log2;
          if (need_mask) {
            const int key = key0 + j * 8 + tig * 2 + e;
            if (key > pos[rh] || key < lo[rh]) v = -INFINITY;
          }
          s[j][rh * 2 + e] = v;
          mx = fmaxf(mx, v);
        }
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[rh], mx);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;
      const float corr = fast_exp2(m[rh] - m_use);
      m[rh] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < kN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pe = fast_exp2(s[j][rh * 2 + e] - m_use);
          s[j][rh * 2 + e] = pe;
          sum += pe;
        }
      }
      l[rh] = l[rh] * corr + sum;  // this thread's keys only; the quad is summed at the end
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        o[j][rh * 2] *= corr;
        o[j][rh * 2 + 1] *= corr;
      }
    }

    if (t < t_last)
      cp_async_wait<1>();  // V_t (K_{t+1} may still be in flight)
    else
      cp_async_wait<0>();
    __syncthreads();  // V_t visible to every warp

    if (warp_active) tile_pv<KV, D>(o, s, sV, lane);
  }

  if (!warp_active) return;
#pragma unroll
  for (int rh = 0; rh < 2; ++rh) {
    float sum = l[rh];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int r = warp * 16 + g + rh * 8;
    if (r >= rows_here) continue;
    bf16* dst = out_row(r);
    if constexpr (C::kFp8) {  // columns 2 tig, 2 tig + 1 of n-block j are dims v_dim(j, .), apart
      const float sc = inv * p.v_scale;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        dst[Fp8Tile<D>::v_dim(j, 2 * tig)] = __float2bfloat16(o[j][rh * 2] * sc);
        dst[Fp8Tile<D>::v_dim(j, 2 * tig + 1)] = __float2bfloat16(o[j][rh * 2 + 1] * sc);
      }
    } else {
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        const int col = j * 8 + tig * 2;
        const float v0 = o[j][rh * 2] * inv, v1 = o[j][rh * 2 + 1] * inv;
        if (p.out_vec) {
          *reinterpret_cast<__nv_bfloat162*>(dst + col) = __floats2bfloat162_rn(v0, v1);
        } else {
          dst[col] = __float2bfloat16(v0);
          dst[col + 1] = __float2bfloat16(v1);
        }
      }
    }
  }
}

template <typename KV, int D>
void launch_prefill(const PrefillParams& p, dim3 grid, const Launch& launch) {
  using C = PrefillTile<KV, D>;
  allow_dynamic_smem<paged_prefill_kernel<KV, D>>(C::kSmemBytes, "paged_attention_prefill");
  launch_kernel("paged_attention_prefill", paged_prefill_kernel<KV, D>, grid, dim3(C::kThreads), C::kSmemBytes, launch,
                p);
}

template <typename KV>
void launch_prefill_kv(const PrefillParams& p, dim3 grid, const Launch& launch) {
  switch (p.a.head_dim) {
    case 32: launch_prefill<KV, 32>(p, grid, launch); break;
    case 64: launch_prefill<KV, 64>(p, grid, launch); break;
    case 128: launch_prefill<KV, 128>(p, grid, launch); break;
    default: launch_prefill<KV, 256>(p, grid, launch); break;
  }
}

}  // namespace

void paged_attention_prefill(const PagedAttentionArgs& a, const Launch& launch) {
  check_attention_args(a, "paged_attention_prefill");
  if (a.num_seqs <= 0 || a.max_query_len <= 0) return;
  PrefillParams p;
  p.a = a;
  p.group = a.num_heads / a.num_kv_heads;
  p.log2_bs = log2_pow2(a.block_size);
  // An E4M3 cache's scales: K's multiplies every score, V's every output.
  p.scale_log2 = a.scale * kLog2e * (a.kv.fp8() ? a.kv.k_scale : 1.0f);
  p.v_scale = a.kv.fp8() ? a.kv.v_scale : 1.0f;
  p.q_vec = aligned_to(a.q, 16) && a.q_stride % 8 == 0;
  p.kv_vec = aligned_to(a.k_cache, 16) && aligned_to(a.v_cache, 16);
  p.out_vec = aligned_to(a.out, 4) && a.out_stride % 2 == 0;
  constexpr int64_t kM = 64;  // PrefillTile<D>::kM for every D
  const int64_t tiles = (int64_t{a.max_query_len} * p.group + kM - 1) / kM;
  if (tiles > 65535)
    unsupported_config("paged_attention_prefill: " + std::to_string(a.max_query_len) + " query rows x " +
                       std::to_string(p.group) + " heads per kv head");
  const dim3 grid(static_cast<unsigned>(a.num_kv_heads), static_cast<unsigned>(a.num_seqs),
                  static_cast<unsigned>(tiles));
  if (a.kv.fp8())
    launch_prefill_kv<uint8_t>(p, grid, launch);
  else
    launch_prefill_kv<bf16>(p, grid, launch);
}

}  // namespace inferdesk::cuda
