// FP8 decode-batch GEMMs on Hopper warpgroup MMAs (sm_90a only): y[M, N] = x[M, K] @ W[N, K]^T
// for M <= 64 quantized token rows (fp8_quantize wrote x and its scales), and the SwiGLU form
// y[M, I] = silu(x @ Wg^T) * (x @ Wu^T) with W = [Wg; Wu] stacked. The structure of wide_gemm.cu
// (its BF16 sibling) with one-byte operands:
// - The weight rows are the wgmma's N dimension (W the B operand, x the A operand: 64 token rows,
//   zero-filled past M by the copy engine), so a warpgroup's tile can be any multiple of 8 rows.
//   A block has two multiplying warpgroups (BN rows each: consecutive rows, or the gate rows and
//   the matching up rows) and one producer thread that copies each 128-k stage by TMA (x panel
//   64 x 128 bytes, two W panels BN x 128, all with the 128-byte swizzle: a k32 step is 32 bytes,
//   the same descriptors as the BF16 k16 step) into a ring of mbarrier-tracked stages. W copies of
//   the first stages are issued before griddepcontrol.wait (W is immutable), with an L2
//   evict-first policy (read once per step).
// - K splits (KS > 1, plain form): the KS blocks of a cluster compute one tile over KS slices of
//   K; each leaves its sums in its drained stages and, after a cluster barrier, finishes 1 / KS of
//   the tile's columns, adding the KS partial sums from distributed shared memory in rank order
//   (deterministic, and a row's result does not depend on M).
// - Scales: per-tensor / per-channel weights take s_x * s_w in the epilogue; block weights (one
//   stage is one 128-k group) sum each stage's products apart (scale-d 0 on its first MMA) and add
//   them scaled by the group's s_x * s_w, as the CPU reference does.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/sm90a/fp8_wgmma.cuh"
#include "cuda/kernels/sm90a/fp8_wide_gemm.h"
#include "cuda/kernels/sm90a/hopper.cuh"
#include "cuda/kernels/sm90a/wide_gemm.h"

namespace inferdesk::cuda {
namespace {

constexpr int kTok = kFp8WideMaxRows;      // the wgmma M
constexpr int kPanel = 128;                // k (and bytes) per stage: one 128-byte swizzled row
constexpr int kConsumers = 256;            // two multiplying warpgroups
constexpr int kThreads = kConsumers + 32;  // + the producer warp
constexpr int kMaxStages = 12;
// Dynamic shared memory of a block when one, or two, fit an SM.
constexpr int kSmemOne = 200 * 1024, kSmemTwo = 100 * 1024;

template <int BN>
struct Tile {
  static constexpr int kX = kTok * kPanel;  // an x panel: 8 KB
  static constexpr int kW = BN * kPanel;    // one warpgroup's W panel (a multiple of 1 KB)
  static constexpr int kStage = kX + 2 * kW;
  static constexpr int kAcc = BN / 2;  // F32 sums per thread (64 x BN per warpgroup)
  static_assert(BN % 16 == 0 && kW % 1024 == 0, "tile");
};

struct Params {
  int32_t m;           // token rows
  int32_t panels;      // stages of this block: K / 128 / KS
  int32_t stages;      // ring depth
  int64_t block_rows;  // W rows advanced per tile: 2 BN (plain) or BN (SwiGLU)
  int64_t second;      // warpgroup 1's rows start this far after warpgroup 0's: BN, or I
  bool swiglu;
  const float* sx;  // [groups][m]
  const float* sw;
  int32_t gran;     // Fp8Gran
  int64_t sw_cols;  // block weights
  const bf16* bias;
  bf16* y;
  int64_t ldy;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t cta_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void sync_cluster() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// A float4 at shared-memory address `addr` of block `rank` of the cluster.
__device__ __forceinline__ float4 load_peer(uint32_t addr, uint32_t rank) {
  float4 v;
  asm volatile(
      "{\n.reg .b32 a;\nmapa.shared::cluster.u32 a, %4, %5;\nld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [a];\n}"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "r"(addr), "r"(rank)
      : "memory");
  return v;
}

// Columns col, col + 1 of tokens t0 (v[0], v[1]) and t0 + 8 (v[2], v[3]) of a plain tile:
// weight and token scales (unless block weights applied them), bias, BF16 pairs.
template <bool kBlock>
__device__ __forceinline__ void store_pairs(const Params& p, const float (&v)[4], int64_t col, int t0) {
  float w0 = 1.0f, w1 = 1.0f, b0 = 0.0f, b1 = 0.0f;
  if (!kBlock) {
    const bool tensor = p.gran == static_cast<int32_t>(Fp8Gran::Tensor);
    w0 = p.sw[tensor ? 0 : col];
    w1 = p.sw[tensor ? 0 : col + 1];
  }
  if (p.bias) {
    b0 = __bfloat162float(p.bias[col]);
    b1 = __bfloat162float(p.bias[col + 1]);
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int t = t0 + 8 * half;
    if (t >= p.m) continue;
    const float sx = kBlock ? 1.0f : p.sx[t];
    store_bf16x2(p.y + t * p.ldy + col, v[2 * half] * (sx * w0) + b0, v[2 * half + 1] * (sx * w1) + b1);
  }
}

// The product scales of this thread's tokens t0, t0 + 8 for 128-k group g (block weights).
__device__ __forceinline__ float2 group_factors(const Params& p, int g, int t0, int64_t row0) {
  const float sw = p.sw[(row0 / kFp8Block) * p.sw_cols + g];
  const float* sx = p.sx + static_cast<int64_t>(g) * p.m;
  return make_float2(sx[min(t0, p.m - 1)] * sw, sx[min(t0 + 8, p.m - 1)] * sw);
}

// The multiplying warpgroups' main loop over this block's stages.
template <int BN, bool kBlock>
__device__ __forceinline__ void consume(const Params& p, float (&acc)[BN / 2], uint32_t base, uint64_t* full,
                                        uint64_t* empty, int first, int t0, int64_t row0) {
  using T = Tile<BN>;
  const int lane = threadIdx.x % 32, wg = threadIdx.x / 128;
  [[maybe_unused]] float part[T::kAcc];
  [[maybe_unused]] float2 f = make_float2(0.0f, 0.0f);
  if constexpr (kBlock) {
#pragma unroll
    for (int i = 0; i < T::kAcc; ++i) part[i] = 0.0f;
    f = group_factors(p, first, t0, row0);
  }
  for (int i = 0; i < p.panels; ++i) {
    const int slot = i % p.stages;
    mbar_wait(smem_addr(&full[slot]), static_cast<uint32_t>((i / p.stages) & 1));
    const uint32_t st = base + slot * T::kStage, wpan = st + T::kX + wg * T::kW;
    if constexpr (kBlock) {
      fence_regs(part);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int s = 0; s < kPanel / 32; ++s)
        wgmma_e4m3<BN>(part, smem_desc(st + s * 32), smem_desc(wpan + s * 32), s > 0 ? 1 : 0);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      const float2 next = i + 1 < p.panels ? group_factors(p, first + i + 1, t0, row0) : f;
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      fence_regs(part);
#pragma unroll
      for (int j = 0; j < T::kAcc / 4; ++j) {
        acc[4 * j] += part[4 * j] * f.x;
        acc[4 * j + 1] += part[4 * j + 1] * f.x;
        acc[4 * j + 2] += part[4 * j + 2] * f.y;
        acc[4 * j + 3] += part[4 * j + 3] * f.y;
      }
      f = next;
    } else {
      wgmma_group(acc, [&] {
#pragma unroll
        for (int s = 0; s < kPanel / 32; ++s) wgmma_e4m3<BN>(acc, smem_desc(st + s * 32), smem_desc(wpan + s * 32), 1);
      });
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_addr(&empty[slot]));
  }
}

// SwiGLU epilogue: the up warpgroup leaves its scaled sums in the drained stages, the gate
// warpgroup finishes silu(g) * u.
template <int BN, bool kBlock>
__device__ __forceinline__ void swiglu_epilogue(const Params& p, float (&acc)[BN / 2], float* ex, int64_t row0, int t0,
                                                int c0) {
  const int wg = threadIdx.x / 128, tl = threadIdx.x % 128;
  // Scale the sums in place: acc[4 j + {0, 1}] token t0, [4 j + {2, 3}] token t0 + 8.
  if constexpr (!kBlock) {
    const bool tensor = p.gran == static_cast<int32_t>(Fp8Gran::Tensor);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = min(t0 + (e >= 2 ? 8 : 0), p.m - 1);
        acc[4 * j + e] *= p.sx[t] * p.sw[tensor ? 0 : row0 + 8 * j + c0 + (e & 1)];
      }
  }
  asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory");  // both out of the main loop
  if (wg == 1) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) ex[i * 128 + tl] = acc[i];
  }
  asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory");
  if (wg == 1) return;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int t = t0 + 8 * half;
      if (t >= p.m) continue;
      const int i = 4 * j + 2 * half;
      store_bf16x2(p.y + t * p.ldy + row0 + 8 * j + c0, silu(acc[i]) * ex[i * 128 + tl],
                   silu(acc[i + 1]) * ex[(i + 1) * 128 + tl]);
    }
}

// The producer thread: every stage's copies, W of the first stages before the wait (W does not
// depend on the previous kernel), then x, then one stage at a time as the consumers free them.
template <int BN>
__device__ __forceinline__ void produce(const Params& p, const CUtensorMap& wmap, const CUtensorMap& xmap,
                                        uint32_t base, uint64_t* full, uint64_t* empty, int first, int64_t r0,
                                        int64_t r1) {
  using T = Tile<BN>;
  const uint64_t once = l2_evict_first();
  auto copy_w = [&](int j, uint32_t st, uint32_t bar) {
    const int k = (first + j) * kPanel;
    tma_load(st + T::kX, wmap, k, static_cast<int>(r0), bar, once);
    tma_load(st + T::kX + T::kW, wmap, k, static_cast<int>(r1), bar, once);
  };
  const int pre = min(p.panels, p.stages);
  for (int j = 0; j < pre; ++j) {  // W first: it does not depend on the previous kernel
    mbar_expect_tx(smem_addr(&full[j]), T::kStage);
    copy_w(j, base + j * T::kStage, smem_addr(&full[j]));
  }
  pdl_wait();  // x comes from the previous kernel
  for (int j = 0; j < pre; ++j) tma_load(base + j * T::kStage, xmap, (first + j) * kPanel, 0, smem_addr(&full[j]));
  for (int j = pre; j < p.panels; ++j) {
    const int slot = j % p.stages;
    const uint32_t st = base + slot * T::kStage, bar = smem_addr(&full[slot]);
    mbar_wait(smem_addr(&empty[slot]), static_cast<uint32_t>((j / p.stages - 1) & 1));
    mbar_expect_tx(bar, T::kStage);
    copy_w(j, st, bar);
    tma_load(st, xmap, (first + j) * kPanel, 0, bar);
  }
}

// K splits: each block leaves its partial sums as [column group j][thread] float4s in its drained
// stages, then block `rank` finishes the column groups j % KS == rank from all KS blocks, adding
// them in rank order (every thread of the block calls this: it holds a cluster barrier).
template <int BN, int KS, bool kBlock>
__device__ __forceinline__ void finish_splits(const Params& p, const float (&acc)[BN / 2], float* ex, uint32_t base,
                                              uint32_t rank, int64_t row0, int t0, int c0) {
  const int tid = threadIdx.x;
  if (tid < kConsumers) {
    asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory");  // both warpgroups done with the stages
    auto* ex4 = reinterpret_cast<float4*>(ex);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
      ex4[j * kConsumers + tid] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
  }
  sync_cluster();
  if (tid < kConsumers) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      if (j % KS != static_cast<int>(rank)) continue;
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int q = 0; q < KS; ++q) {
        const float4 s = load_peer(base + static_cast<uint32_t>((j * kConsumers + tid) * 16), q);
        v[0] += s.x, v[1] += s.y, v[2] += s.z, v[3] += s.w;
      }
      store_pairs<kBlock>(p, v, row0 + 8 * j + c0, t0);
    }
  }
}

#endif

// Two blocks an SM fit the registers of the narrower tiles (<= 112 a thread).
template <int BN, int KS, bool kBlock>
__global__ void __launch_bounds__(kThreads, BN >= 96 ? 1 : 2)
    fp8_wide_kernel(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
                    const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = Tile<BN>;
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full[kMaxStages], empty[kMaxStages];
  const uint32_t base = swizzle_base(smem_raw);
  float* const ex = reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw)));
  const int tid = threadIdx.x;
  pdl_launch_dependents();  // as wide_gemm.cu: the next kernel's blocks start as these exit
  const uint32_t rank = KS > 1 ? cta_rank() : 0;
  const int64_t tile = static_cast<int64_t>(blockIdx.x) / KS;
  const int64_t r0 = tile * p.block_rows, r1 = r0 + p.second;
  const int first = static_cast<int>(rank) * p.panels;
  if (tid == 0) {
    for (int s = 0; s < p.stages; ++s) {
      mbar_init(smem_addr(&full[s]), 1);
      mbar_init(smem_addr(&empty[s]), kConsumers / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  float acc[T::kAcc];
#pragma unroll
  for (int i = 0; i < T::kAcc; ++i) acc[i] = 0.0f;
  const int lane = tid % 32, wg = tid / 128;
  const int t0 = 16 * ((tid % 128) / 32) + lane / 4, c0 = 2 * (lane % 4);
  const int64_t row0 = wg == 0 ? r0 : r1;

  if (tid == kConsumers) {  // the producer
    produce<BN>(p, wmap, xmap, base, full, empty, first, r0, r1);
  } else if (tid < kConsumers) {
    pdl_wait();  // the scales, and y is written after the previous kernel completed
    consume<BN, kBlock>(p, acc, base, full, empty, first, t0, row0);
  }

  if constexpr (KS == 1) {
    if (tid >= kConsumers) return;
    if (p.swiglu) {
      swiglu_epilogue<BN, kBlock>(p, acc, ex, row0, t0, c0);
      return;
    }
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const float v[4] = {acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]};
      store_pairs<kBlock>(p, v, row0 + 8 * j + c0, t0);
    }
  } else {
    finish_splits<BN, KS, kBlock>(p, acc, ex, base, rank, row0, t0, c0);
    sync_cluster();  // no block leaves while a peer may still read its shared memory
  }
#else
  pdl_wait();  // not built for this device: hopper_kernels_available() is false, never launched
#endif
}

// ------------------------------------------------------------------------------------- host

// A uint8 [rows, inner] tensor (row pitch `pitch` bytes) read in boxes of 128 x box_rows with the
// 128-byte swizzle, out-of-range rows as zeros; `promote`: 256-byte L2 fetches (data read again).
CUtensorMap u8_map(const void* base, int64_t inner, int64_t rows, int64_t pitch, uint32_t box_rows, bool promote) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) unsupported_config("fp8 wide GEMM: cuTensorMapEncodeTiled is not available");
  CUtensorMap m{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitch)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kPanel), box_rows};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            promote ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) unsupported_config("fp8 wide GEMM: tensor map rejected (" + std::to_string(r) + ")");
  return m;
}

// One launch configuration: tile width, K splits, whether two blocks share an SM.
struct Config {
  int bn = 0, ks = 1;
  bool two = false;
};

template <int BN, int KS, bool kBlock>
size_t smem_bytes(bool two) {
  const int budget = two ? kSmemTwo : kSmemOne;
  const int stages = std::min(kMaxStages, (budget - 1024) / Tile<BN>::kStage);
  return static_cast<size_t>(stages) * Tile<BN>::kStage + 1024;  // + the 1024-byte alignment
}

// Blocks of this instantiation the device runs at once (clusters of KS count KS each).
template <int BN, int KS, bool kBlock>
int64_t resident_blocks(bool two, int32_t sms) {
  const size_t smem = smem_bytes<BN, KS, kBlock>(two);
  if ((smem - 1024) / Tile<BN>::kStage < 2) return 0;  // no ring
  allow_dynamic_smem<fp8_wide_kernel<BN, KS, kBlock>>(smem, "fp8_wide_gemm", 2 * 8 * kMaxStages);
  if (KS == 1) {
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fp8_wide_kernel<BN, KS, kBlock>, kThreads, smem) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return int64_t{std::min(per_sm, two ? 2 : 1)} * sms;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(KS);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = KS;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, fp8_wide_kernel<BN, KS, kBlock>, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return int64_t{n} * KS;
}

template <int BN, int KS, bool kBlock>
void launch(const Fp8X& x, const Fp8Weight& w, const bf16* bias, const Mat& y, bool swiglu, bool two,
            const Launch& launch) {
  const size_t smem = smem_bytes<BN, KS, kBlock>(two);
  allow_dynamic_smem<fp8_wide_kernel<BN, KS, kBlock>>(smem, "fp8_wide_gemm", 2 * 8 * kMaxStages);
  const CUtensorMap wmap = u8_map(w.data, w.k, w.n, w.k, BN, /*promote=*/false);
  const CUtensorMap xmap = u8_map(x.q, x.cols, x.rows, x.stride, kTok, /*promote=*/true);
  Params p{};
  p.m = static_cast<int32_t>(x.rows);
  p.panels = static_cast<int32_t>(w.k / kPanel / KS);
  p.stages = static_cast<int32_t>((smem - 1024) / Tile<BN>::kStage);
  p.block_rows = swiglu ? BN : 2 * BN;
  p.second = swiglu ? w.n / 2 : BN;
  p.swiglu = swiglu;
  p.sx = x.scales;
  p.sw = w.scales;
  p.gran = static_cast<int32_t>(w.gran);
  p.sw_cols = w.scale_cols;
  p.bias = bias;
  p.y = static_cast<bf16*>(y.data);
  p.ldy = y.stride;
  const int64_t tiles = swiglu ? w.n / 2 / BN : w.n / (2 * BN);
  launch_kernel_clustered("fp8_wide_gemm", fp8_wide_kernel<BN, KS, kBlock>, dim3(static_cast<unsigned>(tiles * KS)),
                          dim3(kThreads), smem, KS, launch, wmap, xmap, p);
}

// Calls f.template operator()<BN, KS, kBlock>() for the instantiation of (bn, ks, block); false
// when there is none.
template <class F>
bool with_instance(int bn, int ks, bool block, F&& f) {
  if (block) {
    if (bn == 64 && ks == 1) return f.template operator()<64, 1, true>(), true;
    if (bn == 64 && ks == 2) return f.template operator()<64, 2, true>(), true;
    if (bn == 64 && ks == 4) return f.template operator()<64, 4, true>(), true;
    if (bn == 32 && ks == 1) return f.template operator()<32, 1, true>(), true;
    if (bn == 32 && ks == 2) return f.template operator()<32, 2, true>(), true;
    if (bn == 32 && ks == 4) return f.template operator()<32, 4, true>(), true;
    return false;
  }
  if (ks == 1) {
    switch (bn) {
      case 112: return f.template operator()<112, 1, false>(), true;
      case 96: return f.template operator()<96, 1, false>(), true;
      case 64: return f.template operator()<64, 1, false>(), true;
      case 48: return f.template operator()<48, 1, false>(), true;
      case 32: return f.template operator()<32, 1, false>(), true;
      default: return false;
    }
  }
  if (bn == 64 && ks == 2) return f.template operator()<64, 2, false>(), true;
  if (bn == 64 && ks == 4) return f.template operator()<64, 4, false>(), true;
  if (bn == 48 && ks == 2) return f.template operator()<48, 2, false>(), true;
  if (bn == 48 && ks == 4) return f.template operator()<48, 4, false>(), true;
  if (bn == 32 && ks == 2) return f.template operator()<32, 2, false>(), true;
  if (bn == 32 && ks == 4) return f.template operator()<32, 4, false>(), true;
  return false;
}

int64_t resident(const Config& c, bool block, int32_t sms) {
  int64_t n = 0;
  with_instance(c.bn, c.ks, block, [&]<int BN, int KS, bool B>() { n = resident_blocks<BN, KS, B>(c.two, sms); });
  return n;
}

// The configuration for an N x K weight on `sms` SMs (bn 0: none): among the instantiations whose
// tiles divide N (and whose splits divide K's stages), the one that keeps the most of the device
// busy in its last wave; ties go to wider tiles (fewer x reads per weight byte), then fewer splits.
Config choose(int64_t n, int64_t k, bool swiglu, bool block, int32_t sms) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, bool, bool, int32_t>, Config> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(n, k, swiglu, block, sms);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const int64_t panels = k / kPanel;
  Config best;
  double best_use = 0.0;
  const int widths[] = {112, 96, 64, 48, 32};
  for (int bn : widths) {
    if (block && kFp8Block % bn != 0) continue;
    const int64_t per_tile = swiglu ? bn : 2 * bn;
    const int64_t cols = swiglu ? n / 2 : n;
    if (cols % per_tile != 0 || (swiglu && block && cols % kFp8Block != 0)) continue;
    for (int ks : {1, 2, 4}) {
      if ((swiglu && ks > 1) || panels % ks != 0) continue;
      for (bool two : {false, true}) {
        if (ks > 1 && two) continue;
        Config c{bn, ks, two};
        const int64_t cap = resident(c, block, sms);
        if (cap <= 0) continue;
        const int64_t blocks = cols / per_tile * ks, waves = (blocks + cap - 1) / cap;
        const double use = static_cast<double>(blocks) / static_cast<double>(waves * cap);
        if (use > best_use + 1e-9) {
          best_use = use;
          best = c;
        }
      }
    }
  }
  cache[key] = best;
  return best;
}

bool operands_ok(const Fp8X& x, const Fp8Weight& w, const Mat& y, bool swiglu) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  const bool block = w.gran == Fp8Gran::Block;
  const bool scheme = block ? w.act == Fp8Act::DynamicGroup && x.groups == w.k / kPanel && w.scale_cols == x.groups
                            : w.act != Fp8Act::DynamicGroup && x.groups == 1;
  return hopper_kernels_available() && scheme && x.rows >= 1 && x.rows <= kTok && x.cols == w.k && w.k > 0 &&
         w.k % kPanel == 0 && x.stride % 16 == 0 && aligned(x.q) && aligned(w.data) && y.dt == Dt::BF16 &&
         y.rows >= x.rows && y.cols == (swiglu ? w.n / 2 : w.n) && y.stride % 2 == 0 &&
         reinterpret_cast<uintptr_t>(y.data) % 4 == 0 && w.n < (int64_t{1} << 31) && w.k < (int64_t{1} << 31);
}

void run(const Fp8X& x, const Fp8Weight& w, const bf16* bias, const Mat& y, bool swiglu, int32_t sms, const Launch& l) {
  if (!fp8_wide_supported(x, w, y, swiglu, sms))
    unsupported_config("fp8_wide_gemm: shape, scheme or alignment not supported (check fp8_wide_supported)");
  const bool block = w.gran == Fp8Gran::Block;
  const Config c = choose(w.n, w.k, swiglu, block, sms);
  with_instance(c.bn, c.ks, block,
                [&]<int BN, int KS, bool B>() { launch<BN, KS, B>(x, w, bias, y, swiglu, c.two, l); });
}

}  // namespace

bool fp8_wide_supported(const Fp8X& x, const Fp8Weight& w, const Mat& y, bool swiglu, int32_t sms) {
  if (!operands_ok(x, w, y, swiglu) || (swiglu && w.n % 2 != 0)) return false;
  return choose(w.n, w.k, swiglu, w.gran == Fp8Gran::Block, sms).bn > 0;
}

Fp8WideTile fp8_wide_tile(int64_t n, int64_t k, bool swiglu, bool block, int32_t sms) {
  if (!hopper_kernels_available() || k <= 0 || k % kPanel != 0) return {};
  const Config c = choose(n, k, swiglu, block, sms);
  return c.bn > 0 ? Fp8WideTile{c.bn, c.ks, c.two} : Fp8WideTile{};
}

void fp8_wide_gemm(const Fp8X& x, const Fp8Weight& w, const bf16* bias, Mat y, int32_t sms, const Launch& launch) {
  run(x, w, bias, y, false, sms, launch);
}

void fp8_wide_swiglu(const Fp8X& x, const Fp8Weight& w, Mat y, int32_t sms, const Launch& launch) {
  run(x, w, nullptr, y, true, sms, launch);
}

}  // namespace inferdesk::cuda
