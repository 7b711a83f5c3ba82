// Pure weight-streaming kernels for bench_gpu_kernels ("stream" lines; not part of the product):
// how fast can a kernel read a [rows, row_bytes] weight matrix from DRAM when each block walks it
// in tiles of R rows x B bytes per stage (the access pattern of a decode-batch GEMM that keeps R
// weight rows per tile), with and without an activation tile read beside each stage, against a
// flat register-streaming read. No arithmetic: the figures bound what any GEMM with that pattern
// can reach, and time(size) = overhead + size / bandwidth across the projection sizes separates a
// kernel's fixed cost from its streaming rate.
#include <cstdio>

#include "cuda/kernels/common.cuh"
#include "tests/gpu/kernels/bench_stream.h"

namespace inferdesk::cuda::bench {

namespace {

constexpr int kThreads = 256;
constexpr int kXRows = 64;  // activation rows read beside each stage (M = 64)

__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// Block b takes iterations [total * b / grid, total * (b + 1) / grid) of the (tile, k step) space,
// k steps innermost (a stream-K split); STAGES-deep cp.async ring, one barrier per stage.
template <int R, int B, bool X, int STAGES>
__global__ void __launch_bounds__(kThreads)
    stream_tiles(const char* __restrict__ w, int64_t pitch, int64_t tiles, int32_t k_steps, const char* __restrict__ x,
                 int64_t x_pitch, uint32_t* sink) {
  extern __shared__ __align__(128) char smem[];
  constexpr int kWChunks = R * B / 16, kXChunks = X ? kXRows * B / 16 : 0;
  constexpr int kStageBytes = (kWChunks + kXChunks) * 16;
  const int64_t total = tiles * k_steps;
  const int64_t begin = total * blockIdx.x / gridDim.x, end = total * (blockIdx.x + 1) / gridDim.x;
  int64_t tile = begin / k_steps;
  int32_t ks = static_cast<int32_t>(begin % k_steps);
  pdl_wait();
  const uint32_t base = smem_addr(smem);
  auto issue = [&](int slot) {
    const uint32_t dst = base + slot * kStageBytes;
    const char* src = w + tile * R * pitch + int64_t{ks} * B;
    for (int c = threadIdx.x; c < kWChunks; c += kThreads)
      cp16(dst + c * 16, src + (c / (B / 16)) * pitch + (c % (B / 16)) * 16);
    if constexpr (X) {
      const char* xs = x + int64_t{ks} * B;
      for (int c = threadIdx.x; c < kXChunks; c += kThreads)
        cp16(dst + (kWChunks + c) * 16, xs + (c / (B / 16)) * x_pitch + (c % (B / 16)) * 16);
    }
    if (++ks == k_steps) ks = 0, ++tile;
  };
  const int64_t n = end - begin;
  for (int p = 0; p < STAGES - 1; ++p) {
    if (p < n) issue(p);
    cp_async_commit();
  }
  uint32_t acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    acc ^= reinterpret_cast<const uint32_t*>(smem + (i % STAGES) * kStageBytes)[threadIdx.x];
    if (i + STAGES - 1 < n) issue(static_cast<int>((i + STAGES - 1) % STAGES));
    cp_async_commit();
  }
  pdl_launch_dependents();
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the reads observable
}

// Flat read through registers: every thread four 16-byte non-allocating loads per iteration.
__global__ void __launch_bounds__(kThreads) stream_flat(const uint4* __restrict__ w, int64_t n16, uint32_t* sink) {
  pdl_wait();
  uint32_t acc = 0;
  const int64_t stride = int64_t{gridDim.x} * kThreads;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n16; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t e = i + j * stride;
      if (e < n16)
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w)
                     : "l"(w + e));
      else
        v[j] = make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) acc ^= v[j].x ^ v[j].w;
  }
  pdl_launch_dependents();
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

struct Variant {
  const char* name;
  int rows, bytes;  // tile: rows x bytes per stage (0: flat)
  bool x;
  void (*kernel)(const char*, int64_t, int64_t, int32_t, const char*, int64_t, uint32_t*);
  int stages;
};

constexpr int kStages = 4, kXStages = 3;
const Variant kVariants[] = {
    {"tiles 256x128B", 256, 128, false, stream_tiles<256, 128, false, kStages>, kStages},
    {"tiles 128x256B", 128, 256, false, stream_tiles<128, 256, false, kStages>, kStages},
    {"tiles 64x512B", 64, 512, false, stream_tiles<64, 512, false, kStages>, kStages},
    {"tiles 32x1KB", 32, 1024, false, stream_tiles<32, 1024, false, kStages>, kStages},
    {"tiles 16x2KB", 16, 2048, false, stream_tiles<16, 2048, false, kStages>, kStages},
    {"tiles 8x4KB", 8, 4096, false, stream_tiles<8, 4096, false, kStages>, kStages},
    {"tiles 128x256B +x64", 128, 256, true, stream_tiles<128, 256, true, kXStages>, kXStages},
    {"tiles 64x512B +x64", 64, 512, true, stream_tiles<64, 512, true, kXStages>, kXStages},
    {"tiles 128x256B s6", 128, 256, false, stream_tiles<128, 256, false, 6>, 6},  // 192 KB per block
    {"flat ld.v4", 0, 0, false, nullptr, 0},
};

}  // namespace

int stream_variants() { return static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0])); }
const char* stream_variant_name(int v) { return kVariants[v].name; }

bool stream_read(int v, const void* w, int64_t rows, int64_t row_bytes, const void* x, int64_t x_pitch, uint32_t* sink,
                 int sms, const Launch& launch) {
  const Variant& var = kVariants[v];
  if (var.kernel == nullptr) {
    launch_kernel("stream_flat", stream_flat, dim3(static_cast<unsigned>(sms * 8)), dim3(kThreads), 0, launch,
                  static_cast<const uint4*>(w), rows * row_bytes / 16, sink);
    return true;
  }
  if (rows % var.rows != 0 || row_bytes % var.bytes != 0) return false;
  const size_t smem = static_cast<size_t>(var.stages) * (var.rows + (var.x ? kXRows : 0)) * var.bytes;
  if (cudaFuncSetAttribute(var.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  launch_kernel("stream_tiles", var.kernel, dim3(static_cast<unsigned>(sms)), dim3(kThreads), smem, launch,
                static_cast<const char*>(w), row_bytes, rows / var.rows, static_cast<int32_t>(row_bytes / var.bytes),
                static_cast<const char*>(x), x_pitch, sink);
  return true;
}

}  // namespace inferdesk::cuda::bench
