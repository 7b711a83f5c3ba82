// Hopper (sm_90a) building blocks shared by the GEMM kernels of this folder: shared-memory matrix
// descriptors for wgmma, mbarriers, TMA tile loads and the host-side tensor maps they read.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"

namespace inferdesk::cuda {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Shared-memory matrix descriptor of a K-major tile of 128-byte rows with the 128-byte swizzle:
// start address, leading byte offset 16 (unused by this layout), stride byte offset `sbo` between
// groups of eight rows (1024 when they follow each other; P x 1024 when P panels' groups alternate,
// tma_load_row_panels), swizzle mode 1.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t sbo = 1024) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (static_cast<uint64_t>(sbo >> 4) << 32) |
         (uint64_t{1} << 62);
}

// D (64 x N, F32: N / 2 registers a thread, the wgmma accumulator layout) += A (64 x 16) B (N x 16)^T,
// A and B K-major in shared memory (descriptors above); scale-d is a predicate that is always 1
// (accumulate: the accumulators are zeroed by hand). One specialisation per N in use.
template <int N>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], uint64_t da, uint64_t db);
template <>
__device__ __forceinline__ void wgmma_m64k16<16>(float (&d)[8], uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "l"(da), "l"(db), "n"(1));
}
template <>
__device__ __forceinline__ void wgmma_m64k16<24>(float (&d)[12], uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %14, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n24k16.f32.bf16.bf16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, %12, %13, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
               : "l"(da), "l"(db), "n"(1));
}
template <>
__device__ __forceinline__ void wgmma_m64k16<32>(float (&d)[16], uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(da), "l"(db), "n"(1));
}
template <>
__device__ __forceinline__ void wgmma_m64k16<48>(float (&d)[24], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n48k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, %24, %25, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
      : "l"(da), "l"(db), "n"(1));
}
template <>
__device__ __forceinline__ void wgmma_m64k16<64>(float (&d)[32], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "n"(1));
}
template <>
__device__ __forceinline__ void wgmma_m64k16<112>(float (&d)[56], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n112k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}, %56, %57, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
      : "l"(da), "l"(db), "n"(1));
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMAs.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// One group of asynchronous MMAs on acc: issue() launches them; returns once they completed (so
// the stage they read may be reused), with acc fenced on both sides.
template <int N, class Issue>
__device__ __forceinline__ void wgmma_group(float (&acc)[N], Issue issue) {
  fence_regs(acc);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  issue();
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  fence_regs(acc);
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// A stage ring's barriers, set up by thread 0 (the caller synchronises the block, or the cluster,
// before any copy may complete on them): full[s] completes once the producer's expect_tx bytes
// landed, empty[s] after `releases` arrivals of the multiplying threads.
template <int S>
__device__ __forceinline__ void init_stage_barriers(uint64_t (&full)[S], uint64_t (&empty)[S], int releases) {
  if (threadIdx.x != 0) return;
  for (int s = 0; s < S; ++s) {
    mbar_init(smem_addr(&full[s]), 1);
    mbar_init(smem_addr(&empty[s]), releases);
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}
// A 64-wide (128-byte) box of a 2-D tensor map at (k, row) into shared memory at dst.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap& map, int k, int row, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(k), "r"(row), "r"(bar)
      : "memory");
}
// The same with an L2 cache policy (l2_evict_first: data read once, such as streamed weights).
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap& map, int k, int row, uint32_t bar,
                                         uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(k), "r"(row), "r"(bar), "l"(policy)
      : "memory");
}
// P consecutive 64-wide panels of `rows` rows starting at (panel, row) of a tensor_map_row_panels
// map, as one 4-D box: each row's P x 128 bytes are requested together (one DRAM page visit instead
// of P), landing as [rows / 8][P][8][128 bytes] (eight-row groups of the P panels alternating).
__device__ __forceinline__ void tma_load_row_panels(uint32_t dst, const CUtensorMap& map, int panel, int row,
                                                    uint32_t bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(0), "r"(0), "r"(panel), "r"(row / 8), "r"(bar), "l"(policy)
      : "memory");
}
__device__ __forceinline__ uint64_t l2_evict_first() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
#endif

// The first 1024-byte boundary of the dynamic shared memory at `raw`: the 128-byte swizzle works
// on 1024-byte atoms, so every stage and panel starts on one.
__device__ __forceinline__ uint32_t swizzle_base(const void* raw) { return (smem_addr(raw) + 1023u) & ~1023u; }

// cuTensorMapEncodeTiled from the driver, through the runtime (no link against libcuda).
inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      f = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A rank-R BF16 tensor map with the 128-byte swizzle (dims innermost first, element strides 1,
// out-of-range elements read as zeros); `what` names the map in the error when the driver rejects it.
template <int R>
inline CUtensorMap encode_bf16_swizzled(const void* base, const cuuint64_t (&dims)[R],
                                        const cuuint64_t (&strides)[R - 1], const cuuint32_t (&box)[R],
                                        CUtensorMapL2promotion promotion, const char* what) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) unsupported_config("sm90a GEMM: cuTensorMapEncodeTiled is not available");
  CUtensorMap m{};
  cuuint32_t elem[R];
  for (int i = 0; i < R; ++i) elem[i] = 1;
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, R, const_cast<void*>(base), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promotion,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    unsupported_config(std::string("sm90a GEMM: ") + what + " rejected (" + std::to_string(r) + ")");
  return m;
}

// A BF16 [rows, inner] tensor (row pitch `pitch` elements) read in boxes of 64 x box_rows with the
// 128-byte swizzle; rows past the end read as zeros. `promote`: each L2 miss fetches 256 bytes
// (the next box of the same rows, for tensors read again soon) instead of the 128 asked for.
inline CUtensorMap tensor_map(const void* base, int64_t inner, int64_t rows, int64_t pitch, uint32_t box_rows,
                              bool promote = true) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitch) * sizeof(bf16)};
  const cuuint32_t box[2] = {64, box_rows};
  return encode_bf16_swizzled(base, dims, strides, box,
                              promote ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
                              "tensor map");
}

// The same BF16 [rows, inner] tensor (rows a multiple of 8, inner of 64) as [rows / 8][inner / 64]
// [8][64] for tma_load_row_panels: boxes of `panels` 64-wide panels x box_rows rows, the 128-byte
// swizzle, no L2 promotion (weights read once).
inline CUtensorMap tensor_map_row_panels(const void* base, int64_t inner, int64_t rows, int64_t pitch, uint32_t panels,
                                         uint32_t box_rows) {
  const cuuint64_t row_bytes = static_cast<cuuint64_t>(pitch) * sizeof(bf16);
  // Innermost first: 64 elements of a panel, 8 rows of a group, the panels, the groups.
  const cuuint64_t dims[4] = {64, 8, static_cast<cuuint64_t>(inner / 64), static_cast<cuuint64_t>(rows / 8)};
  const cuuint64_t strides[3] = {row_bytes, 128, 8 * row_bytes};
  const cuuint32_t box[4] = {64, 8, panels, box_rows / 8};
  return encode_bf16_swizzled(base, dims, strides, box, CU_TENSOR_MAP_L2_PROMOTION_NONE, "4-D tensor map");
}

}  // namespace inferdesk::cuda
