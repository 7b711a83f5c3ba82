// Skinny GEMM for decode batches on Hopper: y[M, N] = x[M, K] @ W[N, K]^T with M <= 64, BF16 in
// and out, F32 accumulation, through warpgroup MMAs (wgmma, sm_90a only: this file is built for
// sm_90a alone and skinny_gemm_available() probes that the device runs it).
//
// Why not cuBLASLt at these sizes: a decode step's GEMMs are weight streams (64 x 4096 activations
// against 50-235 MB of weights per projection), and cuBLASLt reaches 2.9-4.1 TB/s on them, cannot
// overlap its start with the previous kernel (PDL) and leaves the last wave's SMs idle. Here:
// - W is the wgmma's A operand (64 weight rows per warpgroup, two warpgroups: 128 rows per tile)
//   and x its B operand (N = 64 token rows, zero-filled past M), both K-major in shared memory with
//   the 128-byte swizzle, copied by cp.async (16 bytes per thread and copy) through a kStages-deep
//   ring: kStages - 1 stages of W (16 KB) and x (8 KB) in flight per SM while one is multiplied.
// - Stream-K: the grid is one block per SM and the (tile, 64-wide k step) iterations are cut into
//   equal contiguous ranges, one per block, so every SM streams the same number of weight bytes and
//   the ring runs on across tile boundaries. A block owning a whole tile writes it; a tile shared by
//   several blocks is reduced by the last of them to arrive (a counter of the k steps done per
//   tile, reset by that block), which sums the pieces in block order from per-block slots: the
//   result does not depend on timing, and a token row's result does not depend on M.
// - Two ways to fill the stages, with the same MMAs in the same order (the same bits): cp.async
//   from every thread with a block barrier per stage (skinny_gemm_kernel), or TMA from one
//   producer thread into mbarrier-tracked stages that the multiplying warpgroups release
//   (skinny_tma_kernel). On the H200 both stream the gate/up weight at ~3.6 TB/s against
//   cuBLASLt's 4.0 (docs/PERF.md), so the loader is not what limits the kernel.
// - PDL: the W copies of the first stages are issued before griddepcontrol.wait (W is immutable),
//   so the weight stream starts while the previous kernel drains.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/sm90a/hopper.cuh"

namespace inferdesk::cuda {
namespace {

constexpr int kBN = 128;                  // weight rows per tile (two warpgroups of 64)
constexpr int kThreads = 256;
constexpr int kAcc = 32;                  // F32 accumulators per thread (64 x 64 per warpgroup)

// A stage holds BK (64 or 128) k of the tile's W rows and of the 64 token rows, as BK / 64
// "panels" of 128-byte rows (64 k each): W panels of kBN rows, then x panels of 64 rows.
template <int BK>
struct Stage {
  static constexpr int kPanels = BK / 64;
  static constexpr int kWPanel = kBN * 128;             // 16 KB
  static constexpr int kXPanel = kSkinnyMaxRows * 128;  // 8 KB
  static constexpr int kWBytes = kPanels * kWPanel;
  static constexpr int kBytes = kWBytes + kPanels * kXPanel;
  static constexpr int kChunksPerRow = BK / 8;  // 16-byte chunks of a row's BK k
  static constexpr int kWChunks = kBN * kChunksPerRow / kThreads;  // per thread and stage
  static constexpr int kXChunks = kSkinnyMaxRows * kChunksPerRow / kThreads;
  // Shared-memory offset of 16-byte chunk c (of BK / 8) of row r in panels of `rows` rows: the
  // 128-byte swizzle puts chunk c % 8 of the panel's row r at r * 128 + ((c % 8) ^ (r % 8)) * 16.
  static __device__ __forceinline__ uint32_t offset(int r, int c, int rows) {
    return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
  }
};

struct SkinnyParams {
  const bf16* x;
  int64_t ldx;
  int32_t m;
  const bf16* w;
  int64_t k;
  bf16* y;
  int64_t ldy;
  float* partials;    // [grid][2][kAcc / 4][kThreads] float4
  int32_t* counters;  // [tiles], zero between launches
  int64_t total;      // tiles * k_iters
  int32_t k_iters;    // K / BK
};

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}

// First iteration of block b's range.
__device__ __forceinline__ int64_t range_begin(int64_t b, int64_t total, int64_t grid) {
  return b * total / grid;
}

// The block whose range holds iteration it.
__device__ int64_t block_of(int64_t it, int64_t total, int64_t grid) {
  int64_t b = it * grid / total;
  while (b + 1 < grid && range_begin(b + 1, total, grid) <= it) ++b;
  while (b > 0 && range_begin(b, total, grid) > it) --b;
  return b;
}


// Walks a block's iterations (tile, k step) without divisions.
struct Cursor {
  int64_t tile;
  int k;
  __device__ __forceinline__ void next(int k_iters) {
    if (++k == k_iters) {
      k = 0;
      ++tile;
    }
  }
};

// Writes a finished tile: thread (warpgroup wg, warp w, lane l) holds weight rows
// n0 + 64 wg + 16 w + l / 4 (+ 8) and token columns 8 j + 2 (l % 4) (+ 1), j < 8.
__device__ __forceinline__ void store_tile(const SkinnyParams& p, int64_t tile, const float (&v)[kAcc],
                                           int tid) {
  const int lane = tid % 32;
  const int64_t n0 = tile * kBN + (tid / 128) * 64 + ((tid % 128) / 32) * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < kAcc / 4; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int token = 8 * j + 2 * (lane % 4) + (e & 1);
      if (token < p.m) p.y[token * p.ldy + n0 + (e >= 2 ? 8 : 0)] = __float2bfloat16(v[4 * j + e]);
    }
}

// What the threads of a block's two multiplying warpgroups share at the end of a piece.
struct PieceShared {
  int last;
  int64_t b0, b1;
};

// The end of block b's piece [piece_begin, it] of tile `tile`, run by the kThreads multiplying
// threads (tid < kThreads; `sync` synchronises exactly them): a whole tile is written; a piece goes
// to the block's slot (0: its first tile, 1: its last), and the last block of the tile to arrive
// (counted in k steps: blocks between b0 and b1 may have empty ranges when the grid is larger than
// the work) sums the pieces in block order, writes the tile and resets the counter.
template <class Sync>
__device__ void end_piece(const SkinnyParams& p, int64_t b, int64_t grid, int64_t first_tile,
                          int64_t tile, int64_t piece_begin, int64_t it, const float (&acc)[kAcc],
                          int tid, PieceShared& sh, Sync sync) {
  const int kI = p.k_iters;
  if (piece_begin == tile * kI && it + 1 == (tile + 1) * kI) {
    store_tile(p, tile, acc, tid);
    return;
  }
  float4* slot = reinterpret_cast<float4*>(p.partials) +
                 (b * 2 + (tile == first_tile ? 0 : 1)) * (kAcc / 4) * kThreads;
#pragma unroll
  for (int j = 0; j < kAcc / 4; ++j)
    slot[j * kThreads + tid] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
  __threadfence();
  sync();
  if (tid == 0) {
    const int mine = static_cast<int>(it + 1 - piece_begin);
    const int prev = atomicAdd(p.counters + tile, mine);
    sh.last = prev + mine == kI;
    if (sh.last) p.counters[tile] = 0;  // every piece has arrived: ready for the next launch
    sh.b0 = block_of(tile * kI, p.total, grid);
    sh.b1 = block_of((tile + 1) * kI - 1, p.total, grid);
  }
  sync();
  const bool last = sh.last;
  const int64_t b0 = sh.b0, b1 = sh.b1;
  sync();  // sh is read by everyone before the next piece's end rewrites it
  if (!last) return;
  __threadfence();
  float sum[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e) sum[e] = 0.0f;
  for (int64_t bb = b0; bb <= b1; ++bb) {
    const int64_t bb_lo = range_begin(bb, p.total, grid);
    if (bb_lo == range_begin(bb + 1, p.total, grid)) continue;  // an empty range
    const float4* src = reinterpret_cast<const float4*>(p.partials) +
                        (bb * 2 + (tile == bb_lo / kI ? 0 : 1)) * (kAcc / 4) * kThreads;
#pragma unroll
    for (int j = 0; j < kAcc / 4; ++j) {
      const float4 v = __ldcg(src + j * kThreads + tid);
      sum[4 * j] += v.x;
      sum[4 * j + 1] += v.y;
      sum[4 * j + 2] += v.z;
      sum[4 * j + 3] += v.w;
    }
  }
  store_tile(p, tile, sum, tid);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// acc += this warpgroup's 64 W rows x the 64 token rows over the BK k of the stage at `st`
// (w_off: the warpgroup's rows within each W panel); returns with the MMAs complete.
template <int BK>
__device__ __forceinline__ void multiply_stage(float (&acc)[kAcc], uint32_t st, uint32_t w_off) {
  using St = Stage<BK>;
  wgmma_group(acc, [&] {
#pragma unroll
    for (int s = 0; s < BK / 16; ++s)  // 16 k (32 bytes) per MMA, within a panel's swizzled rows
      wgmma_m64k16<64>(acc, smem_desc(st + (s / 4) * St::kWPanel + w_off + (s % 4) * 32),
                       smem_desc(st + St::kWBytes + (s / 4) * St::kXPanel + (s % 4) * 32));
  });
}
#endif

// A block's range of iterations [lo, lo + n_iters) and the piece of a tile being accumulated;
// after_stage() is called by the multiplying threads after each iteration's MMAs.
struct BlockWork {
  int64_t grid, b, lo;
  int n_iters;
  Cursor start;        // iteration lo
  Cursor cur;          // the iteration being multiplied
  int64_t piece_begin;  // first iteration of the current piece
  __device__ explicit BlockWork(const SkinnyParams& p)
      : grid(gridDim.x), b(blockIdx.x), lo(range_begin(b, p.total, grid)),
        n_iters(static_cast<int>(range_begin(b + 1, p.total, grid) - lo)),
        start{lo / p.k_iters, static_cast<int>(lo % p.k_iters)}, cur(start), piece_begin(lo) {}
  // At the end of a piece (its tile's last k step, or the range's): end_piece, then zeroed
  // accumulators; the range's last iteration also lets the next kernel be scheduled.
  template <class Sync>
  __device__ void after_stage(int i, float (&acc)[kAcc], const SkinnyParams& p, int tid, PieceShared& sh,
                              Sync sync) {
    const int64_t it = lo + i, tile = cur.tile;
    const bool tile_end = cur.k + 1 == p.k_iters;
    cur.next(p.k_iters);
    if (!tile_end && i + 1 != n_iters) return;  // the tile goes on in this block
    if (i + 1 == n_iters) pdl_launch_dependents();
    end_piece(p, b, grid, start.tile, tile, piece_begin, it, acc, tid, sh, sync);
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[e] = 0.0f;
    piece_begin = it + 1;
  }
};

template <int S, int BK>
__global__ void __launch_bounds__(kThreads, 1) skinny_gemm_kernel(const SkinnyParams p) {
  using St = Stage<BK>;
  // Stages in flight ahead of the one multiplied. (Keeping one wgmma group outstanding across
  // iterations, refilling the stage two back, measured 2-5% slower on the H200: docs/PERF.md.)
  constexpr int D = S - 1;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  __shared__ PieceShared sh;
  const uint32_t base = swizzle_base(smem_raw);
  const int tid = threadIdx.x;
  BlockWork work(p);
  const int n_iters = work.n_iters;
  const int kI = p.k_iters;

  // Stage copies (Stage::offset): this thread's chunks, consecutive threads along a row's k.
  int64_t w_src[St::kWChunks];
  uint32_t w_dst[St::kWChunks];
#pragma unroll
  for (int i = 0; i < St::kWChunks; ++i) {
    const int id = tid + i * kThreads, r = id / St::kChunksPerRow, c = id % St::kChunksPerRow;
    w_src[i] = r * p.k + c * 8;
    w_dst[i] = St::offset(r, c, kBN);
  }
  int64_t x_src[St::kXChunks];
  uint32_t x_dst[St::kXChunks];
  uint32_t x_bytes[St::kXChunks];  // 16, or 0 for token rows past M (zero-filled)
#pragma unroll
  for (int i = 0; i < St::kXChunks; ++i) {
    const int id = tid + i * kThreads, r = id / St::kChunksPerRow, c = id % St::kChunksPerRow;
    x_src[i] = (r < p.m ? r : 0) * p.ldx + c * 8;
    x_dst[i] = St::kWBytes + St::offset(r, c, kSkinnyMaxRows);
    x_bytes[i] = r < p.m ? 16 : 0;
  }
  auto load_w = [&](const Cursor& cur, int slot) {
    const bf16* src = p.w + cur.tile * kBN * p.k + cur.k * BK;
    const uint32_t dst = base + slot * St::kBytes;
#pragma unroll
    for (int i = 0; i < St::kWChunks; ++i) cp_async_16(dst + w_dst[i], src + w_src[i], 16);
  };
  auto load_x = [&](const Cursor& cur, int slot) {
    const bf16* src = p.x + cur.k * BK;
    const uint32_t dst = base + slot * St::kBytes;
#pragma unroll
    for (int i = 0; i < St::kXChunks; ++i) cp_async_16(dst + x_dst[i], src + x_src[i], x_bytes[i]);
  };

  Cursor ld = work.start;
#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < n_iters) load_w(ld, s);
    ld.next(kI);
  }
  pdl_wait();  // x comes from the previous kernel; y and the partials are written after this
  ld = work.start;
#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < n_iters) load_x(ld, s);
    ld.next(kI);
    cp_async_commit();
  }

  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
  const uint32_t w_off = (tid / 128) * (64 * 128);
  for (int i = 0; i < n_iters; ++i) {
    cp_async_wait<D - 1>();
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // cp.async writes -> wgmma reads
    // Every thread's copies of iteration i landed, and the MMAs that read the stage refilled next
    // (iteration i - 1's) are done.
    __syncthreads();
    if (i + D < n_iters) {
      load_w(ld, (i + D) % S);
      load_x(ld, (i + D) % S);
    }
    ld.next(kI);
    cp_async_commit();
    multiply_stage<BK>(acc, base + (i % S) * St::kBytes, w_off);
    work.after_stage(i, acc, p, tid, sh, [] { __syncthreads(); });
  }
  cp_async_wait<0>();
  if (n_iters == 0) pdl_launch_dependents();
#else
  pdl_wait();  // not built for this device: skinny_gemm_available() is false, never launched
#endif
}

// ------------------------------------------------------------------ TMA, warp-specialised variant
// One producer thread (of a third warpgroup) copies each stage's W and x panels with TMA
// (cp.async.bulk.tensor, 128-byte swizzle, out-of-range token rows zero-filled) into a ring of S
// stages tracked by mbarriers: full[s] (the copies' bytes landed) and empty[s] (the 256 multiplying
// threads are done with it). The two multiplying warpgroups only wait, multiply and release: no
// per-thread copies and no block-wide barrier per stage.
constexpr int kTmaThreads = kThreads + 128;

template <int S, int BK>
__global__ void __launch_bounds__(kTmaThreads, 1)
    skinny_tma_kernel(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
                      const SkinnyParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using St = Stage<BK>;
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full[S], empty[S];
  __shared__ PieceShared sh;
  const uint32_t base = swizzle_base(smem_raw);
  const int tid = threadIdx.x;
  BlockWork work(p);
  const int n_iters = work.n_iters;
  const int kI = p.k_iters;
  init_stage_barriers(full, empty, kThreads);
  __syncthreads();

  if (tid >= kThreads) {  // the producer warpgroup: one thread issues every copy
    if (tid == kThreads) {
      auto copy = [&](const Cursor& c, int slot, bool w_part) {
        const uint32_t st = base + slot * St::kBytes, bar = smem_addr(&full[slot]);
        for (int q = 0; q < St::kPanels; ++q) {
          const int k = c.k * BK + q * 64;
          if (w_part)
            tma_load(st + q * St::kWPanel, wmap, k, static_cast<int>(c.tile * kBN), bar);
          else
            tma_load(st + St::kWBytes + q * St::kXPanel, xmap, k, 0, bar);
        }
      };
      const int pre = n_iters < S ? n_iters : S;
      Cursor ld = work.start;
      for (int j = 0; j < pre; ++j) {  // W is immutable: its first stages before the wait
        mbar_expect_tx(smem_addr(&full[j]), St::kBytes);
        copy(ld, j, true);
        ld.next(kI);
      }
      pdl_wait();  // x comes from the previous kernel
      Cursor lx = work.start;
      for (int j = 0; j < pre; ++j) {
        copy(lx, j, false);
        lx.next(kI);
      }
      for (int j = pre; j < n_iters; ++j) {
        const int slot = j % S;
        mbar_wait(smem_addr(&empty[slot]), static_cast<uint32_t>((j / S - 1) & 1));
        mbar_expect_tx(smem_addr(&full[slot]), St::kBytes);
        copy(ld, slot, true);
        copy(ld, slot, false);
        ld.next(kI);
      }
    }
    return;
  }

  pdl_wait();  // y and the partials are written after the previous kernel completed
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
  const uint32_t w_off = (tid / 128) * (64 * 128);
  for (int i = 0; i < n_iters; ++i) {
    const int slot = i % S;
    mbar_wait(smem_addr(&full[slot]), static_cast<uint32_t>((i / S) & 1));
    multiply_stage<BK>(acc, base + slot * St::kBytes, w_off);
    mbar_arrive(smem_addr(&empty[slot]));
    work.after_stage(i, acc, p, tid, sh, [] { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); });
  }
  if (n_iters == 0) pdl_launch_dependents();
#else
  pdl_wait();  // not built for this device: skinny_gemm_available() is false, never launched
#endif
}

__global__ void skinny_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

std::array<std::atomic<int8_t>, kMaxDevices> g_available{};

// Whether `dev` runs this file's kernels: the probe reports the sm_90a build (on a device without
// an sm_90a image the launch fails with "no kernel image", which is an answer, not an error).
bool runs_skinny(int dev) {
  (void)dev;  // the current device
  int* d = nullptr;
  int h = 0;
  if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  skinny_probe_kernel<<<1, 1>>>(d);
  const bool ok = cudaGetLastError() == cudaSuccess &&
                  cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess && h == 1;
  cudaFree(d);
  (void)cudaGetLastError();
  return ok;
}


template <int S, int BK>
void launch_skinny_tma(const SkinnyParams& p, int64_t n, int grid, cudaStream_t stream) {
  constexpr size_t smem = size_t{S} * Stage<BK>::kBytes + 1024;
  allow_dynamic_smem<skinny_tma_kernel<S, BK>>(smem, "skinny_gemm (TMA)", 256);
  const CUtensorMap wmap = tensor_map(p.w, p.k, n, p.k, kBN);
  const CUtensorMap xmap = tensor_map(p.x, p.k, p.m, p.ldx, kSkinnyMaxRows);
  launch_kernel("skinny_gemm (TMA)", skinny_tma_kernel<S, BK>, dim3(grid), dim3(kTmaThreads), smem, stream,
                wmap, xmap, p);
}

template <int S, int BK>
void launch_skinny(const SkinnyParams& p, int grid, cudaStream_t stream) {
  constexpr size_t smem = size_t{S} * Stage<BK>::kBytes + 1024;  // + the 1024-byte alignment
  allow_dynamic_smem<skinny_gemm_kernel<S, BK>>(smem, "skinny_gemm", 64);
  launch_kernel("skinny_gemm", skinny_gemm_kernel<S, BK>, dim3(grid), dim3(kThreads), smem, stream, p);
}

}  // namespace

bool skinny_gemm_available() { return once_per_device(g_available, runs_skinny); }

size_t skinny_gemm_workspace_bytes(int32_t grid) {
  return static_cast<size_t>(grid) * 2 * kAcc * kThreads * sizeof(float) +
         static_cast<size_t>(kSkinnyMaxTiles) * sizeof(int32_t);
}

bool skinny_gemm_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return x.dt == Dt::BF16 && y.dt == Dt::BF16 && x.rows >= 1 && x.rows <= kSkinnyMaxRows &&
         y.rows >= x.rows && y.cols == n && x.cols == k && n > 0 && n % kBN == 0 &&
         n / kBN <= kSkinnyMaxTiles && k > 0 && k % 64 == 0 && x.stride % 8 == 0 &&
         aligned(x.data) && aligned(w);
}

void skinny_gemm(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, void* workspace,
                 int32_t grid, int32_t stages, int32_t k_tile, bool tma, cudaStream_t stream) {
  if (!skinny_gemm_supported(x, w, n, k, y) || grid < 1 || workspace == nullptr)
    unsupported_config("skinny_gemm: shape, dtype or alignment (check skinny_gemm_supported)");
  SkinnyParams p;
  p.x = static_cast<const bf16*>(x.data);
  p.ldx = x.stride;
  p.m = static_cast<int32_t>(x.rows);
  p.w = w;
  p.k = k;
  p.y = static_cast<bf16*>(y.data);
  p.ldy = y.stride;
  p.partials = static_cast<float*>(workspace);
  p.counters = reinterpret_cast<int32_t*>(static_cast<char*>(workspace) +
                                          static_cast<size_t>(grid) * 2 * kAcc * kThreads * sizeof(float));
  const bool wide = k_tile == 128 && k % 128 == 0;  // 128 k per stage (else 64)
  p.k_iters = static_cast<int32_t>(k / (wide ? 128 : 64));
  p.total = (n / kBN) * p.k_iters;
  if (tma) {
    if (wide) {
      if (stages <= 3)
        launch_skinny_tma<3, 128>(p, n, grid, stream);
      else
        launch_skinny_tma<4, 128>(p, n, grid, stream);
    } else if (stages <= 6) {
      launch_skinny_tma<6, 64>(p, n, grid, stream);
    } else {
      launch_skinny_tma<8, 64>(p, n, grid, stream);
    }
    return;
  }
  if (wide) {
    switch (stages) {
      case 2: launch_skinny<2, 128>(p, grid, stream); break;
      case 3: launch_skinny<3, 128>(p, grid, stream); break;
      default: launch_skinny<4, 128>(p, grid, stream); break;
    }
    return;
  }
  switch (stages) {
    case 4: launch_skinny<4, 64>(p, grid, stream); break;
    case 6: launch_skinny<6, 64>(p, grid, stream); break;
    default: launch_skinny<8, 64>(p, grid, stream); break;
  }
}

}  // namespace inferdesk::cuda
