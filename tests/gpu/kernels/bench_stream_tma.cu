// TMA weight-streaming kernels for bench_gpu_kernels ("stream tma" lines; not part of the product):
// the weight stream of the wide decode GEMMs (cuda/kernels/sm90a/wide_gemm.cu) with nothing else in
// the kernel (no x, no MMA), in two memory layouts of the same bytes:
//   strided: W [n, k] row-major, a stage = P boxes of 64 k x R rows (R rows of 128 bytes, k x 2
//            bytes apart), as the GEMMs read it today;
//   packed:  the bytes a block reads per stage laid out contiguously (a stage = P x R x 128 bytes
//            in a row), as a weight layout pre-arranged at load time would give;
//   adjacent: W row-major, a stage = one 4-D box (hopper.cuh, tensor_map_row_panels) in which each
//            row's P panels are requested together, as the SwiGLU GEMM reads it.
// Block b streams tile b / splits over k half b % splits (the GEMMs' grid). Same ring depth, same
// boxes, same L2 policy (evict-first, no promotion) in every layout: the difference is DRAM locality.
// Built for sm_90a (the helpers of hopper.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/sm90a/hopper.cuh"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "tests/gpu/kernels/bench_stream.h"

namespace inferdesk::cuda::bench {

namespace {

constexpr int kMaxStages = 12;
constexpr int kRingBytes = 192 * 1024;  // the simple form's ring
constexpr int kGemmRing = 219 * 1024;   // the GEMMs' ring budget (wide_gemm.cu: 220 KB - 1 KB alignment)

// MODE 0: one thread waits for each stage and reissues its slot (128 threads);
// MODE 1: the GEMMs' protocol: 8 consumer warps wait for each stage and release it on an empty
//         barrier, a producer thread waits for the release before reissuing (384 threads);
// MODE 2: MODE 1 with the GEMMs' x panel (64 rows x 128 bytes per 64-k box, from an L2-resident
//         [64, k] tensor) beside the weights in each stage, the ring sized as the GEMMs' (fewer
//         weight bytes in flight).
template <int R, int P, int MODE>
struct TmaTile {
  static constexpr int kWBytes = P * R * 128;
  static constexpr int kXBytes = MODE == 2 ? P * 64 * 128 : 0;
  static constexpr int kStageBytes = kWBytes + kXBytes;
  static constexpr int kFit = (MODE == 2 ? kGemmRing : kRingBytes) / kStageBytes;
  static constexpr int kStages = kFit < kMaxStages ? kFit : kMaxStages;
  static constexpr int kThreads = MODE == 0 ? 128 : 384;
};

template <int R, int P, int MODE>
__global__ void __launch_bounds__(TmaTile<R, P, MODE>::kThreads, 1)
    stream_tma(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap xmap, int32_t steps,
               int32_t splits, int32_t packed, uint32_t* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = TmaTile<R, P, MODE>;
  constexpr int S = T::kStages;
  extern __shared__ uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full[S], empty[S];
  const uint32_t base = swizzle_base(smem_raw);
  init_stage_barriers(full, empty, 8);
  __syncthreads();
  pdl_wait();
  const int tile = static_cast<int>(blockIdx.x) / splits, split = static_cast<int>(blockIdx.x) % splits;
  auto slot = [&](int j) { return base + static_cast<uint32_t>(j % S) * T::kStageBytes; };
  auto issue = [&](int j, uint64_t once) {
    const uint32_t st = slot(j), bar = smem_addr(&full[j % S]);
    mbar_expect_tx(bar, T::kStageBytes);
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const int k = ((split * steps + j) * P + q) * 64;
      if (packed == 2) {  // one 4-D box of all P panels, each row's panels requested together
        if (q == 0) tma_load_row_panels(st + T::kXBytes, map, (split * steps + j) * P, tile * R, bar, once);
      } else if (packed)
        tma_load(st + T::kXBytes + q * R * 128, map, 0, ((static_cast<int>(blockIdx.x) * steps + j) * P + q) * R, bar,
                 once);
      else
        tma_load(st + T::kXBytes + q * R * 128, map, k, tile * R, bar, once);
      if constexpr (MODE == 2) tma_load(st + q * 64 * 128, xmap, k, 0, bar);
    }
  };
  auto first_word = [&](int j) {
    return *reinterpret_cast<const uint32_t*>(smem_raw + (slot(j) - smem_addr(smem_raw)));
  };
  uint32_t acc = 0;
  if constexpr (MODE == 0) {
    if (threadIdx.x == 0) {
      const uint64_t once = l2_evict_first();
      for (int j = 0; j < S && j < steps; ++j) issue(j, once);
      for (int j = 0; j < steps; ++j) {
        mbar_wait(smem_addr(&full[j % S]), static_cast<uint32_t>((j / S) & 1));
        acc ^= first_word(j);
        if (j + S < steps) issue(j + S, once);
      }
    }
  } else {
    if (threadIdx.x == 256) {  // the producer
      const uint64_t once = l2_evict_first();
      for (int j = 0; j < steps; ++j) {
        if (j >= S) mbar_wait(smem_addr(&empty[j % S]), static_cast<uint32_t>((j / S - 1) & 1));
        issue(j, once);
      }
    } else if (threadIdx.x < 256) {  // 8 consumer warps
      for (int j = 0; j < steps; ++j) {
        mbar_wait(smem_addr(&full[j % S]), static_cast<uint32_t>((j / S) & 1));
        acc ^= first_word(j);
        __syncwarp();
        if (threadIdx.x % 32 == 0) mbar_arrive(smem_addr(&empty[j % S]));
      }
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
  pdl_launch_dependents();
#else
  pdl_wait();
#endif
}

template <int R, int P, int MODE>
bool launch_tma(const void* w, const void* x, int64_t n, int64_t k, int splits, int packed, int sms, uint32_t* sink,
                const Launch& launch) {
  using T = TmaTile<R, P, MODE>;
  const int64_t tiles = n / R, blocks = tiles * splits;
  if (n % R != 0 || k % (64 * P * splits) != 0 || blocks > sms || (MODE == 2 && x == nullptr)) return false;
  const int32_t steps = static_cast<int32_t>(k / (64 * P * splits));
  const CUtensorMap map = packed == 2 ? tensor_map_row_panels(w, k, n, k, P, R)
                          : packed    ? tensor_map(w, 64, n * k / 64, 64, R, /*promote=*/false)
                                      : tensor_map(w, k, n, k, R, /*promote=*/false);
  const CUtensorMap xmap = tensor_map(MODE == 2 ? x : w, k, 64, k, 64);
  const size_t smem = size_t{T::kStages} * T::kStageBytes + 1024;
  allow_dynamic_smem<stream_tma<R, P, MODE>>(smem, "stream_tma", 2048);
  launch_kernel("stream_tma", stream_tma<R, P, MODE>, dim3(static_cast<unsigned>(blocks)), dim3(T::kThreads), smem,
                launch, map, xmap, steps, static_cast<int32_t>(splits), static_cast<int32_t>(packed), sink);
  return true;
}

template <int R, int P>
bool launch_mode(int mode, const void* w, const void* x, int64_t n, int64_t k, int splits, int packed, int sms,
                 uint32_t* sink, const Launch& launch) {
  if (mode == 0) return launch_tma<R, P, 0>(w, x, n, k, splits, packed, sms, sink, launch);
  if (mode == 1) return launch_tma<R, P, 1>(w, x, n, k, splits, packed, sms, sink, launch);
  return launch_tma<R, P, 2>(w, x, n, k, splits, packed, sms, sink, launch);
}

}  // namespace

bool stream_tma_read(int mode, int rows_per_tile, int panels, int splits, int packed, const void* w, const void* x,
                     int64_t n, int64_t k, uint32_t* sink, int sms, const Launch& launch) {
  if (!hopper_kernels_available() || mode < 0 || mode > 2) return false;
  if (rows_per_tile == 224 && panels == 1)
    return launch_mode<224, 1>(mode, w, x, n, k, splits, packed, sms, sink, launch);
  if (rows_per_tile == 224 && panels == 2)
    return launch_mode<224, 2>(mode, w, x, n, k, splits, packed, sms, sink, launch);
  if (rows_per_tile == 64 && panels == 2)
    return launch_mode<64, 2>(mode, w, x, n, k, splits, packed, sms, sink, launch);
  if (rows_per_tile == 96 && panels == 2)
    return launch_mode<96, 2>(mode, w, x, n, k, splits, packed, sms, sink, launch);
  return false;
}

}  // namespace inferdesk::cuda::bench
