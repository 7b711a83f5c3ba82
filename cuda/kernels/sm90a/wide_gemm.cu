// Decode-batch GEMMs with whole output tiles per block, on Hopper warpgroup MMAs (sm_90a only):
// the SwiGLU form act[M, I] = silu(x @ Wg^T) * (x @ Wu^T) with W = [Wg; Wu] stacked (N = 2 I), and
// the k-split form y[M, N] = x[M, K] @ W[N, K]^T of the narrow projections, for M <= 64.
//
// Why: a stream-K GEMM splits tiles over blocks and pays for putting the pieces back together (a
// reduction at the kernel's end: docs/PERF.md), and cuBLASLt cannot start early under PDL or fuse
// the SwiGLU. Here no block shares an output with another
// outside its cluster:
// - The weight rows are the wgmma's N dimension (W as the B operand, x as the A operand: 64 token
//   rows, zero-filled past M), so a block's tile can be any multiple of 8 rows and the grid is
//   sized to one wave: block b owns H gate rows and the H matching up rows (SwiGLU: I / H blocks),
//   or with k splits 2 H consecutive rows over half of K, each of its two multiplying warpgroups H
//   of them. H is the smallest instantiated width whose grid fits the SMs (Llama-8B gate/up 112).
// - One producer thread copies each 64-k stage by TMA (x panel 64 x 64, two W panels H x 64, all
//   with the 128-byte swizzle) into a ring of mbarrier-tracked stages; W copies of the first stages
//   are issued before griddepcontrol.wait (W is immutable), so under PDL the weight stream starts
//   while the previous kernel drains, and each block lets the next kernel launch at its start. W
//   is read once per step: its copies carry an L2 evict-first policy and no 256-byte L2 promotion
//   (measured faster: docs/PERF.md).
// - Epilogue, SwiGLU: half of each warpgroup's sums through shared memory to the other, each
//   writing silu(g) * u for half the columns from the F32 sums.
// - The k-split form (KS = 2) of the narrow projections: each tile's K halves on the two blocks of
//   a cluster, summed through distributed shared memory (each block finishes one warpgroup's rows);
//   and WideNorm (wide_norm.h): a residual add + RMSNorm split between a k-split producer's epilogue
//   and the next GEMM's.
// Deterministic (one block, one order per output) and a row's result does not depend on M. At
// 33-64 rows the SwiGLU form for gate/up, the k-split form for o, q|k|v and down and the fused
// norms are the backend's defaults: faster than cuBLASLt + silu_mul (docs/PERF.md).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/sm90a/hopper.cuh"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "cuda/kernels/wide_norm.h"

namespace inferdesk::cuda {
namespace {

constexpr int kTokens = kWideGemmMaxRows;       // the wgmma M: 64 token rows
constexpr int kConsumers = 256;                 // two multiplying warpgroups
constexpr int kWideThreads = kConsumers + 128;  // + the producer warpgroup
constexpr int kPanelK = 64;                     // k per stage: one 128-byte swizzled panel
constexpr int kSmemBudget = 220 * 1024;

// P: 64-k panels per stage (a stage is one barrier round: P > 1 amortises it over more bytes for
// the narrow tiles, whose stage would otherwise carry only 2 H x 128 bytes of weights).
template <int H, int P>
struct WideTile {
  static constexpr int kPanelX = kTokens * 128;  // an x panel: 8 KB
  static constexpr int kPanelW = H * 128;        // a W panel of one warpgroup's rows (a multiple of 1 KB)
  static constexpr int kXBytes = P * kPanelX;
  static constexpr int kWBytes = P * kPanelW;
  static constexpr int kStageBytes = kXBytes + 2 * kWBytes;
  static constexpr int kFit = (kSmemBudget - 1024) / kStageBytes;
  static constexpr int kStages = kFit < 12 ? kFit : 12;
  static constexpr int kAcc = H / 2;  // F32 accumulators per thread (64 x H per warpgroup)
  static_assert(H % 8 == 0 && kStages >= 2, "tile");
};

struct WideParams {
  int32_t m;              // token rows
  int32_t k_steps;        // stages: K / (64 P)
  int64_t block_rows;     // W rows advanced per block: 2 H (k-split) or H (SwiGLU)
  int64_t second_offset;  // warpgroup 1's rows start this far after warpgroup 0's: H, or I
  bool swiglu;
  bf16* y;
  int64_t ldy;
  WideNorm norm;  // wide_norm.h: resid set: the producer epilogue; ss_in set: rows scaled
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster (release / acquire at cluster scope).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Arrive on the mbarrier at the same shared-memory offset in block `rank` of the cluster (default
// semantics, as CUTLASS's cluster barriers: a release at cluster scope made every stage a slow
// round trip, docs/PERF.md).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 r;\nmapa.shared::cluster.u32 r, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [r];\n}" ::"r"(bar),
      "r"(rank)
      : "memory");
}
// st.async into another block's shared memory (`remote`: a cluster address), completing the bytes
// on its mbarrier `rbar` (cluster address).
__device__ __forceinline__ void st_async_v4(uint32_t remote, uint32_t rbar, float a, float b, float c, float d) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   remote),
               "f"(a), "f"(b), "f"(c), "f"(d), "r"(rbar)
               : "memory");
}
__device__ __forceinline__ void st_async_b32(uint32_t remote, uint32_t rbar, float a) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(remote),
               "r"(__float_as_uint(a)), "r"(rbar)
               : "memory");
}
__device__ __forceinline__ uint32_t map_to_rank(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// WideNorm producer epilogue (both multiplying warpgroups, columns c of their H): resid += the
// projection rounded to BF16 (as a stored projection would be), y = bf16(resid * gamma), and the
// tile's sum of resid^2 per row: over a thread's columns, its 4-lane quad (same rows), then the
// two warpgroups through s_norm in a fixed order.
// The thread's residual and gamma pairs (resid [token half][j], gamma [j] at column col0 + c0 +
// 8 j) are loaded before the main loop (rpre, gpre: load_norm_operands), off the kernel's tail.
template <int H>
__device__ __forceinline__ void load_norm_operands(const WideParams& p, int64_t col0, int t0, int c0,
                                                   float2 (&rpre)[2][H / 8], __nv_bfloat162 (&gpre)[H / 8]) {
  const WideNorm& n = p.norm;
#pragma unroll
  for (int j = 0; j < H / 8; ++j) {
    gpre[j] = *reinterpret_cast<const __nv_bfloat162*>(n.gamma + col0 + c0 + 8 * j);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int t = t0 + 8 * half;
      rpre[half][j] = t < p.m ? *reinterpret_cast<const float2*>(n.resid + t * n.ld_resid + col0 + c0 + 8 * j)
                              : make_float2(0.0f, 0.0f);
    }
  }
}
template <int H, int kAcc>
__device__ __forceinline__ void producer_norm_epilogue(const WideParams& p, const float (&acc)[kAcc],
                                                       const float2 (&rpre)[2][H / 8],
                                                       const __nv_bfloat162 (&gpre)[H / 8], float (&s_norm)[2][kTokens],
                                                       uint32_t ssfull, int64_t col0, int64_t tile, int t0, int c0) {
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;
  const WideNorm& n = p.norm;
  float ss[2] = {0.0f, 0.0f};
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int t = t0 + 8 * half;
    if (t >= p.m) continue;
    float* const rrow = n.resid + t * n.ld_resid + col0 + c0;
    bf16* const yrow = p.y + t * p.ldy + col0 + c0;
#pragma unroll
    for (int j = 0; j < H / 8; ++j) {
      const float v0 = rpre[half][j].x + round_bf16(acc[4 * j + 2 * half]);
      const float v1 = rpre[half][j].y + round_bf16(acc[4 * j + 2 * half + 1]);
      *reinterpret_cast<float2*>(rrow + 8 * j) = make_float2(v0, v1);
      store_bf16x2(yrow + 8 * j, v0 * __low2float(gpre[j]), v1 * __high2float(gpre[j]));
      ss[half] += v0 * v0 + v1 * v1;
    }
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    ss[half] += __shfl_xor_sync(0xffffffffu, ss[half], 1);
    ss[half] += __shfl_xor_sync(0xffffffffu, ss[half], 2);
  }
  // Warpgroup wg finishes on block wg of the cluster: block 1 sends its sums into block 0's s_norm[1]
  // (st.async, completing block 0's ssfull), block 0 adds them to its own in the fixed order.
  if (wg == 1) {
    if (lane % 4 == 0) {
      const uint32_t remote = map_to_rank(smem_addr(&s_norm[1][t0]), 0), rbar = map_to_rank(ssfull, 0);
      st_async_b32(remote, rbar, ss[0]);
      st_async_b32(remote + 8 * 4, rbar, ss[1]);
    }
    return;
  }
  if (lane % 4 == 0) {
    s_norm[0][t0] = ss[0];
    s_norm[0][t0 + 8] = ss[1];
  }
  asm volatile("bar.sync 3, 128;" ::: "memory");  // the warpgroup's sums in s_norm[0]
  mbar_wait(ssfull, 0);                           // the other warpgroup's in s_norm[1]
  if (tid < kTokens && tid < p.m) n.ss_out[tile * kWideNormRows + tid] = s_norm[0][tid] + s_norm[1][tid];
}
#endif

// KS: k splits (1: the SwiGLU form; 2: the k-split form). With KS = 2 the two blocks of a cluster
// compute the same tile over the two halves of K; block w finishes warpgroup w's rows, so once the
// other block's consumers have left their main loop each block sends its other warpgroup's sums
// into that block's drained stages by st.async (completing an mbarrier there, no cluster barrier):
// twice the rows per tile for the same grid (half the x reads per weight byte) at the price of one
// exchange, and an epilogue split over both blocks (faster than the second block sending
// everything to the first between two cluster barriers: docs/PERF.md).
// A (adjacent panels; P > 1): each warpgroup's W rows of a stage come as one 4-D box
// (tma_load_row_panels, wmap from tensor_map_row_panels) in which every row's P panels are requested
// together, P x 128 bytes per DRAM page visit instead of 128; in shared memory the panels' eight-row
// groups alternate, read with a stride of P x 1024 bytes between groups. The SwiGLU form's default
// (P = 2; measured faster than separate panels: docs/PERF.md).
template <int H, int P, int KS, bool A = false>
__global__ void __launch_bounds__(kWideThreads, 1)
    wide_gemm_kernel(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
                     const WideParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!A || P > 1, "adjacent panels need several per stage");
  using T = WideTile<H, P>;
  constexpr int S = T::kStages;
  // A warpgroup's W panel q starts q * kWPanelStep bytes into its rows' region, with its eight-row
  // groups kWGroupStride bytes apart (A: the panels' groups alternate).
  constexpr uint32_t kWPanelStep = A ? 1024 : T::kPanelW, kWGroupStride = A ? P * 1024 : 1024;
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full[S], empty[S];
  __shared__ float s_norm[2][kTokens];  // WideNorm: row scales (consumer), or per-warpgroup sums (producer)
  // The k-split exchange: xready completes once the other block's 8 consumer warps left their main
  // loop (its stages may be written), xfull once the other block's half of this block's tile (and
  // ssfull its row sums of squares, block 0 of a WideNorm producer) arrived here.
  __shared__ __align__(8) uint64_t xready, xfull, ssfull;
  const uint32_t base = swizzle_base(smem_raw);
  const int tid = threadIdx.x;
  // The next kernel may be scheduled at once: its blocks start (and issue their own weight copies)
  // on each SM the moment this kernel's block there exits, instead of after a launch that began
  // only once every block of this grid had left its main loop. Its pdl_wait() still waits for this
  // grid to complete (measured faster: docs/PERF.md).
  pdl_launch_dependents();
  const uint32_t rank = KS > 1 ? cluster_rank() : 0;
  const int64_t tile = static_cast<int64_t>(blockIdx.x) / KS;
  const int64_t r0 = tile * p.block_rows, r1 = r0 + p.second_offset;
  const int steps = p.k_steps / KS;                               // this block's stages
  const int first = KS > 1 ? static_cast<int>(rank) * steps : 0;  // and the first of them
  if (KS > 1 && tid == 0) {
    mbar_init(smem_addr(&xready), kConsumers / 32);
    mbar_init(smem_addr(&xfull), 1);
    mbar_init(smem_addr(&ssfull), 1);
  }
  init_stage_barriers(full, empty, kConsumers / 32);  // a release per consumer warp
  if constexpr (KS > 1) {
    // The other block first touches this one's barriers after its main loop: arrive now, wait then.
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
    if (tid == 0) {
      mbar_expect_tx(smem_addr(&xfull), T::kAcc / 4 * 128 * 16);  // one warpgroup's sums as float4s
      if (p.norm.resid && rank == 0) mbar_expect_tx(smem_addr(&ssfull), kTokens * 4);
    }
    __syncthreads();
  } else {
    __syncthreads();
  }
  float acc[T::kAcc];  // the consumers' sums (declared here: the k-split exchange below is cluster-wide)
  // WideNorm producer operands (load_norm_operands; the k-split form only).
  [[maybe_unused]] float2 rpre[2][KS > 1 ? H / 8 : 1];
  [[maybe_unused]] __nv_bfloat162 gpre[KS > 1 ? H / 8 : 1];
#pragma unroll
  for (int i = 0; i < T::kAcc; ++i) acc[i] = 0.0f;

  if (tid == kConsumers) {                   // the producer: one thread issues every copy
    const uint64_t once = l2_evict_first();  // W is read once per step
    auto copy_w = [&](int j, uint32_t st, uint32_t bar) {
      if constexpr (A) {
        tma_load_row_panels(st + T::kXBytes, wmap, (first + j) * P, static_cast<int>(r0), bar, once);
        tma_load_row_panels(st + T::kXBytes + T::kWBytes, wmap, (first + j) * P, static_cast<int>(r1), bar, once);
      } else {
#pragma unroll
        for (int q = 0; q < P; ++q) {
          const int k = ((first + j) * P + q) * kPanelK;
          tma_load(st + T::kXBytes + q * T::kPanelW, wmap, k, static_cast<int>(r0), bar, once);
          tma_load(st + T::kXBytes + T::kWBytes + q * T::kPanelW, wmap, k, static_cast<int>(r1), bar, once);
        }
      }
    };
    auto copy_x = [&](int j, uint32_t st, uint32_t bar) {
#pragma unroll
      for (int q = 0; q < P; ++q) {
        const int k = ((first + j) * P + q) * kPanelK;
        tma_load(st + q * T::kPanelX, xmap, k, 0, bar);
      }
    };
    const int pre = steps < S ? steps : S;
    for (int j = 0; j < pre; ++j) {  // W is immutable: its first stages before the wait
      const uint32_t bar = smem_addr(&full[j]);
      mbar_expect_tx(bar, T::kStageBytes);
      copy_w(j, base + j * T::kStageBytes, bar);
    }
    pdl_wait();  // x comes from the previous kernel
    for (int j = 0; j < pre; ++j) copy_x(j, base + j * T::kStageBytes, smem_addr(&full[j]));
    for (int j = pre; j < steps; ++j) {
      const int slot = j % S;
      const uint32_t st = base + slot * T::kStageBytes, bar = smem_addr(&full[slot]);
      mbar_wait(smem_addr(&empty[slot]), static_cast<uint32_t>((j / S - 1) & 1));
      mbar_expect_tx(bar, T::kStageBytes);
      copy_w(j, st, bar);
      copy_x(j, st, bar);
    }
  } else if (tid >= kConsumers + 32 && tid < kConsumers + 32 + kTokens) {
    // Two warps of the producer warpgroup that copy nothing. WideNorm consumer: the scale of row
    // tid - kConsumers - 32 from its producer's partial sums (wide_norm_row_sum), while the main
    // loop runs; handed to the epilogue by barrier 2.
    if (p.norm.ss_in) {
      pdl_wait();
      const int row = tid - kConsumers - 32;
      const float sum = row < p.m ? wide_norm_row_sum(p.norm.ss_in, p.norm.ss_tiles, row) : 0.0f;
      s_norm[0][row] = rms_scale(sum, static_cast<float>(p.norm.norm_k), p.norm.eps);
      asm volatile("bar.arrive 2, %0;" ::"n"(kConsumers + kTokens) : "memory");
    }
  } else if (tid < kConsumers) {
    pdl_wait();  // y is written after the previous kernel completed
    const int lane = tid % 32, wg = tid / 128;
    if constexpr (KS > 1) {
      if (p.norm.resid && static_cast<uint32_t>(wg) == rank)  // WideNorm producer: its epilogue's operands
        load_norm_operands<H>(p, wg == 0 ? r0 : r1, 16 * ((tid % 128) / 32) + lane / 4, 2 * (lane % 4), rpre, gpre);
    }
    for (int i = 0; i < steps; ++i) {
      const int slot = i % S;
      mbar_wait(smem_addr(&full[slot]), static_cast<uint32_t>((i / S) & 1));
      const uint32_t st = base + slot * T::kStageBytes, w_panels = st + T::kXBytes + wg * T::kWBytes;
      wgmma_group(acc, [&] {
#pragma unroll
        for (int q = 0; q < P; ++q)
#pragma unroll
          for (int s = 0; s < kPanelK / 16; ++s)  // 16 k (32 bytes) per MMA within the swizzled rows
            wgmma_m64k16<H>(acc, smem_desc(st + q * T::kPanelX + s * 32),
                            smem_desc(w_panels + q * kWPanelStep + s * 32, kWGroupStride));
      });
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_addr(&empty[slot]));
    }
  }
  if constexpr (KS > 1) {
    // Warpgroup w's rows are finished on block w of the cluster: each block sends the other
    // warpgroup's sums ([accumulator / 4][thread] float4s) into the other block's drained stages
    // once that block's consumers left their main loop, and receives its own warpgroup's.
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");  // the other block's barriers exist
    if (tid < kConsumers) {
      const int wg = tid / 128, tl = tid % 128;
      const uint32_t other = rank ^ 1u;
      __syncwarp();
      if (tid % 32 == 0) mbar_arrive_cluster(smem_addr(&xready), other);  // this warp is done with the stages
      if (static_cast<uint32_t>(wg) != rank) {
        mbar_wait(smem_addr(&xready), 0);
        const uint32_t remote = map_to_rank(base, other) + tl * 16, rbar = map_to_rank(smem_addr(&xfull), other);
#pragma unroll
        for (int e = 0; e < T::kAcc / 4; ++e)
          st_async_v4(remote + e * 128 * 16, rbar, acc[4 * e], acc[4 * e + 1], acc[4 * e + 2], acc[4 * e + 3]);
      } else {
        mbar_wait(smem_addr(&xfull), 0);
        const float4* mine = reinterpret_cast<const float4*>(smem_raw + (base - smem_addr(smem_raw)));
#pragma unroll
        for (int e = 0; e < T::kAcc / 4; ++e) {
          const float4 v = mine[e * 128 + tl];
          acc[4 * e] += v.x, acc[4 * e + 1] += v.y, acc[4 * e + 2] += v.z, acc[4 * e + 3] += v.w;
        }
      }
    }
  }
  if (tid < kConsumers) {
    const int lane = tid % 32, wg = tid / 128;
    // Thread (warp w of its warpgroup, lane l) holds tokens 16 w + l / 4 (+ 8) and W rows
    // 8 j + 2 (l % 4) (+ 1) of its warpgroup's H, j < H / 8: acc[4 j + {0, 1}] and acc[4 j + {2, 3}].
    const int t0 = 16 * ((tid % 128) / 32) + lane / 4, c0 = 2 * (lane % 4);
    // WideNorm consumer: this thread's two row scales (s_norm written before the main loop).
    float rs[2] = {1.0f, 1.0f};
    if (p.norm.ss_in) {
      asm volatile("bar.sync 2, %0;" ::"n"(kConsumers + kTokens) : "memory");
      rs[0] = s_norm[0][t0];
      rs[1] = s_norm[0][t0 + 8];
    }
    if (KS > 1 && static_cast<uint32_t>(wg) != rank) {
      // sent to the other block
    } else if (KS > 1 && p.norm.resid) {  // WideNorm producer (the k-split form only)
      if constexpr (KS > 1)
        producer_norm_epilogue<H, T::kAcc>(p, acc, rpre, gpre, s_norm, smem_addr(&ssfull), wg == 0 ? r0 : r1, tile, t0,
                                           c0);
    } else if (!p.swiglu) {
      bf16* const y = p.y + (wg == 0 ? r0 : r1) + c0;
#pragma unroll
      for (int j = 0; j < H / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int t = t0 + 8 * half;
          if (t < p.m)
            store_bf16x2(y + t * p.ldy + 8 * j, acc[4 * j + 2 * half] * rs[half], acc[4 * j + 2 * half + 1] * rs[half]);
        }
    } else {
      // SwiGLU: the warpgroups swap halves of their sums through the drained stages, once both are
      // out of the main loop (the up warpgroup can finish up to a ring's worth of stages ahead of
      // the gate one, whose last MMAs may still read stage 0): the gate warpgroup finishes the
      // output columns of j < J0 with the up sums it receives, the up warpgroup those of j >= J0
      // with the gate sums, so the epilogue, on the kernel's tail, takes half as long as on one
      // warpgroup (measured faster: docs/PERF.md; silu: device_math.cuh).
      float* const ex = reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw)));
      constexpr int J = H / 8, J0 = H / 16;
      const int tl = tid % 128;
      asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory");
#pragma unroll
      for (int e = 0; e < T::kAcc; ++e)  // wg 0 sends its gate sums of j >= J0, wg 1 its up sums of j < J0
        if ((wg == 0) == (e >= 4 * J0)) ex[e * 128 + tl] = acc[e];
      asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory");
      bf16* const act = p.y + r0 + c0;
#pragma unroll
      for (int j = 0; j < J; ++j) {
        if ((j < J0) != (wg == 0)) continue;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int t = t0 + 8 * half;
          float v[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = 4 * j + 2 * half + e;
            const float mine = acc[i] * rs[half], other = ex[i * 128 + tl] * rs[half];
            const float g = wg == 0 ? mine : other, u = wg == 0 ? other : mine;
            v[e] = silu(g) * u;
          }
          if (t < p.m) store_bf16x2(act + t * p.ldy + 8 * j, v[0], v[1]);
        }
      }
    }
  }
  // No block leaves while a peer may still arrive on its barriers or copy into its stages.
  if constexpr (KS > 1) cluster_sync();
#else
  pdl_wait();  // not built for this device: hopper_kernels_available() is false, never launched
#endif
}

// Instantiated half widths of the SwiGLU form, smallest first: the launcher takes the first whose
// grid fits the SMs.
constexpr int kHalves[] = {16, 24, 64, 112};
// The k-split form: its half widths, 64-k panels per stage and splits.
constexpr int kSplitHalves[] = {32, 48};
constexpr int kSplitPanels = 2;
constexpr int kSplits = 2;

template <int H, int P, int KS = 1, bool A = false>
void launch_wide(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, bool swiglu, int64_t blocks,
                 const Launch& launch, const WideNorm* norm = nullptr) {
  using T = WideTile<H, P>;
  constexpr size_t smem = size_t{T::kStages} * T::kStageBytes + 1024;  // + the 1024-byte alignment
  allow_dynamic_smem<wide_gemm_kernel<H, P, KS, A>>(smem, "wide_gemm", 2 * 8 * T::kStages + 64);
  const CUtensorMap wmap = A ? tensor_map_row_panels(w, k, n, k, P, H) : tensor_map(w, k, n, k, H, /*promote=*/false);
  const CUtensorMap xmap = tensor_map(x.data, k, x.rows, x.stride, kTokens);
  WideParams p;
  p.m = static_cast<int32_t>(x.rows);
  p.k_steps = static_cast<int32_t>(k / (kPanelK * P));
  p.block_rows = swiglu ? H : 2 * H;
  p.second_offset = swiglu ? n / 2 : H;
  p.swiglu = swiglu;
  p.y = static_cast<bf16*>(y.data);
  p.ldy = y.stride;
  if (norm) p.norm = *norm;
  launch_kernel_clustered("wide_gemm", wide_gemm_kernel<H, P, KS, A>, dim3(static_cast<unsigned>(blocks)),
                          dim3(kWideThreads), smem, KS, launch, wmap, xmap, p);
}

// Clusters of the k-split form's H instantiation the device holds at once (0 when it cannot say).
template <int H>
int max_ksplit_clusters() {
  using T = WideTile<H, kSplitPanels>;
  constexpr size_t smem = size_t{T::kStages} * T::kStageBytes + 1024;
  allow_dynamic_smem<wide_gemm_kernel<H, kSplitPanels, kSplits>>(smem, "wide_gemm", 2 * 8 * T::kStages + 64);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(kSplits);
  cfg.blockDim = dim3(kWideThreads);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = kSplits;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, wide_gemm_kernel<H, kSplitPanels, kSplits>, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// The SwiGLU form's stages: two adjacent 64-k panels (A) where K allows, else one.
template <int H>
void launch_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int64_t blocks,
                   const Launch& launch, const WideNorm* norm) {
  if ((k / kPanelK) % 2 == 0 && n % 16 == 0)
    launch_wide<H, 2, 1, true>(x, w, n, k, y, true, blocks, launch, norm);
  else
    launch_wide<H, 1>(x, w, n, k, y, true, blocks, launch, norm);
}

// The operands every form needs (the device, BF16 x and y, M <= 64, K a positive multiple of 64,
// y `cols` wide, TMA-aligned x and W, y rows written in BF16 pairs, 32-bit N and K).
bool operands_ok(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int64_t cols) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return hopper_kernels_available() && x.dt == Dt::BF16 && y.dt == Dt::BF16 && x.rows >= 1 &&
         x.rows <= kWideGemmMaxRows && y.rows >= x.rows && y.cols == cols && x.cols == k && k > 0 && k % kPanelK == 0 &&
         x.stride % 8 == 0 && aligned(x.data) && aligned(w) && y.stride % 2 == 0 &&
         reinterpret_cast<uintptr_t>(y.data) % 4 == 0 && n <= (int64_t{1} << 31) && k <= (int64_t{1} << 31);
}

}  // namespace

int32_t wide_gemm_swiglu_half(int64_t n, int32_t sms) {
  if (n <= 0 || sms < 1 || n % 2 != 0) return 0;
  const int64_t cols = n / 2;  // output columns; a block owns h of them
  for (int h : kHalves) {
    const int64_t blocks = cols / h;
    if (cols % h == 0 && blocks <= sms) return blocks * 4 >= int64_t{sms} * 3 ? h : 0;
  }
  return 0;
}

bool wide_gemm_swiglu_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms) {
  return operands_ok(x, w, n, k, y, n / 2) && wide_gemm_swiglu_half(n, sms) > 0;
}

int32_t wide_gemm_ksplit_half(int64_t n, int32_t sms) {
  if (n <= 0 || sms < 1) return 0;
  for (int h : kSplitHalves) {
    const int64_t blocks = n % (2 * h) == 0 ? kSplits * n / (2 * h) : -1;
    if (blocks > 0 && blocks <= sms) return blocks * 4 >= int64_t{sms} * 3 ? h : 0;
  }
  return 0;
}

bool wide_gemm_ksplit_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms) {
  const int h = wide_gemm_ksplit_half(n, sms);
  if (h == 0 || k % (kPanelK * kSplitPanels * kSplits) != 0) return false;
  // The operand checks, then the clusters of two must all fit at once.
  if (!operands_ok(x, w, n, k, y, n)) return false;
  const int fit = h == 32 ? max_ksplit_clusters<32>() : max_ksplit_clusters<48>();
  return fit >= n / (2 * h);
}

int32_t wide_gemm_ksplit_tiles(int64_t n, int32_t sms) {
  const int h = wide_gemm_ksplit_half(n, sms);
  return h > 0 ? static_cast<int32_t>(n / (2 * h)) : 0;
}

void wide_gemm_ksplit(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, const Launch& launch,
                      const WideNorm* norm) {
  if (!wide_gemm_ksplit_supported(x, w, n, k, y, sms))
    unsupported_config("wide_gemm_ksplit: shape, dtype, alignment or clusters (check wide_gemm_ksplit_supported)");
  if (norm && norm->resid &&
      (!norm->gamma || !norm->ss_out || norm->ld_resid < n || norm->ld_resid % 2 != 0 ||
       reinterpret_cast<uintptr_t>(norm->resid) % 8 != 0 || reinterpret_cast<uintptr_t>(norm->gamma) % 4 != 0))
    unsupported_config("wide_gemm_ksplit: a WideNorm producer needs gamma, ss_out and an aligned F32 residual");
  const int h = wide_gemm_ksplit_half(n, sms);
  const int64_t blocks = kSplits * n / (2 * h);
  if (h == 32)
    launch_wide<32, kSplitPanels, kSplits>(x, w, n, k, y, false, blocks, launch, norm);
  else
    launch_wide<48, kSplitPanels, kSplits>(x, w, n, k, y, false, blocks, launch, norm);
}

void wide_gemm_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, const Launch& launch,
                      const WideNorm* norm) {
  if (norm && (norm->resid || !norm->ss_in)) unsupported_config("wide_gemm_swiglu: only a WideNorm consumer");
  if (!wide_gemm_swiglu_supported(x, w, n, k, y, sms))
    unsupported_config("wide_gemm_swiglu: shape, dtype or alignment (check wide_gemm_swiglu_supported)");
  const int h = wide_gemm_swiglu_half(n, sms);
  const int64_t blocks = n / 2 / h;
  switch (h) {
    case 16: launch_swiglu<16>(x, w, n, k, y, blocks, launch, norm); break;
    case 24: launch_swiglu<24>(x, w, n, k, y, blocks, launch, norm); break;
    case 64: launch_swiglu<64>(x, w, n, k, y, blocks, launch, norm); break;
    default: launch_swiglu<112>(x, w, n, k, y, blocks, launch, norm); break;
  }
}

}  // namespace inferdesk::cuda
