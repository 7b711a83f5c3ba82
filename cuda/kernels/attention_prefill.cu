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
// Grid: x = kv head, y = sequence, z = tile, the last tiles (most keys under the causal mask) first.
// Launched with PDL (launch_kernel): blocks read the step metadata, then wait for the previous
// kernel (which wrote q and this step's K/V) before touching q, the cache or the output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/attention_common.cuh"

namespace inferdesk::cuda {
namespace {

using namespace attn;

template <int D>
struct PrefillTile {
  static constexpr int kM = 64;     // packed rows per thread block
  static constexpr int kWarps = 4;  // 16 rows each
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kN = D == 256 ? 32 : 64;  // keys per K/V tile (registers: O is D/2 floats)
  static constexpr int kStride = D + 8;          // smem row pitch in bf16: +16 bytes keeps ldmatrix conflict-free
  static constexpr bool kQInRegs = D <= 128;     // Q fragments held in registers across tiles
  static constexpr size_t kSmemBytes = static_cast<size_t>(kM + 2 * kN) * kStride * sizeof(bf16);
};

struct PrefillParams {
  PagedAttentionArgs a;
  int32_t group = 1;  // query heads per kv head
  int32_t log2_bs = 4;
  float scale_log2 = 1;  // scale * log2(e)
  bool q_vec = true;     // q rows 16-byte aligned: cp.async, else scalar copies
  bool kv_vec = true;    // cache 16-byte aligned
  bool out_vec = true;   // out rows 4-byte aligned: bf16x2 stores
};

// Copies ROWS rows of D bf16 into shared rows [0, ROWS) (pitch kStride). src(r) gives row r's
// global address or nullptr for a zero row. Vector rows go through cp.async (the caller commits and
// waits); scalar rows are stored directly.
template <int D, int ROWS, typename Src>
__device__ __forceinline__ void load_tile(bf16* s, const Src& src, bool vec, const bf16* any_valid) {
  using C = PrefillTile<D>;
  constexpr int kChunks = D / 8;
  static_assert((ROWS * kChunks) % C::kThreads == 0, "tile chunks must divide among the threads");
#pragma unroll
  for (int i = 0; i < ROWS * kChunks / C::kThreads; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * C::kThreads;
    const int r = c / kChunks, ch = c % kChunks;
    const bf16* g = src(r);
    bf16* d = s + r * C::kStride + ch * 8;
    if (vec) {
      cp_async_16(d, g ? g + ch * 8 : any_valid, g != nullptr);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = g ? g[ch * 8 + e] : __float2bfloat16(0.0f);
    }
  }
}

template <int D>
__global__ void __launch_bounds__(PrefillTile<D>::kThreads) paged_prefill_kernel(const PrefillParams p) {
  using C = PrefillTile<D>;
  constexpr int kM = C::kM, kN = C::kN, kStride = C::kStride;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);
  bf16* sK = sQ + kM * kStride;
  bf16* sV = sK + kN * kStride;

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
  auto kv_src = [bt, log2_bs, num_kv_heads, hk, last_pos](const bf16* cache, int t) {
    return [=](int r) -> const bf16* {
      const int key = t * kN + r;
      if (key > last_pos) return nullptr;  // past every row's position (maybe past the table)
      return cache + cache_offset(bt[key >> log2_bs], num_kv_heads, hk, key, log2_bs, D);
    };
  };

  load_tile<D, kM>(sQ, q_src, p.q_vec, a.k_cache);
  load_tile<D, kN>(sK, kv_src(a.k_cache, t_first), p.kv_vec, a.k_cache);
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
    load_tile<D, kN>(sV, kv_src(a.v_cache, t), p.kv_vec, a.v_cache);
    cp_async_commit();

    float s[kN / 8][4];
#pragma unroll
    for (int j = 0; j < kN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if (warp_active) {
      if constexpr (C::kQInRegs) {
        if (t == t_first) {
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk)
            ldmatrix_x4(qf[kk], sQ + (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8);
        }
      }
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t af[4];
        if constexpr (C::kQInRegs) {
          af[0] = qf[kk][0];
          af[1] = qf[kk][1];
          af[2] = qf[kk][2];
          af[3] = qf[kk][3];
        } else {
          ldmatrix_x4(af, sQ + (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8);
        }
#pragma unroll
        for (int jj = 0; jj < kN / 16; ++jj) {
          uint32_t b[4];
          ldmatrix_x4(b, sK + (jj * 16 + (lane >> 4) * 8 + (lane & 7)) * kStride + kk * 16 + ((lane >> 3) & 1) * 8);
          mma_bf16_16816(s[2 * jj], af, b[0], b[1]);
          mma_bf16_16816(s[2 * jj + 1], af, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with K_t
    if (t < t_last) {
      load_tile<D, kN>(sK, kv_src(a.k_cache, t + 1), p.kv_vec, a.k_cache);
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

    if (warp_active) {
#pragma unroll
      for (int kk = 0; kk < kN / 16; ++kk) {
        const uint32_t pa[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                                pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dd = 0; dd < D / 16; ++dd) {
          uint32_t b[4];
          ldmatrix_x4_trans(b,
                            sV + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * kStride + dd * 16 + (lane >> 4) * 8);
          mma_bf16_16816(o[2 * dd], pa, b[0], b[1]);
          mma_bf16_16816(o[2 * dd + 1], pa, b[2], b[3]);
        }
      }
    }
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

template <int D>
void launch_prefill(const PrefillParams& p, dim3 grid, const Launch& launch) {
  using C = PrefillTile<D>;
  allow_dynamic_smem<paged_prefill_kernel<D>>(C::kSmemBytes, "paged_attention_prefill");
  launch_kernel("paged_attention_prefill", paged_prefill_kernel<D>, grid, dim3(C::kThreads), C::kSmemBytes, launch, p);
}

}  // namespace

void paged_attention_prefill(const PagedAttentionArgs& a, const Launch& launch) {
  check_attention_args(a, "paged_attention_prefill");
  if (a.num_seqs <= 0 || a.max_query_len <= 0) return;
  PrefillParams p;
  p.a = a;
  p.group = a.num_heads / a.num_kv_heads;
  p.log2_bs = log2_pow2(a.block_size);
  p.scale_log2 = a.scale * kLog2e;
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
  switch (a.head_dim) {
    case 32: launch_prefill<32>(p, grid, launch); break;
    case 64: launch_prefill<64>(p, grid, launch); break;
    case 128: launch_prefill<128>(p, grid, launch); break;
    default: launch_prefill<256>(p, grid, launch); break;
  }
}

}  // namespace inferdesk::cuda
